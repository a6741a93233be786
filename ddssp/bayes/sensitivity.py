"""Joint L2 sensitivities of released sufficient statistics and the analytic Gaussian mechanism.

Sensitivities (replace-one-record neighbours, rows with ||x|| <= R, as in Kulkarni et al. 2021):

- logistic, m = 2 (Paper A, Lemma 3.3): statistics [y x, t2(x)] with noise sigma1 on y x and
  sigma2 on t2, seen as an isotropic mechanism with noise sigma1 on [y x, (sigma1/sigma2) t2(x)].
  With c = sigma1^2 / sigma2^2 and t = <x, x'>:  Delta^2 = max_{|t| <= R^2} 2R^2 + 2|t| + 2cR^4 - 2ct^2.
  The lemma's closed form (maximiser |t*| = 1/(2c)) is used only when t* is feasible; otherwise
  the maximum sits at |t| = R^2 (the lemma's value is then a loose bound: erratum in the notes).
- general degree m with common noise: Delta^2 = max_t sum_{i<=m} (2 R^{2i} - 2 t^i).
- Poisson (Lemma 3.5) and linear regression under local noise (Paper B, Lemma 3.1 / Cor. 3.1).

t2(x) is released *unscaled* (vech(x x^T), no sqrt(2) on cross terms): its distance is never above
the sqrt(2)-scaled one, for which the identities above are exact, so these Delta stay valid bounds.

`analytic_gaussian_sigma` is Balle & Wang (2018, Alg. 1) solved by root finding: the smallest sigma
with Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq, minimize
from scipy.special import log_ndtr


def logistic_sensitivity(R: float = 1.0, sigma1: float = 1.0, sigma2: float = 1.0, exact: bool = True) -> float:
    """Delta of [y x, t2(x)] in units of sigma1 (Lemma 3.3); ``exact`` constrains t to [-R^2, R^2]."""
    _positive(R=R, sigma1=sigma1, sigma2=sigma2)
    c = sigma1**2 / sigma2**2
    t_star = 1.0 / (2.0 * c)
    if exact and t_star > R**2:
        t_star = R**2
    return math.sqrt(2 * R**2 + 2 * t_star + 2 * c * R**4 - 2 * c * t_star**2)


def degree_m_sensitivity(m: int, R: float = 1.0) -> tuple[float, float]:
    """(Delta, t*) for the degree-m PASS-GLM statistics [t_1..t_m] with common noise (Paper A, general m)."""
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    _positive(R=R)
    # minimise q(t) = sum_{i<=m} t^i over [-R^2, R^2]: stationary points and the two ends
    q = np.polynomial.Polynomial([0.0] + [1.0] * m)
    roots = q.deriv().roots() if m > 1 else np.array([])
    cands = [-(R**2), R**2] + [float(r.real) for r in roots if abs(r.imag) < 1e-12 and abs(r.real) <= R**2]
    t = min(cands, key=lambda s: q(s))
    delta_sq = sum(2 * R ** (2 * i) for i in range(1, m + 1)) - 2 * q(t)
    return math.sqrt(delta_sq), t


def poisson_sensitivity(R_x: float = 1.0, R_y: float = 1.0, sigmas: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)) -> float:
    """Lemma 3.5: Delta of the Poisson statistics [x, t2(x), y x, y t2(x)] in units of sigma_1."""
    s1, s2, s3, s4 = sigmas
    c2, c3, c4 = s1**2 / s2**2, (s1**2 / s3**2) * R_y**2, (s1**2 / s4**2) * R_y**2
    return (2 * (c2 + c4) * R_x**2 + c3 + 1) / math.sqrt(2 * (c2 + c4))


def linear_sensitivity_bound(R: float = 1.0, R_y: float = 1.0, sigmas: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> float:
    """Paper B, Lemma 3.1: the (valid, not always tight) bound on Delta of [t2(x), y x, y^2] in units of sigma_1."""
    s1, s2, s3 = sigmas
    return math.sqrt(
        s1**4 * R_y**4 / (2 * s2**4) + 2 * R**4 + 2 * s1**2 * R_y**2 * R**2 / s2**2 + s1**2 * R_y**4 / s3**2
    )


@lru_cache(maxsize=64)
def linear_sensitivity(R: float = 1.0, R_y: float = 1.0) -> float:
    """Exact Delta of [t2(x), y x, y^2] with common noise, ||x|| <= R, |y| <= R_y (sqrt(2)-scaled t2).

    For norms R the squared distance is 2R^4 - 2t^2 + R^2 (y^2 + y'^2) - 2 y y' t + (y^2 - y'^2)^2,
    maximised over t in [-R^2, R^2] in closed form and over (y, y') numerically.
    """
    _positive(R=R, R_y=R_y)

    def best(v: np.ndarray) -> float:
        y, yp = np.clip(v, -R_y, R_y)
        t = float(np.clip(-y * yp / 2.0, -(R**2), R**2))
        return 2 * R**4 - 2 * t**2 + R**2 * (y**2 + yp**2) - 2 * y * yp * t + (y**2 - yp**2) ** 2

    grid = np.linspace(-R_y, R_y, 81)
    start = max(((a, b) for a in grid for b in grid), key=lambda v: best(np.array(v)))
    res = minimize(lambda v: -best(v), np.array(start), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14})
    return math.sqrt(max(best(np.array(start)), -res.fun))


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact delta of the Gaussian mechanism at ``epsilon`` (Balle & Wang 2018, Thm. 8)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    first = math.exp(log_ndtr(a - b))
    second = math.exp(epsilon + log_ndtr(-a - b))
    return max(0.0, first - second)


@lru_cache(maxsize=256)
def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP (analytic Gaussian mechanism)."""
    _positive(sensitivity=sensitivity, epsilon=epsilon)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    f = lambda s: math.log(max(gaussian_delta(s, sensitivity, epsilon), 1e-300)) - math.log(delta)
    lo, hi = 1e-3 * sensitivity, sensitivity
    while f(hi) > 0:
        hi *= 2
    while f(lo) < 0:
        lo /= 2
    sigma = brentq(f, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:  # round toward safety
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The classical calibration Delta sqrt(2 log(1.25/delta)) / epsilon (valid for epsilon < 1)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def _positive(**values: float) -> None:
    for name, v in values.items():
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a finite number > 0, got {v}")
