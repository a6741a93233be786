"""One column of a discretization spec: its validation, and how raw values become codes and back.

A column is ``categorical`` (a list of categories, optional aliases and an ``<other>`` level for
unseen values) or ``numeric`` (bin edges, or ``lo``/``hi``/``bins``; values outside are clipped
into the end bins). Raw values are matched by their canonical key (`series_keys`: a function of
the cell alone, see `marginals.cell_keys`). Missing values (blank, NA/NaN/None or a listed
marker) raise, get their own level (``"missing": "level"``) or drop their row (``"missing":
"drop"``); values outside the categories raise, go to ``<other>`` or drop their row the same way
(``"unseen"``). A numeric column with ``"non_numeric": "missing"`` treats text that is not a
number as missing instead of raising; its optional ``"density"`` (pieces [low, high, weight],
`marginals.spec.density`) shapes the values drawn inside each bin. A rule's error names the
column and the rule, never a private value or count (unless the data holder asks for them:
``show``).
`marginals.spec.discretize.Discretizer` assembles the columns into a domain.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..cell_keys import column_keys, key_numbers
from ..dataset import DataError, _example
from ..domain import code_dtype
from . import density as densities

UNSEEN_OPTIONS = ("error", "other", "drop")
MISSING_OPTIONS = ("error", "level", "drop")
NON_NUMERIC_OPTIONS = ("error", "missing")
NUMERIC_DECODINGS = ("midpoint", "interval", "uniform")
OTHER_LABEL = "<other>"
MISSING_LABEL = "<missing>"
_COMMON_KEYS = {"type", "missing", "missing_markers", "note"}
KEYS = {
    "categorical": _COMMON_KEYS | {"categories", "aliases", "unseen"},
    "numeric": _COMMON_KEYS | {"lo", "hi", "bins", "edges", "integer", "non_numeric", "density"},
}


class SpecError(ValueError):
    """Raised when a discretizer spec is invalid (the message names the column and the key)."""


def series_keys(s: pd.Series) -> np.ndarray:
    """The canonical key of every cell (object array, None where missing), a function of that cell
    alone whatever the column's dtype (`marginals.cell_keys`). Every raw value is keyed here: data
    in `Column.encode` and the spec inference, categories, aliases and markers of a spec."""
    return column_keys(s)


def value_key(value: Any) -> str | None:
    """The key of one value (see `series_keys`); None when it reads as missing."""
    return series_keys(pd.Series([value], dtype=object))[0]


def fmt_number(x: float) -> str:
    """A number as short text: integral values without a decimal point, others to 12 digits."""
    return str(int(x)) if float(x).is_integer() else format(float(x), ".12g")


def rule_error(head: str, tail: str, mask: np.ndarray, s: pd.Series, show: bool) -> DataError:
    """A spec rule's `DataError`: ``head`` and ``tail`` name the column and the rule, never a private
    value or count (issue 23); the count and the first flagged value with its row go to ``.detail``
    (printed by ``--show-private-values``) and, with ``show`` (the data holder's option), into the
    message as well."""
    detail = f"{int(mask.sum())} row(s), {_example(mask, s.to_numpy(), s.index)}"
    shown = f" [private, shown on request: {detail}]" if show else ""
    return DataError(f"{head}{shown}{tail}", detail=f"{head}: {detail}")


def _number(spec: Mapping, key: str, where: str) -> float:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecError(f"{where}: {key!r} must be a finite number, got {v!r}")
    return v


def choice(spec: Mapping, key: str, allowed: tuple[str, ...], default: str, where: str) -> str:
    """``spec[key]`` (or ``default``) after checking it is one of ``allowed``."""
    v = spec.get(key, default)
    if v not in allowed:
        raise SpecError(f"{where}: {key!r} must be one of {list(allowed)}, got {v!r}")
    return v


def markers(value: Any, where: str) -> tuple[str, ...]:
    """Missing markers as keys (a list of strings or numbers; those that read as missing anyway left out)."""
    ok = isinstance(value, list) and all(isinstance(m, (str, int, float)) and not isinstance(m, bool) for m in value)
    if not ok:
        raise SpecError(f"{where}: 'missing_markers' must be a list of strings or numbers, got {value!r}")
    keys = series_keys(pd.Series(value, dtype=object)) if value else []
    return tuple(dict.fromkeys(k for k in keys if k is not None))


@dataclass(eq=False)
class Column:
    """One compiled column: how raw values become codes and codes become values."""

    name: str
    kind: str
    values: list  # categories or bin labels, one per regular level
    markers: tuple[str, ...]
    other_code: int | None = None
    missing_code: int | None = None
    drop_missing: bool = False
    drop_unseen: bool = False
    lookup: pd.Index | None = None  # categorical: accepted keys (categories, then alias keys)
    lookup_codes: np.ndarray | None = None
    edges: np.ndarray | None = None  # numeric
    integer: bool = False
    text_is_missing: bool = False
    density: np.ndarray | None = None  # numeric: pieces (low, high, weight), see `marginals.spec.density`

    @property
    def size(self) -> int:
        return len(self.values) + (self.other_code is not None) + (self.missing_code is not None)

    def labels(self) -> list[str]:
        extra = [OTHER_LABEL] * (self.other_code is not None) + [MISSING_LABEL] * (self.missing_code is not None)
        return [str(v) for v in self.values] + extra

    def encode(self, s: pd.Series, show: bool = False) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
        """Codes of one raw column, its report counts (with ``dropped_unseen`` / ``dropped_missing``
        under a "drop" rule) and the rows to drop; `DataError` when a rule says "error" (naming the
        column and the rule; values and counts only with ``show``)."""
        keys = series_keys(s)
        missing = pd.isna(keys)
        if self.markers:
            missing |= pd.Series(keys, dtype=object).isin(list(self.markers)).to_numpy()
        dropped = np.zeros(len(s), dtype=bool)
        if self.kind == "numeric":
            vals = key_numbers(np.where(missing, None, keys))
            bad = np.isnan(vals) & ~missing
            if bad.any() and not self.text_is_missing:
                raise rule_error(f"column {self.name!r}: non-numeric text, under the rule \"non_numeric\": \"error\"",
                                 "; list such values in \"missing_markers\" if they mean missing (or set "
                                 "\"non_numeric\": \"missing\")", bad, s, show)  # fmt: skip
            missing |= bad
            codes, counts = self._bin(vals, missing)
        else:
            codes, counts, dropped = self._lookup(keys, missing, s, show)
        if self.drop_unseen:
            counts["dropped_unseen"] = int(dropped.sum())
        if self.drop_missing:
            counts["dropped_missing"] = int(missing.sum())
            dropped |= missing
        elif missing.any():
            if self.missing_code is None:
                raise rule_error(f"column {self.name!r}: missing value(s) (blank, NA/NaN/None or markers "
                                 f"{list(self.markers)}), under the rule \"missing\": \"error\"",
                                 "; set \"missing\": \"level\" (or \"drop\") in the spec to give them their own level "
                                 "(or leave their rows out)", missing, s, show)  # fmt: skip
            codes[missing] = self.missing_code
        codes[dropped] = 0
        counts["missing"] = int(missing.sum())
        return codes.astype(code_dtype(self.size)), counts, dropped

    def _lookup(self, keys: np.ndarray, missing: np.ndarray, s: pd.Series, show: bool) -> tuple:
        idx = self.lookup.get_indexer(keys)
        codes = np.where(idx >= 0, self.lookup_codes[idx], -1)
        unseen = (codes < 0) & ~missing
        if unseen.any() and not self.drop_unseen:
            if self.other_code is None:
                raise rule_error(f"column {self.name!r}: value(s) outside the {len(self.values)} public categories, "
                                 "under the rule \"unseen\": \"error\"", "; add them to \"categories\" or \"aliases\", "
                                 "or set \"unseen\": \"other\" (or \"drop\")", unseen, s, show)  # fmt: skip
            codes[unseen] = self.other_code
        return codes, {"other": int(unseen.sum())}, unseen if self.drop_unseen else np.zeros(len(keys), dtype=bool)

    def _bin(self, vals: np.ndarray, missing: np.ndarray) -> tuple[np.ndarray, dict]:
        lo, hi = self.edges[0], self.edges[-1]
        with np.errstate(invalid="ignore"):
            low, high = (vals < lo) & ~missing, (vals > hi) & ~missing
        inner = np.clip(np.where(missing, lo, vals), lo, hi)
        codes = np.searchsorted(self.edges[1:-1], inner, side="right")
        return codes, {"clipped_low": int(low.sum()), "clipped_high": int(high.sum())}

    def decode(self, codes: np.ndarray, numeric: str, rng: np.random.Generator | None,
               other_label: Any, missing_label: Any, typed: bool) -> Any:
        """Values of valid codes: categories (a `pandas.Categorical` when ``typed``), bin intervals,
        bin midpoints or draws inside the bins (following the density, if any; see `Discretizer.inverse_transform`)."""
        if self.kind == "numeric" and numeric != "interval":
            return self._sample(codes, rng) if numeric == "uniform" else self._midpoint(codes)
        extra = [other_label] * (self.other_code is not None) + [missing_label] * (self.missing_code is not None)
        if not typed:
            return np.array(list(self.values) + extra, dtype=object)[codes]
        categories = list(self.values) + [other_label] * (self.other_code is not None)
        valid = codes != self.missing_code if self.missing_code is not None else np.ones(len(codes), dtype=bool)
        return pd.Categorical.from_codes(np.where(valid, codes, -1), categories=categories,
                                         ordered=self.kind == "numeric")

    def _integers(self, values: np.ndarray, missing: np.ndarray) -> pd.arrays.IntegerArray | np.ndarray:
        """Nullable Int64 when the column has a missing level, plain int64 otherwise."""
        return values if self.missing_code is None else pd.arrays.IntegerArray(values, missing)

    def _missing(self, c: np.ndarray) -> np.ndarray:
        return c == self.missing_code if self.missing_code is not None else np.zeros(len(c), dtype=bool)

    def _sample(self, c: np.ndarray, rng: np.random.Generator) -> pd.arrays.IntegerArray | np.ndarray:
        missing = self._missing(c)
        b = np.where(missing, 0, c)
        if self.integer:
            low, high = (e[b].astype(np.int64) for e in integer_range(self.edges))
            vals = rng.integers(low, high, endpoint=True)
        else:
            hi = self.edges[b + 1]
            vals = rng.uniform(self.edges[b], hi)
            last = b == len(self.edges) - 2  # the last bin is closed; the others exclude their upper edge
            vals = np.where(last, vals, np.minimum(vals, np.nextafter(hi, -np.inf)))
        if self.density is not None:  # inside the bins the density covers, follow it
            bounds = integer_range(self.edges) if self.integer else (self.edges[:-1], self.edges[1:])
            shaped, drawn = densities.draw(self.density, self.integer, *bounds, b, rng)
            vals = np.where(drawn, shaped, vals).astype(vals.dtype)
        if self.integer:
            return self._integers(vals, missing)
        return np.where(missing, np.nan, vals)

    def _midpoint(self, c: np.ndarray) -> pd.arrays.IntegerArray | np.ndarray:
        missing = self._missing(c)
        b = np.where(missing, 0, c)
        if self.integer:
            low, high = (e[b].astype(np.int64) for e in integer_range(self.edges))
            return self._integers((low + high) // 2, missing)
        return np.where(missing, np.nan, (self.edges[b] + self.edges[b + 1]) / 2)


def compile_column(name: str, spec: Any, defaults: dict) -> tuple[Column, dict]:
    """Validate one column spec; return the compiled column and the spec as stored."""
    where = f"column {name!r}"
    if not isinstance(name, str) or not name:
        raise SpecError(f"column names must be non-empty strings, got {name!r}")
    if not isinstance(spec, Mapping):
        raise SpecError(f"{where}: the spec must be a JSON object, got {spec!r}")
    kind = spec.get("type")
    if kind not in KEYS:
        raise SpecError(f"{where}: 'type' must be one of {sorted(KEYS)}, got {kind!r}")
    unknown = sorted(set(spec) - KEYS[kind])
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown} for a {kind} column; allowed: {sorted(KEYS[kind])}")
    missing = choice(spec, "missing", MISSING_OPTIONS, defaults["missing"], where)
    marks = markers(spec.get("missing_markers", defaults["missing_markers"]), where)
    build = _categorical if kind == "categorical" else _numeric
    col = build(name, spec, where, marks, defaults)
    col.missing_code = len(col.values) + (col.other_code is not None) if missing == "level" else None
    col.drop_missing = missing == "drop"
    return col, json.loads(json.dumps(dict(spec)))


def _categorical(name: str, spec: Mapping, where: str, marks: tuple, defaults: dict) -> Column:
    cats = spec.get("categories")
    if not isinstance(cats, list) or not cats:
        raise SpecError(f"{where}: 'categories' must be a non-empty list, got {cats!r}")
    keys = list(series_keys(pd.Series(cats, dtype=object)))
    bad = [c for c, k in zip(cats, keys) if isinstance(c, bool) or not isinstance(c, (str, int)) or k is None]
    if bad:
        raise SpecError(f"{where}: categories must be non-empty strings or integers (not text read as missing: "
                        f"blank, NA, null, ...), e.g. not {bad[0]!r}")
    position = {k: i for i, k in enumerate(keys)}  # sets and dicts: a crafted file may list millions
    dup = sorted(k for k, n in Counter(keys).items() if n > 1)
    if dup:
        raise SpecError(f"{where}: {len(dup)} duplicate categor(ies) {dup} (compared by key: stripped, numbers by "
                        "value, true/false in any case)")
    clash = [m for m in marks if m in position]
    if clash:
        raise SpecError(f"{where}: category {clash[0]!r} is also a missing marker")
    unseen = choice(spec, "unseen", UNSEEN_OPTIONS, defaults["unseen"], where)
    if unseen == "other" and OTHER_LABEL in position:
        raise SpecError(f"{where}: {OTHER_LABEL!r} is reserved for the other level when unseen='other'")
    aliases = spec.get("aliases", {})
    if not isinstance(aliases, Mapping):
        raise SpecError(f"{where}: 'aliases' must be an object raw value -> category, got {aliases!r}")
    alias_keys, alias_codes = [], []
    seen = set(marks)
    alias_of = dict(zip(aliases, series_keys(pd.Series(list(aliases), dtype=object)))) if aliases else {}
    for raw, target in aliases.items():
        k = alias_of[raw]
        if isinstance(target, bool) or not isinstance(target, (str, int)) or value_key(target) not in position:
            raise SpecError(f"{where}: alias {raw!r} -> {target!r}: the target is not one of the categories")
        if k is None or k in position or k in seen:
            raise SpecError(f"{where}: alias {raw!r} is already a category, a missing marker or another alias")
        seen.add(k)
        alias_keys.append(k)
        alias_codes.append(position[value_key(target)])
    lookup_codes = np.array(list(range(len(cats))) + alias_codes, dtype=np.int64)
    other = len(cats) if unseen == "other" else None
    lookup = pd.Index(keys + alias_keys, dtype=object)
    return Column(name, "categorical", list(cats), marks, other, lookup=lookup, lookup_codes=lookup_codes,
                  drop_unseen=unseen == "drop")


def _edges(spec: Mapping, where: str) -> np.ndarray:
    """The bin edges of a numeric column spec: its 'edges', or 'bins' equal bins on ['lo', 'hi']."""
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
            a, b = fmt_number(edges[i]), fmt_number(edges[i + 1])
            what = f"duplicate edge {a}" if step[i] == 0 else f"{a} before {b}"
            raise SpecError(f"{where}: 'edges' must be sorted and distinct, got {what}")
        return edges
    absent = [k for k in ("lo", "hi", "bins") if k not in spec]
    if absent:
        raise SpecError(f"{where}: a numeric column needs 'edges' or all of 'lo', 'hi', 'bins' (missing {absent})")
    lo, hi, bins = (_number(spec, k, where) for k in ("lo", "hi", "bins"))
    if lo >= hi:
        raise SpecError(f"{where}: 'lo' ({lo}) must be below 'hi' ({hi})")
    if not isinstance(bins, int) or bins < 1:
        raise SpecError(f"{where}: 'bins' must be an integer >= 1, got {bins!r}")
    return np.linspace(lo, hi, bins + 1)


def _numeric(name: str, spec: Mapping, where: str, marks: tuple, defaults: dict) -> Column:
    edges = _edges(spec, where)
    integer = spec.get("integer", False)
    if not isinstance(integer, bool):
        raise SpecError(f"{where}: 'integer' must be true or false, got {integer!r}")
    text = choice(spec, "non_numeric", NON_NUMERIC_OPTIONS, "error", where)
    labels = [f"[{fmt_number(a)}, {fmt_number(b)})" for a, b in zip(edges[:-1], edges[1:])]
    labels[-1] = labels[-1][:-1] + "]"  # the last bin is closed
    col = Column(name, "numeric", labels, marks, edges=edges, integer=integer, text_is_missing=text == "missing",
                 density=_density(spec, edges, integer, where))
    if integer:
        low, high = integer_range(edges)
        if (low > high).any():
            i = int(np.flatnonzero(low > high)[0])
            raise SpecError(f"{where}: bin {labels[i]} holds no integer but the column is marked \"integer\": true")
    return col


def _density(spec: Mapping, edges: np.ndarray, integer: bool, where: str) -> np.ndarray | None:
    """The optional 'density': pieces [low, high, weight] inside the edges (integers in an integer column)."""
    raw = spec.get("density")
    if raw is None:
        return None
    ok = isinstance(raw, list) and raw and all(isinstance(p, list) and len(p) == 3 for p in raw)
    if not ok:
        raise SpecError(f"{where}: 'density' must be a non-empty list of [low, high, weight], got {raw!r}")
    pieces = np.array([[_number({"density": v}, "density", where) for v in p] for p in raw], dtype=np.float64)
    bad = ((pieces[:, 0] > pieces[:, 1]) | (pieces[:, 2] < 0) | (pieces[:, 0] < edges[0]) | (pieces[:, 1] > edges[-1])
           | (integer & (pieces[:, :2] != np.round(pieces[:, :2])).any(axis=1)))
    if bad.any() or pieces[:, 2].sum() <= 0:
        raise SpecError(f"{where}: 'density' pieces need low <= high inside the edges (integers when \"integer\": "
                        f"true) and weights >= 0, not all 0; got {raw[int(np.argmax(bad))]!r}")
    return pieces


def integer_range(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest integer of each bin ([a, b) bins, the last one [a, b])."""
    low = np.ceil(edges[:-1])
    high = np.ceil(edges[1:]) - 1
    high[-1] = np.floor(edges[-1])
    return low, high
