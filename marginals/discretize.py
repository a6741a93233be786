"""`Discretizer`: a raw table -> integer codes over a `Domain`, and codes -> readable values.

Everything comes from a public, JSON-able spec (categories, bounds or bin edges, aliases,
options), never from the private rows. Levels of a column, in code order: the categories (or
bins), then ``"<other>"`` when ``unseen="other"``, then the missing level when
``missing="level"``. The transform report (clipped / other / missing counts) is computed from
the private rows: it is for the data holder and must not be published.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .dataset import DataError, Dataset, _example, code_dtype
from .domain import PRIVATE_MODE, AtomicOutputs, Domain, read_json, write_text_atomic

UNSEEN_OPTIONS = ("error", "other")
MISSING_OPTIONS = ("error", "level")
OTHER_LABEL = "<other>"
MISSING_LABEL = "<missing>"
_TOP_KEYS = {"columns", "unseen", "missing", "missing_markers", "note", "version"}
_COMMON_KEYS = {"type", "missing", "missing_markers", "note"}
_KEYS = {
    "categorical": _COMMON_KEYS | {"categories", "aliases", "unseen"},
    "numeric": _COMMON_KEYS | {"lo", "hi", "bins", "edges", "integer"},
}


class SpecError(ValueError):
    """Raised when a discretizer spec is invalid (the message names the column and the key)."""


def _key(value: Any) -> str:
    """The text a value is matched by: strings stripped, integral numbers without a decimal point."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else format(float(x), ".12g")


def _series_keys(s: pd.Series) -> np.ndarray:
    """The text of every value, stripped, vectorized (entries of missing values are meaningless)."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iuf":
        return s.to_numpy().astype(str).astype(object)
    return s.astype(str).str.strip().to_numpy(dtype=object)


def _integral_keys(keys: np.ndarray) -> np.ndarray:
    """Keys whose text is an integral number rewritten without a decimal point ("3.0" -> "3")."""
    num = pd.to_numeric(pd.Series(keys, dtype=object), errors="coerce").to_numpy(np.float64)
    whole = np.isfinite(num) & (num == np.round(num)) & (np.abs(num) < 2.0**53)
    out = keys.copy()
    out[whole] = num[whole].astype(np.int64).astype(str)
    return out


def _number(spec: Mapping, key: str, where: str) -> float:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecError(f"{where}: {key!r} must be a finite number, got {v!r}")
    return v


def _choice(spec: Mapping, key: str, allowed: tuple[str, ...], default: str, where: str) -> str:
    v = spec.get(key, default)
    if v not in allowed:
        raise SpecError(f"{where}: {key!r} must be one of {list(allowed)}, got {v!r}")
    return v


def _markers(value: Any, where: str) -> tuple[str, ...]:
    ok = isinstance(value, list) and all(isinstance(m, (str, int, float)) and not isinstance(m, bool) for m in value)
    if not ok:
        raise SpecError(f"{where}: 'missing_markers' must be a list of strings or numbers, got {value!r}")
    return tuple(_key(m) for m in value)


@dataclass(eq=False)
class _Column:
    """One compiled column: how raw values become codes and codes become values."""

    name: str
    kind: str
    values: list  # categories or bin labels, one per regular level
    markers: tuple[str, ...]
    other_code: int | None = None
    missing_code: int | None = None
    lookup: pd.Index | None = None  # categorical: accepted keys (categories, then alias keys)
    lookup_codes: np.ndarray | None = None
    edges: np.ndarray | None = None  # numeric
    integer: bool = False

    @property
    def size(self) -> int:
        return len(self.values) + (self.other_code is not None) + (self.missing_code is not None)

    def labels(self) -> list[str]:
        extra = [OTHER_LABEL] * (self.other_code is not None) + [MISSING_LABEL] * (self.missing_code is not None)
        return [str(v) for v in self.values] + extra

    def encode(self, s: pd.Series) -> tuple[np.ndarray, dict[str, int]]:
        """Codes of one raw column and its report counts; `DataError` when an option says so."""
        raw, missing = s.to_numpy(), s.isna().to_numpy().copy()
        if self.kind == "numeric" and s.dtype.kind in "iufb":
            vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
            nums = pd.to_numeric(pd.Series(self.markers, dtype=object), errors="coerce").dropna()
            missing |= np.isin(vals, nums.to_numpy(np.float64))
            codes, counts = self._bin(vals, missing)
        else:
            keys = _series_keys(s)
            if self.markers:
                missing |= np.isin(keys, self.markers)
            if self.kind == "numeric":
                vals = pd.to_numeric(pd.Series(np.where(missing, "nan", keys)), errors="coerce").to_numpy(np.float64)
                bad = np.isnan(vals) & ~missing
                if bad.any():
                    raise DataError(
                        f"column {self.name!r}: {int(bad.sum())} non-numeric value(s), {_example(bad, raw, s.index)}; "
                        "list them in \"missing_markers\" if they mean missing"
                    )
                codes, counts = self._bin(vals, missing)
            else:
                codes, counts = self._lookup(keys, missing, raw, s.index)
        if missing.any():
            if self.missing_code is None:
                raise DataError(
                    f"column {self.name!r}: {int(missing.sum())} missing value(s) (NaN/None or markers "
                    f"{list(self.markers)}), {_example(missing, raw, s.index)}; set \"missing\": \"level\" "
                    "in the spec to give them their own level"
                )
            codes[missing] = self.missing_code
        counts["missing"] = int(missing.sum())
        return codes.astype(code_dtype(self.size)), counts

    def _lookup(self, keys: np.ndarray, missing: np.ndarray, raw: np.ndarray, index: pd.Index) -> tuple:
        idx = self.lookup.get_indexer(keys)
        codes = np.where(idx >= 0, self.lookup_codes[idx], -1)
        unseen = (codes < 0) & ~missing
        if unseen.any():  # a second chance for numbers written as floats: 16.0 matches the category 16
            idx = self.lookup.get_indexer(_integral_keys(keys[unseen]))
            codes[unseen] = np.where(idx >= 0, self.lookup_codes[idx], -1)
            unseen = (codes < 0) & ~missing
        if unseen.any():
            if self.other_code is None:
                raise DataError(
                    f"column {self.name!r}: {int(unseen.sum())} value(s) not among the {len(self.values)} "
                    f"public categories, {_example(unseen, raw, index)}; add them to \"categories\" or "
                    "\"aliases\", or set \"unseen\": \"other\""
                )
            codes[unseen] = self.other_code
        return codes, {"other": int(unseen.sum())}

    def _bin(self, vals: np.ndarray, missing: np.ndarray) -> tuple[np.ndarray, dict]:
        lo, hi = self.edges[0], self.edges[-1]
        with np.errstate(invalid="ignore"):
            low, high = (vals < lo) & ~missing, (vals > hi) & ~missing
        inner = np.clip(np.where(missing, lo, vals), lo, hi)
        codes = np.searchsorted(self.edges[1:-1], inner, side="right")
        return codes, {"clipped_low": int(low.sum()), "clipped_high": int(high.sum())}


def _compile(name: str, spec: Any, defaults: dict) -> tuple[_Column, dict]:
    """Validate one column spec; return the compiled column and the spec as stored."""
    where = f"column {name!r}"
    if not isinstance(name, str) or not name:
        raise SpecError(f"column names must be non-empty strings, got {name!r}")
    if not isinstance(spec, Mapping):
        raise SpecError(f"{where}: the spec must be a JSON object, got {spec!r}")
    kind = spec.get("type")
    if kind not in _KEYS:
        raise SpecError(f"{where}: 'type' must be one of {sorted(_KEYS)}, got {kind!r}")
    unknown = sorted(set(spec) - _KEYS[kind])
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown} for a {kind} column; allowed: {sorted(_KEYS[kind])}")
    missing = _choice(spec, "missing", MISSING_OPTIONS, defaults["missing"], where)
    markers = _markers(spec.get("missing_markers", defaults["missing_markers"]), where)
    build = _categorical if kind == "categorical" else _numeric
    col = build(name, spec, where, markers, defaults)
    col.missing_code = len(col.values) + (col.other_code is not None) if missing == "level" else None
    return col, json.loads(json.dumps(dict(spec)))


def _categorical(name: str, spec: Mapping, where: str, markers: tuple, defaults: dict) -> _Column:
    cats = spec.get("categories")
    if not isinstance(cats, list) or not cats:
        raise SpecError(f"{where}: 'categories' must be a non-empty list, got {cats!r}")
    bad = [c for c in cats if isinstance(c, bool) or not isinstance(c, (str, int)) or not _key(c)]
    if bad:
        raise SpecError(f"{where}: categories must be non-empty strings or integers, e.g. not {bad[0]!r}")
    keys = [_key(c) for c in cats]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise SpecError(f"{where}: {len(dup)} duplicate categor(ies) {dup} (compared after stripping whitespace)")
    clash = [k for k in keys if k in markers]
    if clash:
        raise SpecError(f"{where}: category {clash[0]!r} is also a missing marker")
    unseen = _choice(spec, "unseen", UNSEEN_OPTIONS, defaults["unseen"], where)
    if unseen == "other" and OTHER_LABEL in keys:
        raise SpecError(f"{where}: {OTHER_LABEL!r} is reserved for the other level when unseen='other'")
    aliases = spec.get("aliases", {})
    if not isinstance(aliases, Mapping):
        raise SpecError(f"{where}: 'aliases' must be an object raw value -> category, got {aliases!r}")
    alias_keys, alias_codes = [], []
    for raw, target in aliases.items():
        k = _key(raw)
        if isinstance(target, bool) or not isinstance(target, (str, int)) or _key(target) not in keys:
            raise SpecError(f"{where}: alias {raw!r} -> {target!r}: the target is not one of the categories")
        if k in keys or k in markers or k in alias_keys:
            raise SpecError(f"{where}: alias {raw!r} is already a category, a missing marker or another alias")
        alias_keys.append(k)
        alias_codes.append(keys.index(_key(target)))
    lookup_codes = np.array(list(range(len(cats))) + alias_codes, dtype=np.int64)
    other = len(cats) if unseen == "other" else None
    lookup = pd.Index(keys + alias_keys, dtype=object)
    return _Column(name, "categorical", list(cats), markers, other, lookup=lookup, lookup_codes=lookup_codes)


def _numeric(name: str, spec: Mapping, where: str, markers: tuple, defaults: dict) -> _Column:
    if "edges" in spec:
        if any(k in spec for k in ("lo", "hi", "bins")):
            raise SpecError(f"{where}: give either 'edges' or 'lo'/'hi'/'bins', not both")
        raw = spec["edges"]
        if not isinstance(raw, list) or len(raw) < 2:
            raise SpecError(f"{where}: 'edges' must be a list of at least 2 numbers, got {raw!r}")
        edges = np.array([_number({"edge": e}, "edge", where) for e in raw], dtype=np.float64)
        step = np.diff(edges)
        if (step <= 0).any():
            i = int(np.flatnonzero(step <= 0)[0])
            a, b = _fmt(edges[i]), _fmt(edges[i + 1])
            what = f"duplicate edge {a}" if step[i] == 0 else f"{a} before {b}"
            raise SpecError(f"{where}: 'edges' must be sorted and distinct, got {what}")
    else:
        absent = [k for k in ("lo", "hi", "bins") if k not in spec]
        if absent:
            raise SpecError(f"{where}: a numeric column needs 'edges' or all of 'lo', 'hi', 'bins' (missing {absent})")
        lo, hi, bins = (_number(spec, k, where) for k in ("lo", "hi", "bins"))
        if lo >= hi:
            raise SpecError(f"{where}: 'lo' ({lo}) must be below 'hi' ({hi})")
        if not isinstance(bins, int) or bins < 1:
            raise SpecError(f"{where}: 'bins' must be an integer >= 1, got {bins!r}")
        edges = np.linspace(lo, hi, bins + 1)
    integer = spec.get("integer", False)
    if not isinstance(integer, bool):
        raise SpecError(f"{where}: 'integer' must be true or false, got {integer!r}")
    labels = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in zip(edges[:-1], edges[1:])]
    labels[-1] = labels[-1][:-1] + "]"  # the last bin is closed
    col = _Column(name, "numeric", labels, markers, edges=edges, integer=integer)
    if integer:
        low, high = _integer_range(edges)
        if (low > high).any():
            i = int(np.flatnonzero(low > high)[0])
            raise SpecError(f"{where}: bin {labels[i]} holds no integer but the column is marked \"integer\": true")
    return col


def _integer_range(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest integer of each bin ([a, b) bins, the last one [a, b])."""
    low = np.ceil(edges[:-1])
    high = np.ceil(edges[1:]) - 1
    high[-1] = np.floor(edges[-1])
    return low, high


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
            "unseen": _choice(spec, "unseen", UNSEEN_OPTIONS, "error", "spec"),
            "missing": _choice(spec, "missing", MISSING_OPTIONS, "error", "spec"),
            "missing_markers": list(_markers(spec.get("missing_markers", []), "spec")),
        }
        compiled = [_compile(name, col, defaults) for name, col in columns.items()]
        self._columns = tuple(c for c, _ in compiled)
        self._spec = {k: json.loads(json.dumps(v)) for k, v in spec.items() if k != "columns"}
        self._spec["columns"] = {c.name: s for c, s in compiled}
        self.domain = Domain(tuple(c.name for c in self._columns), tuple(c.size for c in self._columns))
        self.last_report: dict[str, Any] | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> "Discretizer":
        """Build from a JSON-able spec dict (validated; `SpecError` names the problem)."""
        return cls(spec)

    def to_spec(self) -> dict[str, Any]:
        """The spec as a JSON-able dict (a copy; ``from_spec(to_spec())`` gives an equal discretizer)."""
        return json.loads(json.dumps(self._spec))

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

    def transform_df(self, df: pd.DataFrame, extra: str = "error") -> pd.DataFrame:
        """Codes of ``df`` as a DataFrame in domain order (index kept); counts go to ``last_report``.

        ``extra="drop"`` ignores columns the spec does not name (by default they are an error).
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
        encoded = {col.name: col.encode(df[col.name]) for col in self._columns}
        counts = {name: c for name, (_, c) in encoded.items()}
        keys = ("clipped_low", "clipped_high", "other", "missing")
        total = {k: sum(c.get(k, 0) for c in counts.values()) for k in keys}
        self.last_report = {"rows": len(df), "clipped": total["clipped_low"] + total["clipped_high"],
                            "other": total["other"], "missing": total["missing"], "columns": counts}
        codes = {name: c for name, (c, _) in encoded.items()}
        return pd.DataFrame(codes, index=df.index)

    def transform(self, df: pd.DataFrame, extra: str = "error") -> Dataset:
        """``df`` as a validated `Dataset` over `domain` (see `transform_df`)."""
        return Dataset(self.transform_df(df, extra=extra), self.domain)

    def inverse_transform(self, codes: pd.DataFrame | Dataset, rng: np.random.Generator | None = None,
                          numeric: str = "interval", other_label: str = OTHER_LABEL,
                          missing_label: Any = np.nan) -> pd.DataFrame:
        """Readable values of coded rows: categories, ``other_label``, ``missing_label`` (NaN by default),
        and numeric bins as interval strings or (``numeric="uniform"``, needs ``rng``) values drawn
        uniformly inside their bin (integers for ``"integer": true`` columns)."""
        if numeric not in ("interval", "uniform"):
            raise ValueError(f"numeric must be 'interval' or 'uniform', got {numeric!r}")
        if numeric == "uniform" and not isinstance(rng, np.random.Generator):
            raise TypeError("numeric='uniform' needs an explicit numpy.random.Generator, e.g. np.random.default_rng(0)")
        if isinstance(codes, Dataset):
            if codes.domain != self.domain:
                raise DataError(f"the dataset's domain {codes.domain!r} differs from the discretizer's {self.domain!r}")
            ds, index = codes, pd.RangeIndex(len(codes))
        else:
            ds, index = Dataset(codes, self.domain), codes.index
        out = {}
        for col in self._columns:
            c = ds.column(col.name).astype(np.intp)
            if col.kind == "numeric" and numeric == "uniform":
                out[col.name] = self._sample(col, c, rng)
                continue
            extra = [other_label] * (col.other_code is not None) + [missing_label] * (col.missing_code is not None)
            out[col.name] = np.array(list(col.values) + extra, dtype=object)[c]
        return pd.DataFrame(out, index=index)

    @staticmethod
    def _sample(col: _Column, c: np.ndarray, rng: np.random.Generator) -> pd.Series | np.ndarray:
        missing = c == col.missing_code if col.missing_code is not None else np.zeros(len(c), dtype=bool)
        b = np.where(missing, 0, c)
        if col.integer:
            low, high = (e[b].astype(np.int64) for e in _integer_range(col.edges))
            return pd.arrays.IntegerArray(rng.integers(low, high, endpoint=True), missing)
        hi = col.edges[b + 1]
        vals = rng.uniform(col.edges[b], hi)
        last = b == len(col.edges) - 2  # the last bin is closed; the others exclude their upper edge
        return np.where(missing, np.nan, np.where(last, vals, np.minimum(vals, np.nextafter(hi, -np.inf))))

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
