"""Numeric bounds and bin edges from a noisy histogram over a public grid (post-processing only).

The grid is fixed in advance and the same for every table: zero, and the E24 preferred numbers
(IEC 60063: 1.0, 1.1, 1.2, 1.3, 1.5, ... 9.1, about 10% apart) times 10^e for e in -3..9, with
both signs; values beyond +-1e10 share an end cell each (they are clipped to +-1e10). Every value
falls in exactly one cell, split further by whether it is an integer, so a row changes one count
by one: the histogram has L2 sensitivity 1 (`marginals.spec.infer` measures it once with the
discrete Gaussian). Everything below reads only the noisy counts:

- a cell keeps its noisy count when it reaches ``z * sigma``, with z = sqrt(2 ln(cells / FALSE_CELLS)):
  the discrete Gaussian's tail is at most exp(-z^2 / 2) (sub-Gaussian), so fewer than FALSE_CELLS
  empty cells are expected to survive anywhere on the grid; runs of 2, 4, 8, ... neighbouring
  cells are tested the same way for mass that no single cell shows (thin tails), see
  `multilevel_mass`;
- the bounds are the ends of the first and last surviving cells; the bin edges are the quantiles
  of the surviving mass at 1/bins, 2/bins, ..., spread uniformly inside each cell; exact zeros
  holding at least half a bin's share (a point mass, e.g. capital gains) get a bin of their own;
- the column is integer when less than `INTEGER_TOLERANCE` of the surviving mass is non-integer;
  then every edge is an integer (so every bin holds one).
"""

from __future__ import annotations

import math

import numpy as np

E24 = (1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.8, 2.0, 2.2, 2.4, 2.7, 3.0, 3.3, 3.6, 3.9, 4.3, 4.7, 5.1, 5.6, 6.2, 6.8,
       7.5, 8.2, 9.1)
DECADES = range(-3, 10)
CAP = 1e10
#: expected number of empty grid cells that survive the noise threshold (a utility choice, not privacy).
FALSE_CELLS = 0.01
#: largest share of non-integer mass for which a column is still called integer.
INTEGER_TOLERANCE = 0.05


def boundaries() -> np.ndarray:
    """The public cell boundaries, sorted: -CAP .. -1e-3, 0, 1e-3 .. CAP (decimal values, parsed exactly)."""
    pos = [float(f"{m}e{e}") for e in DECADES for m in E24] + [CAP]
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


_BOUNDS = boundaries()
#: interval cells: below -CAP, one per pair of boundaries, at or above CAP; then the exact zero.
N_CELLS = len(_BOUNDS) + 2
ZERO_CELL = N_CELLS - 1


def cell_extents() -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every grid cell; the end cells sit at -CAP / CAP and the zero cell at 0."""
    low = np.concatenate([[-CAP], _BOUNDS, [0.0]])
    high = np.concatenate([_BOUNDS, [CAP], [0.0]])
    return low, high


def cell_counts(values: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Counts of one column over [missing] + (grid cell x {integer, non-integer}) (length 1 + 2 N_CELLS)."""
    vals = values[~missing]
    cells = np.searchsorted(_BOUNDS, vals, side="right")
    cells[vals == 0] = ZERO_CELL
    frac = (vals != np.floor(vals)).astype(np.int64)
    counts = np.bincount(1 + 2 * cells + frac, minlength=1 + 2 * N_CELLS)
    counts[0] = int(missing.sum())
    return counts


def noise_floor(sigma: float, cells: int = 2 * N_CELLS) -> float:
    """The count below which a noisy cell is treated as empty: z sigma with z = sqrt(2 ln(cells / FALSE_CELLS))."""
    return sigma * math.sqrt(2 * math.log(cells / FALSE_CELLS))


def multilevel_mass(noisy: np.ndarray, sigma: float) -> np.ndarray:
    """Mass per cell (cells in order along the line) from noisy counts of noise scale ``sigma``.

    Level l sums runs of 2^l neighbouring cells (noise sigma 2^(l/2)). From fine to coarse, the
    part of a run's noisy sum not yet explained by finer levels is kept, spread evenly over the
    run, when it reaches the run's noise floor: thin tails (many cells each under the floor)
    are found without letting noise far from the data through."""
    n = len(noisy)
    levels = max(1, math.ceil(math.log2(n))) + 1
    mass = np.zeros(n)
    for level in range(levels):
        size = 2**level
        runs = -(-n // size)
        padded = np.zeros(runs * size)
        padded[:n] = noisy
        sums = padded.reshape(runs, size).sum(axis=1)
        have = np.pad(mass, (0, runs * size - n)).reshape(runs, size).sum(axis=1)
        rest = sums - have
        rest = np.where(rest >= noise_floor(sigma * math.sqrt(size), runs * levels), rest, 0.0)
        mass += np.repeat(rest / size, size)[:n]
    return mass


def _quantiles(low: np.ndarray, high: np.ndarray, mass: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Points where the cumulative mass (uniform inside each cell, a point mass at low == high) reaches ``levels``."""
    cum = np.cumsum(mass)
    i = np.minimum(np.searchsorted(cum, levels, side="left"), len(mass) - 1)
    before = cum[i] - mass[i]
    share = np.clip((levels - before) / np.maximum(mass[i], 1e-300), 0.0, 1.0)
    return low[i] + (high[i] - low[i]) * share


def _round_sig(x: np.ndarray, digits: int = 3) -> np.ndarray:
    return np.array([float(f"{v:.{digits}g}") for v in x])


def edges_from_noisy(noisy: np.ndarray, sigma: float, bins: int, integer: bool | None) -> tuple[list, bool] | None:
    """(bin edges, integer) from the noisy cell counts (without the missing cell), or None when no
    cell survives the noise floor. ``integer`` None decides it from the surviving mass."""
    low, high = cell_extents()
    order = np.lexsort((high, low))  # along the line; the zero cell lands between (-1e-3, 0) and (0, 1e-3)
    low, high = low[order], high[order]
    pairs = noisy.reshape(N_CELLS, 2)[order]
    whole, fractional = (multilevel_mass(pairs[:, k], sigma) for k in (0, 1))
    mass = whole + fractional
    alive = mass > 0
    if not alive.any():
        return None
    if integer is None:
        integer = bool(fractional.sum() <= INTEGER_TOLERANCE * mass.sum())
    lo, hi = float(low[alive][0]), float(high[alive][-1])
    inner = _quantiles(low, high, mass, mass.sum() * np.arange(1, bins) / bins)
    zero_mass = mass[int(np.flatnonzero(order == ZERO_CELL)[0])]
    zero = bool(zero_mass >= mass.sum() / (2 * bins)) and lo <= 0 < hi  # a point mass worth a bin
    if integer:
        edges = np.concatenate([[math.floor(lo)], np.round(inner), [math.ceil(hi)]] + [[0.0, 1.0]] * zero)
    else:
        edges = np.concatenate([[lo], _round_sig(inner), [hi]] + [[0.0, float(_BOUNDS[len(_BOUNDS) // 2 + 1])]] * zero)
    edges = np.unique(np.clip(edges, math.floor(lo) if integer else lo, math.ceil(hi) if integer else hi))
    if len(edges) < 2:  # one point survived (e.g. only zeros): a bin around it that holds no other integer
        v = float(edges[0])
        edges = np.array([v - 0.5, v + 0.5]) if integer else np.array([v, v + max(1e-3, abs(v) * 0.1)])
    return [int(e) if float(e).is_integer() else float(e) for e in edges], integer
