"""Exact noise for real-valued statistics: snap to a lattice gamma * Z, add discrete noise scaled by gamma.

The regression mechanisms (AdaSSP, PMT, TukeyEM's PTR, the Bayesian SSP releases) perturb real
statistics. Float noise (inverse CDF of a 53-bit uniform) can leak through the set of reachable
floats (Mironov 2012). Here every random draw is an exact integer from `marginals.exact`.

Gaussian (`lattice_gaussian`). Let f(D) in R^d with ||f(D) - f(D')||_2 <= Delta for neighbours
and gamma = 2^-k a public step. The snapped statistic F(D) = rint(f(D) / gamma) is an integer
vector; per coordinate |rint(a) - a| <= 1/2, so F(D) - F(D') = (f(D) - f(D')) / gamma + e with
|e_i| <= 1 and, by the triangle inequality,

    ||F(D) - F(D')||_2 <= Delta / gamma + sqrt(d) =: Delta_L        (the rounding folded in).

Release gamma * (F(D) + Z) with Z_i i.i.d. discrete Gaussian N_Z(0, s^2): by Canonne, Kamath &
Steinke (2020, Thm 14; any real Delta_L bounding the L2 distance of integer vectors) this is
Delta_L^2 / (2 s^2)-zCDP. gamma * (F + Z) is computed exactly in float64 (a power-of-two scaling
of an integer below 2^53), a deterministic function of the integer vector F + Z: post-processing.
For a budget rho the variance s^2 is the smallest "t c" (below) >= Delta_L^2 / (2 rho), so the
charge Delta_L^2 / (2 s^2) (`marginals.maps.GaussianMap`), computed in rationals and rounded up to a
float, is <= rho; callers charge that value. gamma is chosen so that sqrt(d) gamma <= 2^-16 Delta
where the sampler's range allows (the rounding then costs at most 2^-16 of the sensitivity), see
`lattice_step`.

Sampler: CKS Algorithm 3 accepts a discrete Laplace(t) proposal y with probability
exp(-(|y| - s^2/t)^2 / (2 s^2)); the output law is N_Z(0, s^2) for any integer t >= 1 (t near s
only makes it fast). With s^2 = t c (t = floor(sqrt(target)) + 1, c = ceil(target / t)) the
exponent is (|y| - c)^2 / (2 t c): integers, denominator 2 t c < 2^62 for s up to 2^30, so the
vectorized int64 Bernoulli(exp(-x)) of `marginals.exact` applies (no float anywhere).

Laplace (`lattice_laplace`): an integer statistic with L1 sensitivity Delta_1, released as
(F + Y) / 2^k with F = 2^k f and Y discrete Laplace(t) (P(y) ~ exp(-|y| / t)), is
(2^k Delta_1 / t)-DP (CKS Algorithm 2's law; the ratio of probabilities at y and y + w is at most
exp(|w| / t)). t = ceil(2^k Delta_1 / epsilon) keeps the loss <= epsilon (`marginals.maps.LaplaceMap`).

Not modelled (as in `marginals.exact`): float rounding in computing f itself (relative 1e-16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .exact import discrete_laplace, gaussian_by_rejection
from .maps import GaussianMap, LaplaceMap
from .randomness import RandomSource

#: Largest lattice standard deviation (in lattice units) the vectorized sampler accepts.
MAX_LATTICE_SIGMA = 2.0**29
_MIN_LATTICE_SIGMA = 2.0**12
_ROUNDING_BITS = 16  # sqrt(d) gamma <= 2^-16 Delta where the range allows
_MAX_LATTICE_VALUE = 2.0**52  # |f / gamma| below this: rint and the float output stay exact


def _sqrt_upper(d: int) -> Fraction:
    """A rational upper bound on sqrt(d) (within 2^-20)."""
    return Fraction(math.isqrt(d * 2**40) + 1, 2**20)


def lattice_step(sensitivity: float, dim: int, sigma: float) -> float:
    """The power of two gamma for a statistic of ``dim`` values, L2 ``sensitivity`` and noise std ``sigma``."""
    if not (sensitivity > 0 and sigma > 0 and math.isfinite(sensitivity) and math.isfinite(sigma)):
        raise ValueError(f"lattice noise needs finite sensitivity > 0 and sigma > 0, got {sensitivity}, {sigma}")
    fine = min(sensitivity * 2.0**-_ROUNDING_BITS / math.sqrt(max(dim, 1)), sigma / _MIN_LATTICE_SIGMA)
    coarse = 2.0 * sigma / MAX_LATTICE_SIGMA  # s = sigma / gamma must stay below the sampler's range
    return 2.0 ** math.floor(math.log2(max(fine, coarse)))


def lattice_sensitivity(sensitivity: float, gamma: float, dim: int) -> Fraction:
    """Delta_L = Delta / gamma + sqrt(dim) (rounded up): the L2 sensitivity of the snapped statistic."""
    return Fraction(float(sensitivity)) / Fraction(float(gamma)) + _sqrt_upper(max(int(dim), 1))


def snap(values: np.ndarray, gamma: float) -> np.ndarray:
    """rint(values / gamma) as int64 (gamma a power of two: the division is exact)."""
    scaled = np.asarray(values, dtype=np.float64) / gamma
    if not np.all(np.isfinite(scaled)) or np.any(np.abs(scaled) >= _MAX_LATTICE_VALUE):
        raise ValueError("lattice noise: the statistic is not finite or too large for its lattice step")
    return np.rint(scaled).astype(np.int64)


def tc_variance(target: Fraction) -> tuple[int, int]:
    """(t, c) with t c >= target, t = floor(sqrt(target)) + 1 (target >= 1)."""
    target = Fraction(target)
    t = math.isqrt(math.floor(target)) + 1
    c = math.ceil(target / t)
    return t, c


def discrete_gaussian_tc(source: RandomSource, t: int, c: int, size: int) -> np.ndarray:
    """``size`` exact draws of N_Z(0, t c) (CKS Algorithm 3 with proposal scale t); t c <= 2^61."""
    den = 2 * t * c
    if den > 2**62 or t < 1 or c < 1:
        raise ValueError(f"discrete_gaussian_tc: need 1 <= t, c and 2 t c <= 2^62, got t={t}, c={c}")
    return gaussian_by_rejection(source, t, 1, c, den, size)


def _round_up(value: Fraction) -> float:
    out = float(value)
    return math.nextafter(out, math.inf) if Fraction(out) < value else out


@dataclass(frozen=True)
class LatticeNoise:
    """One lattice Gaussian release: the noisy values and what was used (for the charge and the record)."""

    values: np.ndarray
    gamma: float  # lattice step
    t: int  # variance t c in lattice units
    c: int
    lattice_sensitivity: float  # Delta_L (rounded up)
    rho: float  # Delta_L^2 / (2 t c), rounded up: the zCDP cost actually incurred

    @property
    def sigma(self) -> float:
        """The noise standard deviation actually used, in the statistic's units."""
        return self.gamma * math.sqrt(self.t * self.c)


def lattice_gaussian(
    source: RandomSource, values: np.ndarray, sensitivity: float, rho: float, dim: int | None = None
) -> LatticeNoise:
    """values + exact discrete Gaussian noise on a 2^-k lattice, rho-zCDP for L2 ``sensitivity`` (charge ``.rho``).

    The returned ``rho`` (<= the given one) is what the release costs, rounding included. ``dim``: how
    many values one release covers (default all; e.g. one row's length when each row is a user's report)."""
    values = np.asarray(values, dtype=np.float64)
    rho = float(rho)
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"lattice_gaussian: rho must be a finite number > 0, got {rho}")
    dim = max(values.size if dim is None else int(dim), 1)
    # The step only needs the order of magnitude of the std; this float form (not GaussianMap.sigma's,
    # which can differ in the last bit) is kept because gamma is a power of two chosen from it.
    gamma = lattice_step(sensitivity, dim, sensitivity / math.sqrt(2 * rho))
    delta_l = lattice_sensitivity(sensitivity, gamma, dim)
    lattice_map = GaussianMap(delta_l)
    t, c = tc_variance(lattice_map.variance_exact(rho))
    used = lattice_map.rho_exact(t * c)
    assert used <= Fraction(rho)
    noise = discrete_gaussian_tc(source, t, c, values.size).reshape(values.shape)
    noisy = (snap(values, gamma) + noise).astype(np.float64) * gamma
    return LatticeNoise(noisy, gamma, t, c, _round_up(delta_l), _round_up(used))


def lattice_gaussian_sigma(source: RandomSource, values: np.ndarray, sensitivity: float, sigma: float) -> LatticeNoise:
    """As `lattice_gaussian` for the budget a continuous Gaussian of std ``sigma`` would cost (Delta^2 / (2 sigma^2))."""
    return lattice_gaussian(source, values, sensitivity, GaussianMap(float(sensitivity)).rho(float(sigma)))


def symmetric_lattice_gaussian(source: RandomSource, matrix: np.ndarray, sensitivity: float, rho: float) -> LatticeNoise:
    """A symmetric matrix plus noise on its upper triangle (diagonal included), mirrored: rho-zCDP when
    the upper triangle's L2 sensitivity is at most ``sensitivity`` (e.g. the Frobenius bound)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    p = matrix.shape[0]
    rows, cols = np.triu_indices(p)
    release = lattice_gaussian(source, matrix[rows, cols], sensitivity, rho)
    out = np.empty((p, p))
    out[rows, cols] = release.values
    out[cols, rows] = release.values
    return LatticeNoise(out, release.gamma, release.t, release.c, release.lattice_sensitivity, release.rho)


def lattice_laplace(source: RandomSource, values: np.ndarray, epsilon: float, bits: int = 20) -> tuple[np.ndarray, int]:
    """Integer ``values`` (L1 sensitivity 1) in 2^bits units plus discrete Laplace(t), t = ceil(2^bits / epsilon):
    (noisy integers in 2^-bits units, t). epsilon-DP; divide by 2^bits for the statistic's units."""
    values = np.asarray(values, dtype=np.int64)
    t = LaplaceMap(2**bits).scale(epsilon)
    noise = discrete_laplace(source, t, values.size).reshape(values.shape)
    return values * np.int64(2**bits) + noise, t
