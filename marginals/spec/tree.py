"""A numeric column's distribution from a DP hierarchical histogram on the public tree of `marginals.spec.grid`.

Measurement. Level 1 counts [missing] + coarse cell x {integer, non-integer}, level 2 fine cell x
{integer, non-integer}, level 3 the unit integers in [-UNIT_MAX, UNIT_MAX). Each level's cells are
disjoint and every row lands in at most one of them, so adding or removing one row changes one
count of each level by one: L2 sensitivity 1 per level (derived from the partition; the tests
check it on adversarial rows). Each level is measured once with the discrete Gaussian
(`marginals.mechanisms.measure_counts`, one ledger charge each, share `LEVEL_SHARES` of the
column's rho); by zCDP composition the levels together cost at most that rho. Level 3 is measured
only when the noisy output of level 1 leaves integer mass where it applies (else its share goes
to level 2): a choice made from noisy outputs only (adaptive composition).

Estimate (post-processing of the noisy counts only), top down: a level-1 cell keeps its noisy
count when it reaches the noise floor z sigma, z = sqrt(2 ln(cells / FALSE_CELLS)) over the
cells tested (the discrete Gaussian's tail is at most exp(-z^2 / 2), so fewer than FALSE_CELLS
empty cells are expected to pass). Inside a kept cell, runs of 1, 2, 4, ... neighbouring
children are tested the same way (a run of s cells against sigma sqrt(s): thin tails that no
single cell shows); what passes keeps its noisy count (scaled down if it exceeds the parent's
mass) and the parent's remaining mass is shared equally by all its children. In the first and
last cells holding mass (the data's ends), a run's or the parent's remaining mass goes only to
the children between the data's ends inside it (`_span`: where prefix and suffix sums of the noisy
counts first reach their noise floor), so the ends do not stretch to a cell's far edge (no 17 in
a 1..16 column). Integer halves of fine cells that hold no integer are known to be empty and get
nothing. The result is a list of pieces (low, high, mass): unit integers, integer ranges of fine
cells, or continuous fine cells (`Shape`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms import COUNT_SENSITIVITY, measure_counts
from ..maps import GaussianMap
from ..privacy import Accountant
from ..randomness import RandomSource
from .grid import COARSE_OF, COARSE_UNITS, FINE_HIGH, FINE_LOW, N_FINE, UNIT_PARENT, UNITS, level_counts

#: shares of a numeric column's rho for levels 1, 2, 3 (a utility choice; they sum to 1).
LEVEL_SHARES = (0.3, 0.35, 0.35)
#: expected number of empty cells that pass the noise floor per level (a utility choice, not privacy).
FALSE_CELLS = 0.01
#: largest share of non-integer mass for which a column is still called integer.
INTEGER_TOLERANCE = 0.05
#: level-2 cells that can hold no value: the integer halves of fine cells without an integer.
HOLDS_NONE = np.zeros(2 * N_FINE, dtype=bool)
HOLDS_NONE[0::2] = (FINE_LOW != FINE_HIGH) & (np.ceil(FINE_LOW) >= FINE_HIGH)


@dataclass(frozen=True)
class Shape:
    """The estimated distribution: pieces (low, high, mass) along the line, integer or not."""

    pieces: np.ndarray  # (n, 3): integer columns: integers low..high; else [low, high) (an atom when low == high)
    integer: bool
    sigma: float  # level-1 noise scale


def noise_floor(sigma: float, cells: int) -> float:
    """The count below which a noisy cell is treated as empty: z sigma with z = sqrt(2 ln(cells / FALSE_CELLS))."""
    return sigma * math.sqrt(2 * math.log(max(cells, 1) / FALSE_CELLS))


def split(parent_mass: np.ndarray, parent_of: np.ndarray, noisy: np.ndarray, sigma: float,
          possible: np.ndarray | None = None, units: bool = False) -> np.ndarray:
    """Children's masses from their parents' masses (indexed along the line) and their own noisy counts
    (children of one parent in order along the line; ``possible``: those that can hold values at all)."""
    possible = np.ones(len(noisy), dtype=bool) if possible is None else possible
    out = np.zeros(len(noisy))
    alive = np.intersect1d(np.flatnonzero(parent_mass > 0), parent_of[possible])
    tested = 2 * int(np.isin(parent_of, alive).sum())
    for p in alive:
        kids = np.flatnonzero((parent_of == p) & possible)
        end = (p == alive[0], p == alive[-1])  # holds the data's lower / upper end
        end = end if units or not any(end) else (True, True)  # one-sided placement: unit integers only
        found = _runs(noisy[kids], sigma, tested, end)
        rest = parent_mass[p] - found.sum()  # what the runs leave: all children (at an end: see _span)
        spread = _span(noisy[kids], sigma, tested, end) if any(end) else np.ones(len(kids))
        out[kids] = found * min(1.0, parent_mass[p] / max(found.sum(), 1e-300)) + max(rest, 0.0) * spread / spread.sum()
    return out


def _span(noisy: np.ndarray, sigma: float, tested: int, end: tuple[bool, bool]) -> np.ndarray:
    """The cells between the data's ends inside one cell: from the first whose prefix sum of noisy
    counts (k cells) reaches the noise floor of sigma sqrt(k), to the last whose suffix sum does.
    When they cross (too little signal to place the end), a fine cell split into unit integers that
    holds only the data's upper end gives everything to its lowest integer and one holding only the
    lower end to its highest (both inside the data's range whenever the cell holds data: no 17 in a
    1..16 column); otherwise (a coarse cell's fine cells, or a cell holding both ends) the children
    within one sigma of the largest get it."""
    floor = noise_floor(sigma, tested) * np.sqrt(np.arange(1, len(noisy) + 1))
    rise = np.flatnonzero(np.cumsum(noisy) >= floor)
    fall = np.flatnonzero(np.cumsum(noisy[::-1]) >= floor)
    first, last = (rise[0], len(noisy) - 1 - fall[0]) if len(rise) and len(fall) else (0, -1)
    if first > last and end == (False, True):
        first = last = 0
    elif first > last and end == (True, False):
        first = last = len(noisy) - 1
    elif first > last:
        near = np.flatnonzero(noisy >= noisy.max() - sigma)
        first, last = near[0], near[-1]
    return (np.arange(len(noisy)) >= first) & (np.arange(len(noisy)) <= last)


def _runs(noisy: np.ndarray, sigma: float, tested: int, end: tuple[bool, bool]) -> np.ndarray:
    """Mass found in runs of 1, 2, 4, ... neighbouring cells: the part of a run's noisy sum that finer
    runs left unexplained, kept when it reaches the run's noise floor (sigma sqrt(size)) and given
    to its cells evenly (at an end of the data: to its `_span`)."""
    n = len(noisy)
    mass = np.zeros(n)
    size = 1
    while True:
        for start in range(0, n, size):
            run = slice(start, start + size)
            rest = noisy[run].sum() - mass[run].sum()
            if rest >= noise_floor(sigma * math.sqrt(size), tested):
                share = _span(noisy[run], sigma, tested, end) if any(end) else np.ones(len(noisy[run]))
                mass[run] += rest * share / share.sum()
        if size >= n:
            return np.maximum(mass, 0.0)
        size *= 2


def measure_shape(name: str, values: np.ndarray, missing: np.ndarray, rho: float, source: RandomSource,
                  accountant: Accountant) -> Shape | None:
    """Measure the three levels for ``rho`` in total and estimate the column's shape (None: nothing passed)."""
    counts = level_counts(values, missing)
    gauss = GaussianMap(COUNT_SENSITIVITY)
    one = measure_counts(counts[0], (name,), gauss.sigma(rho * LEVEL_SHARES[0]), source, accountant,
                         label=f"spec {name}: level 1")
    coarse = one.noisy_counts[1:]
    kept = np.where(coarse >= noise_floor(one.sigma, len(coarse)), coarse, 0.0)
    if not kept.any():
        return None
    units_needed = bool(kept[0::2][COARSE_UNITS].any())
    level2 = gauss.sigma(rho * (LEVEL_SHARES[1] + LEVEL_SHARES[2] * (not units_needed)))
    two = measure_counts(counts[1], (name,), level2, source, accountant, label=f"spec {name}: level 2")
    fine = split(kept, 2 * COARSE_OF[np.arange(2 * N_FINE) // 2] + np.arange(2 * N_FINE) % 2, two.noisy_counts,
                 two.sigma, ~HOLDS_NONE)
    if fine.sum() <= 0:  # only cells that can hold nothing passed (noise)
        return None
    integer = bool(fine[1::2].sum() <= INTEGER_TOLERANCE * fine.sum())
    units = np.zeros(len(UNITS))
    if units_needed:
        level3 = gauss.sigma(rho * LEVEL_SHARES[2])
        three = measure_counts(counts[2], (name,), level3, source, accountant, label=f"spec {name}: level 3")
        units = split(fine[0::2], UNIT_PARENT, three.noisy_counts, three.sigma, units=True)
        fine[2 * UNIT_PARENT] = 0.0  # their mass now sits on the unit cells
    return Shape(_pieces(fine, units, integer), integer, one.sigma)


def _pieces(fine: np.ndarray, units: np.ndarray, integer: bool) -> np.ndarray:
    """Pieces along the line: unit atoms, the integers of fine cells, continuous fine cells (non-integer columns)."""
    lo_int = np.ceil(FINE_LOW)
    hi_int = np.where(FINE_LOW == FINE_HIGH, lo_int, np.ceil(FINE_HIGH) - 1)
    ints = np.column_stack([lo_int, hi_int, fine[0::2]])
    ints = ints[(ints[:, 2] > 0) & (ints[:, 0] <= ints[:, 1])]
    rows = [np.column_stack([UNITS, UNITS, units])[units > 0]]
    if integer:
        rows.append(ints)
    else:  # an integer range in a non-integer column: the continuous stretch it covers
        rows.append(np.column_stack([ints[:, 0], ints[:, 1] + (ints[:, 1] > ints[:, 0]), ints[:, 2]]))
        rows.append(np.column_stack([FINE_LOW, FINE_HIGH, fine[1::2]])[fine[1::2] > 0])
    pieces = np.concatenate(rows)
    pieces = pieces[np.lexsort((pieces[:, 1], pieces[:, 0]))]
    return _merge(pieces) if integer else pieces


def _merge(pieces: np.ndarray) -> np.ndarray:
    """Neighbouring integer pieces with the same mass per integer joined into one (a compact spec)."""
    per = pieces[:, 2] / (pieces[:, 1] - pieces[:, 0] + 1)
    same = (pieces[1:, 0] == pieces[:-1, 1] + 1) & np.isclose(per[1:], per[:-1], rtol=1e-9, atol=0)
    group = np.concatenate([[0], np.cumsum(~same)])
    out = np.zeros((group[-1] + 1, 3))
    out[:, 0] = pieces[np.concatenate([[True], ~same]), 0]
    out[:, 1] = pieces[np.concatenate([~same, [True]]), 1]
    out[:, 2] = np.bincount(group, weights=pieces[:, 2])
    return out
