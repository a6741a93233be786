"""The public tree over the number line that numeric spec inference counts on (no data here).

The tree is fixed in advance and the same for every table. Its cells, in order along the line:

- fine cells: zero (an atom), and the E24 preferred numbers (IEC 60063: 1.0, 1.1, 1.2, 1.3,
  1.5, ... 9.1, about 10% apart) times 10^e for e in -3..9, with both signs; (0, 1e-3) and its
  mirror are one cell each, values beyond +-1e10 fall in an end atom at +-1e10 (clipped);
- coarse cells: the fine cells grouped by sign and decade (each atom and each sub-1e-3 cell its
  own group);
- unit cells: one per integer k with -UNIT_MAX <= k < UNIT_MAX (whole fine cells: UNIT_MAX is a boundary).

Every level is a partition of its values (a value falls in exactly one cell per level, split by
whether it is an integer), so one row changes each level's count vector by one count.
"""

from __future__ import annotations

import math

import numpy as np

E24 = (1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.8, 2.0, 2.2, 2.4, 2.7, 3.0, 3.3, 3.6, 3.9, 4.3, 4.7, 5.1, 5.6, 6.2, 6.8,
       7.5, 8.2, 9.1)
DECADES = range(-3, 10)
CAP = 1e10
#: integers in [-UNIT_MAX, UNIT_MAX) get a unit cell of their own (the third level); a grid boundary, so
#: every fine cell holding one of them holds only them.
UNIT_MAX = 1000


def boundaries() -> np.ndarray:
    """The public cell boundaries, sorted: -CAP .. -1e-3, 0, 1e-3 .. CAP (decimal values, parsed exactly)."""
    pos = [float(f"{m}e{e}") for e in DECADES for m in E24] + [CAP]
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


_BOUNDS = boundaries()
_ZERO = len(_BOUNDS) // 2  # index of 0.0 in _BOUNDS


def _fine_extents() -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every fine cell along the line; atoms (-CAP, 0, CAP) have low == high."""
    low = np.concatenate([[-CAP], _BOUNDS[:_ZERO], [0.0], _BOUNDS[_ZERO:-1], [CAP]])
    high = np.concatenate([[-CAP], _BOUNDS[1:_ZERO + 1], [0.0], _BOUNDS[_ZERO + 1:], [CAP]])
    return low, high


FINE_LOW, FINE_HIGH = _fine_extents()
N_FINE = len(FINE_LOW)


def _coarse_of() -> np.ndarray:
    """The coarse cell (sign x decade; atoms and the cells next to zero alone) of every fine cell."""
    keys = []
    for lo, hi in zip(FINE_LOW, FINE_HIGH):
        small = min(abs(lo), abs(hi))
        decade = (math.copysign(1, lo + hi), math.floor(math.log10(small) + 1e-9)) if small > 0 else None
        keys.append((lo, hi) if lo == hi or decade is None else decade)
    index = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return np.array([index[k] for k in keys], dtype=np.int64)


COARSE_OF = _coarse_of()
N_COARSE = int(COARSE_OF.max()) + 1
UNITS = np.arange(-UNIT_MAX, UNIT_MAX)


def fine_cell(values: np.ndarray) -> np.ndarray:
    """The fine cell of every value (finite or +-inf; not NaN)."""
    cells = np.searchsorted(_BOUNDS, values, side="right") + (values > 0)
    return np.where(values == 0, _ZERO + 1, cells)


#: the fine cell holding each unit integer (the unit cells' parents, in the fine cells' integer half).
UNIT_PARENT = fine_cell(UNITS.astype(np.float64))
#: the coarse cells with a fine cell of two or more unit integers (where a third level adds detail).
COARSE_UNITS = np.isin(np.arange(N_COARSE), COARSE_OF[UNIT_PARENT[np.bincount(UNIT_PARENT)[UNIT_PARENT] > 1]])


def level_counts(values: np.ndarray, missing: np.ndarray) -> list[np.ndarray]:
    """The three count vectors of one column: [missing] + coarse x {integer, non-integer},
    fine x {integer, non-integer}, unit integers (values elsewhere are not counted there)."""
    vals = values[~missing]
    fine = fine_cell(vals)
    frac = (vals != np.floor(vals)).astype(np.int64)  # +-inf: not finite, floor(inf) == inf: integer half
    coarse = np.bincount(2 * COARSE_OF[fine] + frac, minlength=2 * N_COARSE)
    units = vals[(frac == 0) & (vals >= -UNIT_MAX) & (vals < UNIT_MAX)].astype(np.int64) + UNIT_MAX
    return [np.concatenate([[int(missing.sum())], coarse]), np.bincount(2 * fine + frac, minlength=2 * N_FINE),
            np.bincount(units, minlength=len(UNITS))]
