"""A numeric column's public density: bin edges from it, and values drawn inside a bin following it.

A density is a list of pieces ``[low, high, weight]`` (weights >= 0, not all 0). In an integer
column a piece stands for the integers low..high, each with an equal share of its weight; in
other columns for the interval [low, high), or the single value low when low == high (an atom,
e.g. exact zeros). `marginals.spec.infer` stores the post-processed DP estimate of
`marginals.spec.tree` here (spec key ``"density"``), so decoding reproduces the shape inside
each bin (point masses, log-scale tails) instead of spreading every bin uniformly.
"""

from __future__ import annotations

import numpy as np


def _cumulative(pieces: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, mass) of each piece as a stretch of the line: integers k..m become [k, m + 1)."""
    low, high, mass = pieces[:, 0], pieces[:, 1], pieces[:, 2]
    return low, high + 1 if integer else high, mass


def quantile(pieces: np.ndarray, integer: bool, levels: np.ndarray) -> np.ndarray:
    """Points where the cumulative weight (uniform inside each piece) reaches ``levels`` (shares of the total)."""
    start, end, mass = _cumulative(pieces, integer)
    cum = np.cumsum(mass) / mass.sum()
    i = np.minimum(np.searchsorted(cum, levels, side="left"), len(mass) - 1)
    share = np.clip((levels - (cum[i] - mass[i] / mass.sum())) * mass.sum() / np.maximum(mass[i], 1e-300), 0.0, 1.0)
    return start[i] + (end[i] - start[i]) * share


def edges(pieces: np.ndarray, integer: bool, bins: int) -> list:
    """Bin edges: a bin of its own for every atom holding at least half a bin's share (exact zeros,
    a common value), the other bins at quantiles of the remaining weight; the ends are the
    density's ends (an integer column's last bin is closed, so its last edge is the largest integer)."""
    start, end, mass = _cumulative(pieces, integer)
    share = mass / mass.sum()
    atoms = (end - start <= 1 if integer else end == start) & (share >= 1 / (2 * bins))
    cuts = [start.min(), (end.max() - 1) if integer else end.max()]
    for a in start[atoms]:
        above = np.concatenate([start[start > a], end[end > a]])
        cuts += [a, a + 1 if integer else (above.min() if len(above) else a)]
    rest = np.where(atoms, 0.0, mass)
    free = max(1, bins - int(atoms.sum()))
    if rest.sum() > 0:
        inner = quantile(np.column_stack([pieces[:, :2], rest]), integer, np.arange(1, free) / free)
        cuts += list(np.round(inner) if integer else _round_sig(inner))
    out = np.unique(np.clip(cuts, cuts[0], cuts[1]))
    if len(out) < 2:  # one value only: a bin around it that holds no other integer
        v = float(out[0])
        out = np.array([v - 0.5, v + 0.5]) if integer else np.array([v, v + max(1e-3, abs(v) * 0.1)])
    return [plain_number(e) for e in out]


def plain_number(x: float) -> int | float:
    """A number for a JSON spec: an int when it is integral, else a float."""
    return int(x) if float(x).is_integer() else float(x)


def _round_sig(x: np.ndarray, digits: int = 3) -> np.ndarray:
    return np.array([float(f"{v:.{digits}g}") for v in x])


def _within(pieces: np.ndarray, integer: bool, lo: float, hi: float, closed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The pieces clipped to one bin ([lo, hi], integers, for integer columns; [lo, hi) or [lo, hi]
    otherwise) and their weights, each piece's weight scaled by the share of it inside the bin."""
    low, high, mass = pieces[:, 0], pieces[:, 1], pieces[:, 2]
    a, b = np.maximum(low, lo), np.minimum(high, hi)
    if integer:
        share = np.clip(b - a + 1, 0, None) / (high - low + 1)
    else:
        atom = low == high
        inside = (low >= lo) & ((low <= hi) if closed else (low < hi))
        share = np.where(atom, inside, np.clip(b - a, 0, None) / np.where(atom, 1.0, high - low))
    return np.column_stack([a, b]), mass * share


def draw(pieces: np.ndarray, integer: bool, bin_low: np.ndarray, bin_high: np.ndarray, bins: np.ndarray,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(values, drawn) for rows in bins ``bins`` (each bin b spans bin_low[b]..bin_high[b]): values
    following the density inside their bin; ``drawn`` False where the bin holds none of it (the
    caller draws those uniformly)."""
    out = np.zeros(len(bins))
    drawn = np.zeros(len(bins), dtype=bool)
    last = len(bin_low) - 1
    for b in np.unique(bins):
        rows = np.flatnonzero(bins == b)
        span, weight = _within(pieces, integer, bin_low[b], bin_high[b], b == last)
        if weight.sum() <= 0:
            continue
        pick = rng.choice(len(weight), size=len(rows), p=weight / weight.sum())
        lo, hi = span[pick, 0], span[pick, 1]
        if integer:
            out[rows] = rng.integers(lo.astype(np.int64), hi.astype(np.int64), endpoint=True)
        else:
            vals = rng.uniform(lo, hi)
            out[rows] = np.where(hi > lo, np.minimum(vals, np.nextafter(hi, -np.inf)), lo)
        drawn[rows] = True
    return out, drawn
