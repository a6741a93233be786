"""The exact privacy loss of TukeyEM's depth step in one dimension (an audit of `ddssp.baselines.tukey`).

In 1-D the restricted exponential mechanism followed by a uniform point of the sampled depth
(Algorithms 3 and 4) has an output density that is piecewise constant in x:

    p_D(x) = P_D[depth_D(x)] / W_D(depth_D(x))   where depth_D(x) >= t = m/4, and 0 elsewhere,

with P_D the depth distribution and W_D the length of the set of depth exactly i, both computed
by the code path `tukey_em` uses (`log_exact_volumes`, `depth_log_weights`). So for two sorted
model sets D, D' (a neighbour: one model moved, the swap that adding a row causes) the privacy
loss log p_D(x) - log p_D'(x) is constant between consecutive models of D and D', and the supremum
of |loss| on the common support and the hockey-stick divergence

    delta(eps) = max over both directions of  integral max(0, p_D(x) - e^eps p_D'(x)) dx

are finite sums, computed here exactly in log space. Points of depth >= t under one set and
< t under the other (the restriction's edge) have infinite loss; they enter delta only, which is
what the PTR step's delta pays for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from .tukey import depth_log_weights, log_exact_volumes


@dataclass(frozen=True)
class PrivacyLoss:
    """``sup_loss``: max |log p_D - log p_D'| where both densities are positive; ``log_delta``: log of
    the hockey-stick divergence at the epsilon asked for (max of both directions; -inf if 0);
    ``log_edge``: log of the larger mass one side puts where the other's density is 0.

    With Algorithm 3's weights w = epsilon / 2 a swap moves depth by at most 1 and the normaliser by
    a factor within [e^-w (1 - edge), e^w / (1 - edge)], so sup_loss <= epsilon - log(1 - edge): the
    charge, up to the restriction's edge that the PTR step makes small (tests check exactly this)."""

    sup_loss: float
    log_delta: float
    log_edge: float

    @property
    def delta(self) -> float:
        return math.exp(self.log_delta)


def depth_log_density(models: np.ndarray, points: np.ndarray, epsilon: float, monotone: bool) -> np.ndarray:
    """log p_D(x) at ``points`` for 1-D ``models`` (m even): the depth step of `tukey_em` with
    share ``epsilon`` (its eps/2) and restriction t = m // 4; -inf outside depth >= t."""
    s = np.sort(np.asarray(models, dtype=np.float64))
    m = s.size
    if m < 4 or m % 2:
        raise ValueError(f"the number of models must be an even integer >= 4, got {m}")
    t = m // 4  # as in tukey_em
    log_w = log_exact_volumes(s[None, :])  # log W_i, i = 1..m/2
    weights = depth_log_weights(log_w, t, epsilon, monotone)  # depths t..m/2
    log_p = weights - logsumexp(weights)
    points = np.asarray(points, dtype=np.float64)
    below = np.searchsorted(s, points, side="right")  # #models <= x
    above = m - np.searchsorted(s, points, side="left")  # #models >= x
    depth = np.minimum(below, above)
    out = np.full(points.shape, -np.inf)
    inside = depth >= t
    i = depth[inside]
    with np.errstate(invalid="ignore"):
        out[inside] = log_p[i - t] - log_w[i - 1]
    return out


def _log_hockey_stick(log_len: np.ndarray, a: np.ndarray, b: np.ndarray, epsilon: float) -> float:
    """log of sum over pieces of len * max(0, e^a - e^(epsilon + b))."""
    over = a > epsilon + b
    if not np.any(over):
        return -math.inf
    a, b, log_len = a[over], b[over], log_len[over]
    with np.errstate(divide="ignore"):
        terms = log_len + a + np.log1p(-np.exp(epsilon + b - a))
    return float(logsumexp(terms))


def _log_edge(log_len: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """log of the mass density a puts where density b is 0."""
    only = np.isfinite(a) & ~np.isfinite(b)
    return float(logsumexp((log_len + a)[only])) if np.any(only) else -math.inf


def exact_privacy_loss(models: np.ndarray, neighbour: np.ndarray, epsilon: float, monotone: bool) -> PrivacyLoss:
    """The exact privacy loss of the 1-D depth step between two model sets of the same size m
    (``neighbour``: ``models`` with one model moved), at the step's share ``epsilon``."""
    s, s2 = np.sort(np.ravel(models)), np.sort(np.ravel(neighbour))
    if s.size != s2.size:
        raise ValueError("a swap keeps the number of models: both sets need the same size")
    cuts = np.unique(np.concatenate([s, s2]))
    lengths = np.diff(cuts)
    keep = lengths > 0
    mid = (cuts[:-1] + cuts[1:])[keep] / 2
    log_len = np.log(lengths[keep])
    a = depth_log_density(s, mid, epsilon, monotone)
    b = depth_log_density(s2, mid, epsilon, monotone)
    both = np.isfinite(a) & np.isfinite(b)
    sup = float(np.max(np.abs(a[both] - b[both]))) if np.any(both) else 0.0
    log_delta = max(_log_hockey_stick(log_len, a, b, epsilon), _log_hockey_stick(log_len, b, a, epsilon))
    return PrivacyLoss(sup, log_delta, max(_log_edge(log_len, a, b), _log_edge(log_len, b, a)))


def worst_swap(
    models: np.ndarray, positions: np.ndarray, epsilon: float, monotone: bool, indices: np.ndarray | None = None
) -> tuple[PrivacyLoss, tuple[int, float]]:
    """The worst swap of one model (each of ``indices`` of the sorted ``models``, default all) to each
    of ``positions``: (the max of each field over the swaps, (index moved, new position) of the max sup_loss)."""
    models = np.sort(np.asarray(models, dtype=np.float64))
    indices = range(models.size) if indices is None else indices
    best_sup, best_delta, best_edge, where = -math.inf, -math.inf, -math.inf, (-1, math.nan)
    for k in indices:
        for x in np.asarray(positions, dtype=np.float64):
            moved = models.copy()
            moved[k] = x
            loss = exact_privacy_loss(models, moved, epsilon, monotone)
            if loss.sup_loss > best_sup:
                best_sup, where = loss.sup_loss, (int(k), float(x))
            best_delta, best_edge = max(best_delta, loss.log_delta), max(best_edge, loss.log_edge)
    return PrivacyLoss(best_sup, best_delta, best_edge), where
