"""Conditional synthetic rows of a release: readable evidence -> weights on codes -> rows -> values.

`Release.synthetic_data(n, given=...)` lands here; the sampling itself is `pgm.conditional`.
With a spec (and ``decode`` not False) the evidence is in readable values, mapped through the
release's `marginals.Discretizer`:

- a categorical column takes a category (an alias reads as its category; ``"<other>"`` names the
  other level, None/NaN the missing level where the column has them) or a list/set/tuple of them;
- a numeric column takes one number (its bin; the decoded value is that number), None/NaN (the
  missing level), or a range ``(lo, hi)``, closed at both ends, either end None for open. A range
  weights each bin by the share of the bin's within-bin distribution (the one ``numeric="uniform"``
  decodes with: uniform, the integers of an integer column, or the column's density) that lies
  in the range: a bin inside counts fully, one the range cuts partly, one outside not at all.
  That is exact conditioning of the model-plus-decoding distribution of raw values on the
  range, and the values decoded in a cut bin are drawn from that distribution restricted to the
  range (``numeric="midpoint"``: the midpoint of the bin's part in the range; ``"interval"``
  labels are the bins').

Without a spec (or ``decode=False``) the evidence is codes (`pgm.conditional.code_weights`).

``given`` as a DataFrame: one row per given row; NaN (or None, blank, a missing marker) marks
a cell to draw, so the missing level itself cannot be given this way. Categorical cells come
back as their category, numeric ones as the number given (binned to condition the model,
clipped into the end bins as the spec's transform clips them; with ``numeric="interval"`` as
their bin's label, like every other numeric cell). Unknown columns and values are
errors naming the column.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from marginals.limits import check_synthetic_size
from marginals.randomness import SamplingSeed, sampling_rng
from marginals.spec.columns import OTHER_LABEL, integer_range, series_keys
from marginals.spec.density import _within, draw
from marginals.spec.discretize import Discretizer
from pgm.conditional import code_weights, condition


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _category_codes(col, name: str, values: list) -> list[int]:
    """Codes of categorical ``values`` (categories, aliases, ``<other>``, None/NaN for missing)."""
    keys = series_keys(pd.Series(values, dtype=object))
    idx = col.lookup.get_indexer(keys)
    codes = []
    for value, key, i in zip(values, keys, idx):
        if i >= 0:
            codes.append(int(col.lookup_codes[i]))
        elif value == OTHER_LABEL and col.other_code is not None:
            codes.append(col.other_code)
        elif key is None and col.missing_code is not None and _missing(value):
            codes.append(col.missing_code)
        else:
            shown = ", ".join(repr(v) for v in col.values[:8]) + (", ..." if len(col.values) > 8 else "")
            raise ValueError(f"given[{name!r}]: {value!r} is not a level of {name!r} (categories: {shown})")
    return codes


def _bounds(col) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's span: its smallest and largest integer (integer columns) or its edges."""
    return integer_range(col.edges) if col.integer else (col.edges[:-1], col.edges[1:])


def _clipped(col, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's span cut to the closed range [lo, hi] (empty where low > high)."""
    low, high = _bounds(col)
    if col.integer:
        return np.maximum(low, math.ceil(lo)), np.minimum(high, math.floor(hi))
    return np.maximum(low, lo), np.minimum(high, hi)


def _share(pieces: np.ndarray, integer: bool, low: float, high: float, cut: tuple[float, float], closed: bool) -> float:
    """The share of the pieces' weight inside the bin [low, high] that lies in ``cut`` (NaN: none there)."""
    span, weight = _within(pieces, integer, low, high, closed)
    keep = weight > 0
    if not keep.any():
        return math.nan
    inside = np.column_stack([span[keep], weight[keep]])
    if cut[0] > cut[1]:
        return 0.0
    return float(_within(inside, integer, cut[0], cut[1], True)[1].sum() / weight[keep].sum())


def range_weights(col, lo: float, hi: float) -> np.ndarray:
    """Per level of a numeric column: the share of its within-bin distribution in [lo, hi] (0 for
    the extra levels): the column's density where it covers the bin, else uniform."""
    low, high = _bounds(col)
    rl, rh = _clipped(col, lo, hi)
    uniform = np.array([[low[0], high[-1], 1.0]])
    weights = np.zeros(col.size)
    last = len(low) - 1
    for b in range(len(low)):
        share = math.nan
        if col.density is not None:
            share = _share(col.density, col.integer, low[b], high[b], (rl[b], rh[b]), b == last)
        if math.isnan(share):
            share = _share(uniform, col.integer, low[b], high[b], (rl[b], rh[b]), b == last)
        weights[b] = 0.0 if math.isnan(share) else share
    return weights


def _numeric_evidence(col, name: str, value: Any) -> tuple[np.ndarray, tuple | None]:
    """(weights, what the decoded values obey: ("range", lo, hi), ("point", v) or None)."""
    weights = np.zeros(col.size)
    if isinstance(value, tuple):
        if len(value) != 2 or any(not _missing(v) and not _is_number(v) for v in value):
            raise ValueError(f"given[{name!r}]: a range is a tuple (lo, hi) of numbers or None, got {value!r}")
        lo = -math.inf if _missing(value[0]) else float(value[0])
        hi = math.inf if _missing(value[1]) else float(value[1])
        if lo > hi:
            raise ValueError(f"given[{name!r}]: the range ({lo}, {hi}) is empty (lo > hi)")
        return range_weights(col, lo, hi), ("range", lo, hi)
    if _missing(value):
        if col.missing_code is None:
            raise ValueError(f"given[{name!r}]: the column has no missing level")
        weights[col.missing_code] = 1.0
        return weights, None
    if not _is_number(value):
        raise ValueError(f"given[{name!r}]: a numeric column takes a number, a range (lo, hi) or None; got {value!r}")
    v, (lo, hi) = float(value), (col.edges[0], col.edges[-1])
    if not lo <= v <= hi or (col.integer and v != round(v)):
        kind = "an integer " if col.integer else "a number "
        raise ValueError(f"given[{name!r}]: {value!r} is not {kind}in the column's range [{lo:g}, {hi:g}]")
    weights[int(np.searchsorted(col.edges[1:-1], v, side="right"))] = 1.0
    return weights, ("point", v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def readable_weights(disc: Discretizer, given: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
    """(weights per level of each given column, the numeric columns' limits on decoded values)."""
    if not isinstance(given, Mapping):
        raise TypeError(f"given must be a dict column -> value(s) or a DataFrame, got {type(given).__name__}")
    weights, limits = {}, {}
    for name, value in given.items():
        if name not in disc.domain:
            raise ValueError(f"given: unknown column {name!r}; the release has {list(disc.domain.attrs)}")
        col = disc.column(name)
        if col.kind == "numeric":
            if isinstance(value, (list, set, frozenset)):
                raise ValueError(f"given[{name!r}]: a numeric column takes one number or a range (lo, hi), not a list")
            weights[name], limit = _numeric_evidence(col, name, value)
            if limit is not None:
                limits[name] = limit
            continue
        values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
        if not values:
            raise ValueError(f"given[{name!r}]: an empty list of values")
        w = np.zeros(col.size)
        w[_category_codes(col, name, values)] = 1.0
        weights[name] = w
    return weights, limits


def _draw_in(col, codes: np.ndarray, low: np.ndarray, high: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values of bins ``codes`` drawn inside their spans cut to the range: following the column's
    density where it has weight there, else uniformly (the integers of an integer column)."""
    b_low, b_high = _bounds(col)
    uniform = np.array([[b_low[0], b_high[-1], 1.0]])
    vals, drawn = draw(col.density if col.density is not None else uniform, col.integer, low, high, codes, rng)
    if not drawn.all():
        rest = ~drawn
        vals[rest] = draw(uniform, col.integer, low, high, codes[rest], rng)[0]
    return vals


def _typed(col, vals: np.ndarray) -> Any:
    """Numeric values as the decoder types them: int64 (nullable Int64 with a missing level) or float."""
    vals = np.asarray(vals, dtype=np.float64)
    if col.integer and np.all(np.isnan(vals) | (vals == np.round(vals))):
        missing = np.isnan(vals)
        ints = np.where(missing, 0, vals).astype(np.int64)
        return pd.arrays.IntegerArray(ints, missing) if col.missing_code is not None or missing.any() else ints
    return vals


def apply_limits(disc: Discretizer, out: pd.DataFrame, codes: pd.DataFrame, limits: Mapping[str, tuple],
                 numeric: str, rng: np.random.Generator) -> pd.DataFrame:
    """Decoded numeric values made to obey the evidence: the given number, or inside the range."""
    for name, limit in limits.items():
        if numeric == "interval":
            break
        col, c = disc.column(name), codes[name].to_numpy().astype(np.intp)
        if limit[0] == "point":
            vals = np.full(len(c), limit[1])
        else:
            low, high = (x[c] for x in _clipped(col, limit[1], limit[2]))
            if numeric == "midpoint":
                vals = (low + high) // 2 if col.integer else (low + high) / 2
            else:
                vals = _draw_in(col, c, *_clipped(col, limit[1], limit[2]), rng)
        out[name] = _typed(col, vals)
    return out


def _given_cells(disc: Discretizer, name: str, s: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(codes as floats, NaN where the cell is to be drawn; which cells are given; numeric values)."""
    col = disc.column(name)
    keys = series_keys(s)
    absent = pd.isna(keys) | pd.Series(keys, dtype=object).isin(list(col.markers)).to_numpy()
    codes = np.full(len(s), np.nan)
    if col.kind == "numeric":
        vals = pd.to_numeric(pd.Series(np.where(absent, None, s.to_numpy(dtype=object))), errors="coerce").to_numpy(
            np.float64, na_value=np.nan)
        bad = np.isnan(vals) & ~absent
        if bad.any():
            raise ValueError(f"given[{name!r}]: {int(bad.sum())} cell(s) are not numbers (NaN marks a cell to draw)")
        inner = np.clip(vals[~absent], col.edges[0], col.edges[-1])
        codes[~absent] = np.searchsorted(col.edges[1:-1], inner, side="right")
        return codes, ~absent, vals
    idx = col.lookup.get_indexer(keys)
    found = np.where(idx >= 0, col.lookup_codes[np.maximum(idx, 0)], -1).astype(np.float64)
    if col.other_code is not None:
        found[(s.to_numpy(dtype=object) == OTHER_LABEL) & (found < 0)] = col.other_code
    bad = (found < 0) & ~absent
    if bad.any():
        first = s.to_numpy(dtype=object)[np.argmax(bad)]
        raise ValueError(f"given[{name!r}]: {int(bad.sum())} cell(s) are not categories of {name!r}, e.g. {first!r}")
    codes[~absent] = found[~absent]
    return codes, ~absent, None


def _impute(release, given: pd.DataFrame, rng: np.random.Generator, disc: Discretizer | None,
            numeric: str) -> pd.DataFrame:
    """One row per given row: codes (``disc`` None) or readable values with the given cells kept."""
    check_synthetic_size(len(given), len(release.domain))
    if disc is None:
        return release.model.synthetic_data(None, rng, given=given)
    if not isinstance(given, pd.DataFrame):
        raise TypeError(f"given must be a dict or a pandas DataFrame, got {type(given).__name__}")
    names = [str(c) for c in given.columns]
    unknown = [c for c in names if c not in disc.domain]
    if unknown or len(set(names)) != len(names):
        what = f"unknown column(s) {unknown}" if unknown else "repeated column names"
        raise ValueError(f"given: {what}; the release has {list(disc.domain.attrs)}")
    frame = given.set_axis(names, axis=1)
    cells = {name: _given_cells(disc, name, frame[name]) for name in names}
    codes = release.model.synthetic_data(None, rng, given=pd.DataFrame({k: v[0] for k, v in cells.items()},
                                                                      index=given.index))
    out = disc.inverse_transform(codes, rng=rng, numeric=numeric, typed=True)
    for name, (_, known, vals) in cells.items():
        if vals is not None and numeric != "interval":  # numbers given stay as given
            drawn = np.asarray(pd.Series(out[name]).to_numpy(np.float64, na_value=np.nan))
            out[name] = _typed(disc.column(name), np.where(known, vals, drawn))
    return out


def conditional_rows(release, n: int | None, rng: SamplingSeed, given: Mapping[str, Any] | pd.DataFrame,
                     readable: bool, numeric: str) -> pd.DataFrame:
    """`Release.synthetic_data` with ``given`` (module docstring): codes, or readable values when
    ``readable`` (the release has a spec and the caller did not ask for codes)."""
    rng = sampling_rng(rng)
    disc = release.discretizer if readable else None
    if isinstance(given, pd.DataFrame):
        if n is not None and int(n) != len(given):
            raise ValueError(f"n={n} but given holds {len(given)} rows: one row is drawn per given row")
        return _impute(release, given, rng, disc, numeric)
    weights, limits = (code_weights(release.domain, given), {}) if disc is None else readable_weights(disc, given)
    conditioned, _ = condition(release.model, weights)
    n = round(conditioned.total) if n is None else n  # noisy, public: total * p(given)
    check_synthetic_size(n, len(release.domain))
    codes = conditioned.synthetic_data(n, rng)
    if disc is None:
        return codes
    out = disc.inverse_transform(codes, rng=rng, numeric=numeric, typed=True)
    return apply_limits(disc, out, codes, limits, numeric, rng)
