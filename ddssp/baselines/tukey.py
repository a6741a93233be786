"""The TukeyEM algorithm of Amin, Joseph, Ribero & Vassilvitskii ("Easy Differentially Private
Linear Regression") on numeric arrays: models, depth volumes, PTR, the restricted exponential
mechanism and exact-depth sampling. The estimator on encoded tables is `TukeyEM` (tukeyem.py).

Exact PTR noise (`ptr_noisy_distance`): k is an integer of sensitivity 1, so 2^20 k has
sensitivity 2^20 and 2^20 k + Y, Y discrete Laplace with P(y) ~ exp(-|y| / t), t =
ceil(2^20 / eps_ptr), is (2^20 / t) <= eps_ptr DP (`marginals.lattice`; no float noise). The test
passes when 2^20 k + Y >= m (exact integers; the floats reported are these over 2^20, exact),
with m = ceil(t log(1 / (delta (1 + a)))) + 1, a = exp(-1/t): for k <= 0 the pass probability is
P(Y >= m) = a^m / (1 + a) <= delta, as P(Lap >= log(1/(2 delta)) / eps) = delta in Algorithm 1.
The threshold m / 2^20 equals the paper's log(1/(2 delta)) / eps_ptr up to about 2^-20 relative.

Indices follow the paper (1-based): S is d x m with every row sorted, S_{j,k} = S[j, k-1].
The region of approximate Tukey depth >= i is the box prod_j [S_{j,i}, S_{j,m-i+1}] with volume
V_i (i = 1..m/2); the region of depth exactly i has volume W_i = V_i - V_{i+1} (V_{m/2+1} = 0).
Everything runs in log space. W_i is computed as the sum of the volumes of the sets C_{j,i}
(depth > i in dims < j, exactly i in dim j, >= i in dims > j; Lemma 7.4 with its index typo
fixed: V_{<j,i+1}) so that the depth mechanism and the point sampler use the same numbers and
W_i stays accurate when V_{i+1} is close to V_i.

Privacy (Thm 3.10, add/remove one row): a row lives in exactly one of the m subsets, so a
neighbour changes one model. PTRCheck with eps/2 releases k + (exact) Lap(2/eps), k the 1-sensitive
distance bound of Lemma 3.6 with delta_tilde = delta / (8 e^{eps/2}); if it passes, the restricted
exponential mechanism with eps/2 samples a depth in {m/4, ..., m/2} with P[i] ~ W_i exp(eps/2 * i / 2)
(Algorithm 3's weights) and a uniform point of exactly that depth (Algorithm 4). Total (eps, delta)-DP.
The depth is drawn exactly (`marginals.exact.exponential_choice`, run at eps/2 - EM_ROUNDING for its
2^-40 rounding of log-weights), not by float racing; the point inside the chosen region is a
continuous draw (uniform floats), as in the paper.

Why Algorithm 3's weights and not the monotone exp(eps/2 * i) of section 3.3.1: dropping the factor
2 of the exponential mechanism needs a score that only grows from D to D + row, which holds when a
neighbour adds a whole *model*. Under add/remove one *row* the row's subset refits its model in
place (a swap), and depth falls by one on one side of the moved model and rises on the other. The
output density exp(w depth(x)) / Z then moves by up to w through depth and w through Z: a privacy
loss of up to 2w where both densities are positive (plus the restriction's edge, which the PTR
step pays for), eps/2 for Algorithm 3's w = eps/4 but eps for the monotone w = eps/2. The exact
1-D computation is `ddssp.baselines.tukey_loss`: at m = 400, eps = ln 3 the monotone weights lose
up to 1.099 = eps, more than the 0.549 = eps/2 charged, Algorithm 3's at most 0.549.
``monotone=True`` is kept for comparison and audits only: it warns (`MonotoneWeightsWarning`) and
the fit is not private under row-level neighbours.

A run returns the released coefficients and the PTR outcome only: the exact distance k, the
volumes and the sampled depth are private (the depth together with the point tells D from D + row:
a point of depth i under D has depth i +- 1 under D' near the moved model) and are never returned.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from marginals.exact import EM_ROUNDING, exponential_choice
from marginals.lattice import lattice_laplace
from marginals.randomness import RandomSource

PTR_BITS = 20  # the PTR distance is noised in units of 2^-20 (see the module docstring)


def partition_models(X: np.ndarray, y: np.ndarray, n_models: int, rng: RandomSource) -> np.ndarray:
    """(m, d) minimum-norm OLS fits on a uniformly random balanced partition of the rows.

    Rows are shuffled and dealt round-robin, so subset sizes differ by at most one and no row is
    dropped. A uniform balanced partition of D + x arises from one of D by adding x to one of its
    smaller subsets, so a neighbour changes exactly one model (the privacy argument needs no more).
    """
    n, d = X.shape
    m = int(n_models)
    if m < 4 or m % 2:
        raise ValueError(f"the number of models must be an even integer >= 4, got {n_models}")
    if n // m < d:  # the message names the rule, never n (a private count)
        raise ValueError(
            f"too few rows: each of the {m} subsets needs at least one sample per feature (n_features = {d}, so "
            f"n_samples >= {m * d}); choose n_models <= n_samples / {d} (even, >= 4), or encode fewer features "
            "(drop columns, fewer levels)"
        )
    order = rng.permutation(n)
    q, r = divmod(n, m)
    models = np.empty((m, d))
    # subsets 0..r-1 get q+1 rows (positions k, k+m, ...), the others q rows: two batched solves
    for first, count, size in ((0, r, q + 1), (r, m - r, q)):
        if count == 0:
            continue
        idx = np.arange(first, first + count)[:, None] + m * np.arange(size)[None, :]
        rows = order[idx]
        pinv = np.linalg.pinv(X[rows])  # (count, d, size): batched minimum-norm least squares
        models[first : first + count] = np.einsum("kds,ks->kd", pinv, y[rows])
    return models


def sorted_coordinates(models: np.ndarray) -> np.ndarray:
    """S: the (d, m) matrix of the models' coordinates, every row sorted ascending."""
    return np.sort(np.asarray(models, dtype=np.float64).T, axis=1)


def approximate_depth(models: np.ndarray, point: np.ndarray) -> int:
    """Approximate Tukey depth (Def. 2.5): min over coordinates of min(#models <=, #models >=)."""
    models = np.asarray(models, dtype=np.float64)
    point = np.asarray(point, dtype=np.float64)
    below = np.sum(models <= point[None, :], axis=0)
    above = np.sum(models >= point[None, :], axis=0)
    return int(np.min(np.minimum(below, above)))


def _sides(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per dimension and depth i = 1..m/2 (columns): side of depth >= i, of depth >= i+1, and
    the length where the dimension's depth is exactly i."""
    d, m = S.shape
    h = m // 2
    lower, upper = S[:, :h], S[:, ::-1][:, :h]  # S_{j,i} and S_{j,m-i+1}
    side = upper - lower
    side_next = np.zeros_like(side)
    side_next[:, :-1] = side[:, 1:]
    exact = np.empty_like(side)
    exact[:, :-1] = (lower[:, 1:] - lower[:, :-1]) + (upper[:, :-1] - upper[:, 1:])
    exact[:, -1] = side[:, -1]  # depth m/2 is the maximum: its whole box has depth exactly m/2
    return side, side_next, exact


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(x, 0.0))


def log_volumes(S: np.ndarray) -> np.ndarray:
    """log V_i for i = 1..m/2 (array position i - 1): the volume of approximate depth >= i."""
    return np.sum(_log(_sides(S)[0]), axis=0)


def log_region_volumes(S: np.ndarray) -> np.ndarray:
    """(d, m/2) array of log vol(C_{j,i}): depth > i in dims < j, exactly i in dim j, >= i after."""
    side, side_next, exact = (_log(a) for a in _sides(S))
    zero = np.zeros((1, side.shape[1]))
    before = np.cumsum(np.vstack([zero, side_next[:-1]]), axis=0)  # sum over j' < j (no -inf - -inf)
    after = np.cumsum(np.vstack([zero, side[:0:-1]]), axis=0)[::-1]  # sum over j' > j
    return before + exact + after


def log_exact_volumes(S: np.ndarray) -> np.ndarray:
    """log W_i for i = 1..m/2: the volume of approximate depth exactly i."""
    return logsumexp(log_region_volumes(S), axis=0)


def ptr_distance(log_vol: np.ndarray, epsilon: float, delta_tilde: float, t: int) -> int:
    """Lemma 3.6: the largest k in {0..t-1} with some g >= 1 such that
    V_{t-k-1} / V_{t+k+g+1} * exp(-epsilon g / 2) <= delta_tilde, or -1 if there is none.

    ``log_vol[i - 1]`` is log V_i; V_0 is infinite and V_i = 0 beyond m/2. For each k the best g
    comes from a suffix maximum of log V_j + epsilon j / 2, so all k are checked in O(m).
    """
    log_vol = np.asarray(log_vol, dtype=np.float64)
    h = log_vol.size
    j = np.arange(1, h + 1)
    score = log_vol + epsilon * j / 2
    suffix = np.maximum.accumulate(score[::-1])[::-1]  # suffix[s - 1] = max_{j >= s} score_j
    best = -1
    for k in range(t):
        low, high = t - k - 1, t + k + 2  # V_low over V_j for j >= high
        if low < 1 or high > h:
            continue  # V_0 = inf, or no j <= m/2 left
        if not (np.isfinite(log_vol[low - 1]) and np.isfinite(suffix[high - 1])):
            continue
        lhs = log_vol[low - 1] - suffix[high - 1] + epsilon * (t + k + 1) / 2
        if lhs <= math.log(delta_tilde):
            best = k
    return best


def racing_sample(log_weights: np.ndarray, rng: RandomSource) -> int:
    """Index i with probability proportional to exp(log_weights[i]) (racing / Gumbel-max:
    argmin log log(1/U_i) - log w_i); -inf weights are never chosen."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if not np.any(np.isfinite(log_weights)):
        raise ValueError("racing_sample: every weight is zero")
    u = rng.random(log_weights.shape)
    with np.errstate(divide="ignore"):  # u = 0 (probability 2^-53) gives +inf: that entry loses
        race = np.log(-np.log(u)) - log_weights
    return int(np.argmin(race))


class MonotoneWeightsWarning(UserWarning):
    """TukeyEM with ``monotone=True``: its depth weights are not private under row-level neighbours."""


def warn_monotone() -> None:
    """Warn that the monotone weights exp(epsilon i) are not (epsilon, delta)-DP for add/remove one row."""
    warnings.warn(
        "TukeyEM monotone=True samples depths with weight exp(eps/2 * i), private only when a neighbour adds a "
        "whole model; adding a row swaps one model in place and the privacy loss reaches eps, not eps/2: the "
        "fit is not private under row-level neighbours (use monotone=False, the default)",
        MonotoneWeightsWarning,
        stacklevel=3,
    )


def depth_log_weights(log_exact: np.ndarray, t: int, epsilon: float, monotone: bool = False) -> np.ndarray:
    """Unnormalised log P[i] for the depths i = t..m/2: log W_i + epsilon i / 2 (Algorithm 3, the
    default) or log W_i + epsilon i (monotone: not private under row-level neighbours)."""
    depths = np.arange(t, log_exact.size + 1)
    factor = epsilon if monotone else epsilon / 2
    return log_exact[t - 1 :] + factor * depths


def sample_point_with_depth(S: np.ndarray, depth: int, rng: RandomSource) -> np.ndarray:
    """Algorithm 4: a uniform point of approximate depth exactly ``depth`` (1 <= depth <= m/2)."""
    d, m = S.shape
    h, i = m // 2, int(depth)
    if not 1 <= i <= h:
        raise ValueError(f"depth must lie in 1..{h}, got {depth}")
    low, high = S[:, i - 1], S[:, m - i]  # S_{j,i}, S_{j,m-i+1}
    u = rng.random(d)
    if i == h:  # the deepest box: every point in it has depth exactly m/2
        return low + (high - low) * u
    inner_low, inner_high = S[:, i], S[:, m - i - 1]  # S_{j,i+1}, S_{j,m-i}
    star = racing_sample(log_region_volumes(S)[:, i - 1], rng)
    point = np.where(np.arange(d) < star, inner_low + (inner_high - inner_low) * u, low + (high - low) * u)
    left, right = inner_low[star] - low[star], high[star] - inner_high[star]
    v = rng.random() * (left + right)  # one uniform over the two pieces, by length
    if v < left:
        point[star] = low[star] + v  # [S_i, S_{i+1})
    else:
        point[star] = high[star] - (v - left)  # (S_{m-i}, S_{m-i+1}]
    return point


@dataclass(frozen=True)
class TukeyResult:
    """The released outcome of one TukeyEM run: ``coef`` is None when the PTR check failed.

    Only what the guarantee covers: the coefficients, the PTR outcome and its noisy distance (the
    Laplace release), the public threshold and m. Never the exact distance, volumes or depth.
    """

    coef: np.ndarray | None
    passed: bool
    noisy_distance: float
    threshold: float
    n_models: int


def ptr_threshold(epsilon_ptr: float, delta: float) -> float:
    """The PTR pass threshold log(1 / (2 delta)) / epsilon_ptr (Algorithm 1, line 3)."""
    return math.log(1.0 / (2.0 * delta)) / epsilon_ptr


def ptr_noisy_distance(distance: int, epsilon_ptr: float, delta: float, rng: RandomSource) -> tuple[float, float]:
    """(noisy distance, pass threshold) of the exact PTR test: pass iff noisy >= threshold (see the docstring)."""
    noisy, t = lattice_laplace(rng, np.array([int(distance)]), epsilon_ptr, PTR_BITS)
    a = math.exp(-1.0 / t)
    m = math.ceil(t * (math.log(1.0 / delta) - math.log1p(a))) + 1
    return float(noisy[0]) / 2**PTR_BITS, m / 2**PTR_BITS


def tukey_em(
    X: np.ndarray,
    y: np.ndarray,
    n_models: int,
    epsilon: float,
    delta: float,
    rng: RandomSource,
    monotone: bool = False,
    jitter: float = 1e-10,
) -> TukeyResult:
    """Algorithm 2: (epsilon, delta)-DP linear regression coefficients, or coef None if PTR fails.

    ``jitter`` adds jitter * U(0, 1) to every model coordinate (data-independent) so that no
    region has zero volume (ties, e.g. coefficient 0 of a level absent from many subsets).
    ``monotone=True`` (not private under row-level neighbours) warns `MonotoneWeightsWarning`.
    """
    if monotone:
        warn_monotone()
    models = partition_models(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), n_models, rng)
    if jitter:
        models = models + jitter * rng.random(models.shape)
    S = sorted_coordinates(models)
    m = S.shape[1]
    t = m // 4
    eps_half = epsilon / 2
    log_vol = log_volumes(S)
    distance = ptr_distance(log_vol, eps_half, delta / (8 * math.exp(eps_half)), t)
    noisy, threshold = ptr_noisy_distance(distance, eps_half, delta, rng)
    if noisy < threshold:
        return TukeyResult(None, False, float(noisy), threshold, m)
    weights = depth_log_weights(log_exact_volumes(S), t, eps_half - EM_ROUNDING, monotone)
    possible = np.flatnonzero(np.isfinite(weights))  # depths of empty regions have probability exactly 0
    if not possible.size:
        raise ValueError("TukeyEM: every depth region of the restricted range is empty")
    depth = t + int(possible[exponential_choice(rng, weights[possible])])
    coef = sample_point_with_depth(S, depth, rng)
    return TukeyResult(coef, True, float(noisy), threshold, m)
