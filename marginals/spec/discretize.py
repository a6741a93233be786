"""`Discretizer`: a raw table -> integer codes over a `Domain`, and codes -> readable values.

Everything comes from a public, JSON-able spec (categories, bounds or bin edges, aliases,
options), never from the private rows. Levels of a column, in code order: the categories (or
bins), then ``"<other>"`` when ``unseen="other"``, then the missing level when
``missing="level"`` (column compilation: `marginals.spec.columns`). The domain says which
columns are ordered (`marginals.Domain.ordinal`): each numeric column's bins, not its extra levels. The transform report
(clipped / other / missing / dropped counts) is computed from the private rows: it is for the
data holder and must not be published. The rows a spec leaves out ("drop" rules) are described by
public statements, `Discretizer.excluded` (recorded under the spec's ``"excluded"`` key). Its
optional ``"rules"`` (public: what cannot occur, `marginals.spec.rules`) compile to rules over codes,
`Discretizer.rules`, that a run keeps as structural zeros. Specs inferred from private rows under differential
privacy come from `marginals.spec.infer`; drafts from public information from `marginals.spec.public`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..dataset import DataError, Dataset
from ..domain import Domain
from ..files import PRIVATE_MODE, AtomicOutputs, read_json, write_text_atomic
from .rules import compile_spec_rules
from .columns import (
    MISSING_LABEL,
    MISSING_OPTIONS,
    NUMERIC_DECODINGS,
    OTHER_LABEL,
    UNSEEN_OPTIONS,
    SpecError,
    choice,
    compile_column,
    markers,
)

__all__ = ["Discretizer", "SpecError", "OTHER_LABEL", "MISSING_LABEL", "UNSEEN_OPTIONS", "MISSING_OPTIONS"]

_TOP_KEYS = {"columns", "unseen", "missing", "missing_markers", "note", "version", "excluded", "rules"}
#: the fields of one statement of a spec's ``"excluded"`` list (rows a "drop" rule leaves out).
EXCLUDED_FIELDS = ("column", "rule", "statement", "bound", "noisy_count")
EXCLUDED_RULES = ("missing", "unseen")


def _number_or_none(value: Any, kind: Any) -> bool:
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def _statement(item: Any) -> bool:
    """Whether ``item`` is one statement of an ``"excluded"`` list (see `Discretizer.excluded`)."""
    return (isinstance(item, Mapping) and set(item) == set(EXCLUDED_FIELDS) and isinstance(item["column"], str)
            and item["rule"] in EXCLUDED_RULES and isinstance(item["statement"], str)
            and _number_or_none(item["bound"], int) and _number_or_none(item["noisy_count"], (int, float)))


def rule_statements(columns: Any) -> list[dict[str, Any]]:
    """One statement per "drop" rule of compiled columns: which rows it leaves out, from the rule
    alone (their number is not released: it is private)."""
    out = []
    for col in columns:
        if col.drop_unseen:
            out.append({"column": col.name, "rule": "unseen", "bound": None, "noisy_count": None, "statement": (
                f"column {col.name!r}: rows whose value is not one of its {len(col.values)} categories are left "
                f"out (rule \"unseen\": \"drop\": the column has no {OTHER_LABEL} level); their number is not "
                "released")})
        if col.drop_missing:
            out.append({"column": col.name, "rule": "missing", "bound": None, "noisy_count": None, "statement": (
                f"column {col.name!r}: rows with a missing value are left out (rule \"missing\": \"drop\": the "
                "column has no missing level); their number is not released")})
    return out


def drop_causes(report: Mapping[str, Any]) -> str:
    """Why a transform left rows out, from its report: the columns and their "drop" rules (no count)."""
    causes = []
    for name, counts in report["columns"].items():
        if counts.get("dropped_unseen"):
            causes.append(f"column {name!r}: a category not in the spec, and the column has no {OTHER_LABEL} level "
                          "(rule \"unseen\": \"drop\")")
        if counts.get("dropped_missing"):
            causes.append(f"column {name!r}: a missing value, and the column has no missing level "
                          "(rule \"missing\": \"drop\")")
    return "; ".join(causes)


class Discretizer:
    """Turns a raw table into a `Dataset` over a public `Domain` built from a spec, and back.

    Example:
        >>> d = Discretizer.from_spec({"columns": {"age": {"type": "numeric", "lo": 0, "hi": 100, "bins": 4}}})
        >>> d.transform_df(pd.DataFrame({"age": [3, 50, 120]}))["age"].tolist(), d.last_report["clipped"]
        ([0, 2, 3], 1)
    """

    def __init__(self, spec: Mapping[str, Any]) -> None:
        if not isinstance(spec, Mapping):
            raise SpecError(f"a discretizer spec must be a JSON object, got {type(spec).__name__}")
        unknown = sorted(set(spec) - _TOP_KEYS)
        if unknown:
            raise SpecError(f"unknown top-level key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}")
        if spec.get("version", 1) != 1:
            raise SpecError(f"unsupported spec 'version' {spec['version']!r}; this engine reads version 1")
        columns = spec.get("columns")
        if not isinstance(columns, Mapping) or not columns:
            raise SpecError("the spec needs a non-empty 'columns' object: column name -> column spec")
        defaults = {
            "unseen": choice(spec, "unseen", UNSEEN_OPTIONS, "error", "spec"),
            "missing": choice(spec, "missing", MISSING_OPTIONS, "error", "spec"),
            "missing_markers": list(markers(spec.get("missing_markers", []), "spec")),
        }
        excluded = spec.get("excluded", [])
        if not isinstance(excluded, list) or not all(_statement(x) for x in excluded):
            raise SpecError(f"'excluded' must be a list of objects with the fields {list(EXCLUDED_FIELDS)} (rule one "
                            f"of {list(EXCLUDED_RULES)}, bound an integer or null, noisy_count a number or null)")
        compiled = [compile_column(name, col, defaults) for name, col in columns.items()]
        self._columns = tuple(c for c, _ in compiled)
        self._spec = {k: json.loads(json.dumps(v)) for k, v in spec.items() if k != "columns"}
        self._spec["columns"] = {c.name: s for c, s in compiled}
        # numeric columns are ordinal: their bins are ordered, the <other> / <missing> levels after them are not
        ordinal = {c.name: len(c.values) for c in self._columns if c.kind == "numeric" and c.values}
        self.domain = Domain(tuple(c.name for c in self._columns), tuple(c.size for c in self._columns), ordinal)
        #: the spec's public ``"rules"`` over codes (`marginals.rules`; raw form: `marginals.spec.rules`)
        self.rules = compile_spec_rules(self._columns, self.domain, spec.get("rules", []))
        self.last_report: dict[str, Any] | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> "Discretizer":
        """Build from a JSON-able spec dict (validated; `SpecError` names the problem)."""
        return cls(spec)

    def to_spec(self) -> dict[str, Any]:
        """The spec as a JSON-able dict (a copy; ``from_spec(to_spec())`` gives an equal discretizer)."""
        return json.loads(json.dumps(self._spec))

    def excluded(self) -> list[dict[str, Any]]:
        """Public statements about the rows the spec leaves out: its ``"excluded"`` list, then one per
        "drop" rule the list does not cover (fields: `EXCLUDED_FIELDS`; ``bound`` a high-probability
        upper bound on the rows or None, computed only from rules and released noisy counts)."""
        stored = [dict(x) for x in self._spec.get("excluded", [])]
        covered = {(x["column"], x["rule"]) for x in stored}
        return stored + [x for x in rule_statements(self._columns) if (x["column"], x["rule"]) not in covered]

    def with_exclusions(self) -> "Discretizer":
        """This spec with its `excluded` statements recorded under ``"excluded"`` (itself when nothing changes)."""
        excluded = self.excluded()
        return self if excluded == self._spec.get("excluded", []) else Discretizer({**self._spec, "excluded": excluded})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Discretizer":
        """Read a spec JSON file (errors name the file; a repeated key is refused)."""
        try:
            spec = read_json(path, "discretization spec")
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        try:
            return cls(spec)
        except SpecError as exc:
            raise SpecError(f"{path}: {exc}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the spec as JSON (atomic)."""
        write_text_atomic(path, json.dumps(self._spec, indent=2) + "\n")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discretizer) and self._spec == other._spec

    def __repr__(self) -> str:
        return f"Discretizer({self.domain!r})"

    def labels(self, column: str) -> list[str]:
        """Readable label of every code of ``column`` (categories, bin intervals, ``<other>``, ``<missing>``)."""
        return self._columns[self.domain.axes([column])[0]].labels()

    def column(self, name: str) -> Any:
        """The compiled column ``name`` (`marginals.spec.columns.Column`: its levels, edges, lookup)."""
        return self._columns[self.domain.axes([name])[0]]

    def transform_df(self, df: pd.DataFrame, extra: str = "error", show_private_values: bool = False) -> pd.DataFrame:
        """Codes of ``df`` as a DataFrame in domain order (index kept); counts go to ``last_report``.

        ``extra="drop"`` ignores columns the spec does not name (by default they are an error). Rows
        with a missing value in a ``"missing": "drop"`` column are left out (counted as ``dropped``).
        Cells are matched by their canonical key whatever the column's dtype (`marginals.cell_keys`).
        A rule's `DataError` names the column and the rule; ``show_private_values`` (the data
        holder's debug option) adds the count and an example value.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"transform expects a pandas DataFrame, got {type(df).__name__}")
        if extra not in ("error", "drop"):
            raise ValueError(f"extra must be 'error' or 'drop', got {extra!r}")
        names = [str(c) for c in df.columns]
        dup = sorted({c for c in names if names.count(c) > 1})
        absent = [a for a in self.domain.attrs if a not in names]
        unknown = [c for c in names if c not in self.domain] if extra == "error" else []
        parts = [f"duplicate column(s) {dup}"] * bool(dup)
        parts += [f"{len(absent)} spec column(s) missing from the table: {absent}"] * bool(absent)
        parts += [f"{len(unknown)} column(s) not in the spec: {unknown} (extra='drop' ignores them)"] * bool(unknown)
        if parts:
            raise DataError("; ".join(parts))
        df = df.set_axis(names, axis=1)
        encoded = {col.name: col.encode(df[col.name], show_private_values) for col in self._columns}
        counts = {name: c for name, (_, c, _) in encoded.items()}
        dropped = np.zeros(len(df), dtype=bool)
        for _, _, d in encoded.values():
            dropped |= d
        keys = ("clipped_low", "clipped_high", "other", "missing")
        total = {k: sum(c.get(k, 0) for c in counts.values()) for k in keys}
        self.last_report = {"rows": len(df), "clipped": total["clipped_low"] + total["clipped_high"],
                            "other": total["other"], "missing": total["missing"], "dropped": int(dropped.sum()),
                            "columns": counts}
        codes = pd.DataFrame({name: c for name, (c, _, _) in encoded.items()}, index=df.index)
        return codes[~dropped] if dropped.any() else codes

    def transform(self, df: pd.DataFrame, extra: str = "error", show_private_values: bool = False) -> Dataset:
        """``df`` as a validated `Dataset` over `domain` (see `transform_df`)."""
        return Dataset(self.transform_df(df, extra=extra, show_private_values=show_private_values), self.domain)

    def inverse_transform(self, codes: pd.DataFrame | Dataset, rng: np.random.Generator | None = None,
                          numeric: str = "interval", other_label: str = OTHER_LABEL,
                          missing_label: Any = np.nan, typed: bool = False) -> pd.DataFrame:
        """Readable values of coded rows: categories, ``other_label``, ``missing_label`` (NaN by default),
        and numeric bins as interval strings, bin midpoints (``numeric="midpoint"``) or values drawn
        inside their bin (``numeric="uniform"``, needs ``rng``: following the column's ``"density"``
        where it has one, `marginals.spec.density`, else uniformly); integers for ``"integer": true``
        columns. ``typed=True`` gives categorical columns (and interval labels) as `pandas.Categorical`
        with the spec's categories in order (plus ``other_label``), missing values as NaN."""
        if numeric not in NUMERIC_DECODINGS:
            raise ValueError(f"numeric must be 'midpoint', 'interval' or 'uniform', got {numeric!r}")
        if numeric == "uniform" and not isinstance(rng, np.random.Generator):
            raise TypeError("numeric='uniform' needs an explicit numpy.random.Generator, e.g. np.random.default_rng(0)")
        if isinstance(codes, Dataset):
            if codes.domain != self.domain:
                raise DataError(f"the dataset's domain {codes.domain!r} differs from the discretizer's {self.domain!r}")
            ds, index = codes, pd.RangeIndex(len(codes))
        else:
            ds, index = Dataset(codes, self.domain), codes.index
        out = {col.name: col.decode(ds.column(col.name).astype(np.intp), numeric, rng, other_label, missing_label, typed)
               for col in self._columns}
        return pd.DataFrame(out, index=index)

    def write(self, df: pd.DataFrame, folder: str | os.PathLike, name: str = "data.csv", extra: str = "error") -> dict:
        """Transform ``df`` and write ``domain.json``, the coded CSV ``name`` and the spec
        ``discretizer.json`` into ``folder``, all or nothing (if any part fails, none is written
        and a folder created for them is removed); return the (private) report. The coded CSV
        is derived from private rows: it is created ``0600`` (owner only), whatever the umask."""
        ds = self.transform(df, extra=extra)
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{folder}: exists and is not a folder")
        with AtomicOutputs() as out:
            write_text_atomic(out.stage(folder / name), ds.to_df().to_csv(index=False), mode=PRIVATE_MODE)
            self.domain.save(out.stage(folder / "domain.json"))
            self.save(out.stage(folder / "discretizer.json"))
        return self.last_report
