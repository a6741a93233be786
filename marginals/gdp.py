"""Gaussian differential privacy (mu-GDP, Dong, Roth & Su 2022) and its exact (eps, delta) profile.

A mechanism is mu-GDP when telling neighbours apart from its output is no easier than telling
N(0, 1) from N(mu, 1). The Gaussian mechanism h(D) + (Delta / mu) N(0, I) (Delta: L2 or Frobenius
sensitivity) is mu-GDP, and composition adds mu^2: sqrt(sum_i mu_i^2). Corollary 2.13 of Dong et
al.: mu-GDP holds if and only if (eps, delta(eps))-DP holds for every eps >= 0 with

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),

so the conversion below loses nothing (unlike a detour through zCDP). A mu-GDP Gaussian
mechanism is also (mu^2 / 2)-zCDP, which is how it composes with the `Accountant` if needed.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from .privacy import check_delta, check_epsilon_delta


def _log_delta(mu: float, eps: float) -> float:
    a = log_ndtr(-eps / mu + mu / 2)
    b = eps + log_ndtr(-eps / mu - mu / 2)
    if b >= a:  # only by rounding: delta is positive for every finite eps
        return -math.inf
    return float(a + math.log1p(-math.exp(b - a)))


def gdp_delta(mu: float, eps: float) -> float:
    """The exact delta such that mu-GDP implies (eps, delta)-DP (Dong, Roth & Su, Cor. 2.13)."""
    mu, eps = float(mu), float(eps)
    if not (mu >= 0 and math.isfinite(mu)) or not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"gdp_delta needs finite mu >= 0 and eps >= 0, got mu={mu}, eps={eps}")
    if mu == 0:
        return 0.0
    return math.exp(_log_delta(mu, eps))


def gdp_eps(mu: float, delta: float) -> float:
    """Smallest eps such that mu-GDP implies (eps, delta)-DP (rounded toward safety)."""
    mu, delta = float(mu), check_delta(delta)
    if not (mu >= 0 and math.isfinite(mu)):
        raise ValueError(f"mu must be a finite number >= 0, got {mu}")
    if mu == 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1.0  # delta(eps) decreases in eps
    while gdp_delta(mu, hi) > delta:
        hi *= 2
    f = lambda e: _log_delta(mu, e) - math.log(delta)
    eps = brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    while gdp_delta(mu, eps) > delta:
        eps = math.nextafter(eps, math.inf)
    return eps


def gdp_mu(eps: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (eps, delta)-DP (rounded toward safety)."""
    eps, delta = check_epsilon_delta(eps, delta)
    lo, hi = 1e-3, 1.0  # delta(mu) increases in mu from 0 to 1
    while gdp_delta(hi, eps) <= delta:
        hi *= 2
    while gdp_delta(lo, eps) > delta:
        lo /= 2
    f = lambda m: _log_delta(m, eps) - math.log(delta)
    mu = brentq(f, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    while gdp_delta(mu, eps) > delta:
        mu = math.nextafter(mu, 0.0)
    return mu


def gdp_compose(*mus: float) -> float:
    """mu of the composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2)."""
    if any(not (m >= 0 and math.isfinite(m)) for m in mus):
        raise ValueError(f"every mu must be finite and >= 0, got {mus}")
    return math.sqrt(math.fsum(m * m for m in mus))
