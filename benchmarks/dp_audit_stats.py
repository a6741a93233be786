"""The statistics of the empirical DP audit (`benchmarks.dp_audit`): Clopper-Pearson bounds, the
epsilon lower bound of a threshold test, and the calibrate-then-evaluate split of the runs.

A test "output in S" on neighbours D, D' with FPR = P[M(D) in S] and FNR = P[M(D') not in S]
bounds every (eps, delta)-DP mechanism by eps >= max(log((1 - delta - FNR) / FPR),
log((1 - delta - FPR) / FNR)); see `eps_lower_bounds` for how the rates' uncertainty enters.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta

N_THRESHOLDS = 400  # candidate thresholds scanned on the calibration half
BROKEN_FACTOR = 4.0  # the broken controls divide the noise by this (or multiply the EM's epsilon)


def clopper_pearson_upper(k, n, level: float):
    """One-sided exact (Clopper-Pearson) upper confidence bound on p from k successes in n trials:
    P[p > bound] <= ``level`` for every p. Works elementwise on arrays."""
    k, n = np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64)
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    if not (0 < level < 1):
        raise ValueError(f"level must lie in (0, 1), got {level}")
    full = k >= n
    bound = np.where(full, 1.0, beta.ppf(1.0 - level, k + 1, np.where(full, 1, n - k)))
    return float(bound) if bound.ndim == 0 else bound


def eps_lower_bounds(false_pos, n_neg, false_neg, n_pos, delta: float, confidence: float = 0.95):
    """Epsilon lower bound from a test's error counts (FPR = false_pos / n_neg on D, FNR =
    false_neg / n_pos on D'), valid with probability >= ``confidence``:

        max(log((1 - delta - FNR_u) / FPR_u), log((1 - delta - FPR_u) / FNR_u), 0)

    with FPR_u, FNR_u the one-sided Clopper-Pearson upper bounds at level (1 - confidence) / 2
    each (so both hold at once with probability >= confidence). Elementwise on arrays.
    """
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    level = (1.0 - confidence) / 2.0
    fpr = np.asarray(clopper_pearson_upper(false_pos, n_neg, level))
    fnr = np.asarray(clopper_pearson_upper(false_neg, n_pos, level))
    best = np.zeros(np.broadcast(fpr, fnr).shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        for num, den in ((1.0 - delta - fnr, fpr), (1.0 - delta - fpr, fnr)):
            ok = (num > 0) & (den > 0)
            best = np.where(ok, np.maximum(best, np.log(np.where(ok, num, 1.0) / np.where(ok, den, 1.0))), best)
    return best


def eps_lower_bound(false_pos: int, n_neg: int, false_neg: int, n_pos: int, delta: float,
                    confidence: float = 0.95) -> float:
    """`eps_lower_bounds` for one test (a float)."""
    return float(eps_lower_bounds(false_pos, n_neg, false_neg, n_pos, delta, confidence))


def _best_threshold(above0: np.ndarray, n0: int, above1: np.ndarray, n1: int, delta: float,
                    confidence: float) -> tuple[int, bool, float]:
    """(index, upper, bound) of the test maximising the bound: upper=True rejects on {T > t_j}."""
    above0, above1 = np.asarray(above0, dtype=np.int64), np.asarray(above1, dtype=np.int64)
    # S = {T > t}: FP = D runs in S, FN = D' runs outside S; upper=False tests the complement
    upper = eps_lower_bounds(above0, n0, n1 - above1, n1, delta, confidence)
    lower = eps_lower_bounds(n0 - above0, n0, above1, n1, delta, confidence)
    j_up, j_low = int(np.argmax(upper)), int(np.argmax(lower))
    if upper[j_up] >= lower[j_low]:
        return j_up, True, float(upper[j_up])
    return j_low, False, float(lower[j_low])


def audit_counts(thresholds: np.ndarray, cal: tuple, ev: tuple, delta: float, confidence: float) -> dict:
    """Choose the test on the calibration counts, bound epsilon on the evaluation counts.

    ``cal`` and ``ev`` are (above0, n0, above1, n1): for every candidate threshold t_j, how many
    of the n0 runs on D and of the n1 runs on D' have T > t_j.
    """
    j, upper, _ = _best_threshold(*cal, delta, confidence)
    above0, n0, above1, n1 = ev
    fp = int(above0[j]) if upper else n0 - int(above0[j])
    fn = n1 - int(above1[j]) if upper else int(above1[j])
    return {
        "eps_lb": eps_lower_bound(fp, n0, fn, n1, delta, confidence),
        "threshold": float(thresholds[j]), "test": "T > t" if upper else "T <= t",
        "fpr": fp / n0, "fnr": fn / n1,
    }


def candidate_thresholds(values: np.ndarray, count: int = N_THRESHOLDS) -> np.ndarray:
    """Up to ``count`` distinct quantiles of the pooled calibration statistics."""
    return np.unique(np.quantile(values, np.linspace(0.0, 1.0, count), method="inverted_cdf"))


def count_above(samples: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many samples exceed each threshold."""
    ordered = np.sort(samples)
    return ordered.size - np.searchsorted(ordered, thresholds, side="right")


def audit_samples(stat0: np.ndarray, stat1: np.ndarray, delta: float, confidence: float) -> dict:
    """The threshold audit on statistics of N runs on D (stat0) and N runs on D' (stat1)."""
    stat0, stat1 = np.asarray(stat0, dtype=np.float64), np.asarray(stat1, dtype=np.float64)
    h0, h1 = stat0.size // 2, stat1.size // 2  # runs are i.i.d.: the first half calibrates
    cal0, ev0, cal1, ev1 = stat0[:h0], stat0[h0:], stat1[:h1], stat1[h1:]
    thresholds = candidate_thresholds(np.concatenate([cal0, cal1]))
    cal = (count_above(cal0, thresholds), cal0.size, count_above(cal1, thresholds), cal1.size)
    ev = (count_above(ev0, thresholds), ev0.size, count_above(ev1, thresholds), ev1.size)
    return audit_counts(thresholds, cal, ev, delta, confidence)
