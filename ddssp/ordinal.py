"""Encoding matrices of ordered (ordinal) attributes beyond one scaled column: hinge columns at public
knots (a piecewise-linear function of the level) and indicators of extra unordered levels.

An attribute with ``levels`` codes whose first ``ordered`` are ordered has the position
s_l = 2l/(ordered-1) - 1 in [-1, 1] (l < ordered). Its rows are the value row (s, or the raw code),
then one hinge row h_k(l) = max(0, s_l - t_k) / (1 - t_k) in [0, 1] per knot t_k = -1 + 2k/(K+1),
k = 1..K (equally spaced: they depend on the domain only), then one indicator row per extra level
(codes ``ordered .. levels-1``, which are 0 in the value and hinge rows). K is at most ordered - 2:
then every knot interval holds a level and the first two levels lie at or below the first knot, so
the rows are linearly independent on the levels and no combination of them is constant (the block
never duplicates an intercept or another block's reference level, as a dropped-first one-hot block).
"""

from __future__ import annotations

import numpy as np


def usable_knots(ordered: int, knots: int) -> int:
    """How many of ``knots`` hinges an attribute with ``ordered`` ordered levels gets (at most ordered - 2)."""
    return max(0, min(int(knots), ordered - 2))


def knot_positions(knots: int) -> np.ndarray:
    """The K interior knots of [-1, 1], equally spaced: -1 + 2k/(K+1), k = 1..K."""
    return -1.0 + 2.0 * np.arange(1, knots + 1) / (knots + 1)


def ordinal_matrix(levels: int, ordered: int, knots: int, raw: bool) -> np.ndarray:
    """Rows: the value (scaled position, or the raw code with ``raw``), the `usable_knots` hinges, then
    an indicator per extra level; columns: the ``levels`` codes (see the module docstring)."""
    position = np.zeros(levels)
    if ordered > 1:
        position[:ordered] = 2.0 * np.arange(ordered) / (ordered - 1) - 1.0
    value = np.zeros(levels)
    value[:ordered] = np.arange(ordered, dtype=np.float64) if raw else position[:ordered]
    rows = [value[None, :]] if ordered > 1 else []  # a single ordered level has no scale
    for t in knot_positions(usable_knots(ordered, knots)):
        hinge = np.zeros(levels)
        hinge[:ordered] = np.maximum(0.0, position[:ordered] - t) / (1.0 - t)
        rows.append(hinge[None, :])
    rows.append(np.eye(levels)[ordered:])
    return np.vstack(rows)
