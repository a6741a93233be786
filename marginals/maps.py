"""Privacy maps: for each noise mechanism, the one formula from its noise scale to its privacy loss.

In the spirit of OpenDP's measurements, a mechanism's description carries its map, and every
sampler, accountant and estimator asks it instead of retyping the formula:

- `GaussianMap(sensitivity)`: Gaussian noise of std sigma on a statistic of L2 sensitivity Delta
  is rho-zCDP with rho = Delta^2 / (2 sigma^2) (Bun & Steinke 2016, Prop. 1.6). The discrete
  Gaussian N_Z(0, s^2) on an integer statistic satisfies the same bound with s^2 its variance
  parameter (Canonne, Kamath & Steinke 2020, Thm 14). Two forms: ``rho`` / ``sigma`` in floats
  (continuous noise, scales of a budget split), and ``rho_exact`` / ``variance_exact`` in
  rationals, for the exact samplers whose variance is a `Fraction` (the charge is that rational
  rounded to a float by the caller, so no float error enters the proof).
- `ExponentialMap`: the exponential mechanism with parameter epsilon (score sensitivity folded
  in) is epsilon-bounded-range, hence epsilon^2 / 8-zCDP (Cesar & Rogers 2021, Lemma 3.2).
- `LaplaceMap(sensitivity)`: discrete Laplace noise of integer scale t on an integer statistic
  of L1 sensitivity Delta_1 is (Delta_1 / t)-DP (pure epsilon; CKS 2020, Algorithm 2's law).

Each float formula keeps the operation order the call sites used, so the charges (hashed by
the release fingerprints) are the same floats, bit for bit.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["ExponentialMap", "GaussianMap", "LaplaceMap"]


@dataclass(frozen=True)
class GaussianMap:
    """Gaussian noise on a statistic of L2 ``sensitivity``: std sigma costs Delta^2 / (2 sigma^2) zCDP.

    >>> GaussianMap(1.0).rho(10.0)
    0.005
    """

    sensitivity: float | Fraction = 1.0

    def __post_init__(self) -> None:
        if not (self.sensitivity >= 0 and math.isfinite(self.sensitivity)):
            raise ValueError(f"sensitivity must be finite and >= 0, got {self.sensitivity}")

    def rho(self, sigma: float) -> float:
        """zCDP cost of noise std ``sigma``: Delta^2 / (2 sigma^2), in floats."""
        return self.sensitivity**2 / (2 * sigma**2)

    def sigma(self, rho: float) -> float:
        """The std whose cost is ``rho``: sqrt(Delta^2 / (2 rho)), in floats (inverse of `rho`)."""
        return math.sqrt(self.sensitivity**2 / (2 * rho))

    def rho_exact(self, variance: Fraction | int) -> Fraction:
        """zCDP cost of a (discrete) Gaussian of rational ``variance``: Delta^2 / (2 variance), exactly."""
        return Fraction(self.sensitivity) ** 2 / (2 * Fraction(variance))

    def variance_exact(self, rho: float | Fraction) -> Fraction:
        """The variance whose cost is exactly ``rho``: Delta^2 / (2 rho) (any larger one costs less)."""
        return Fraction(self.sensitivity) ** 2 / (2 * Fraction(rho))


@dataclass(frozen=True)
class ExponentialMap:
    """The exponential mechanism run with parameter epsilon: epsilon-bounded range, epsilon^2 / 8 zCDP.

    >>> ExponentialMap().rho(2.0)
    0.5
    """

    def rho(self, epsilon: float) -> float:
        """zCDP cost of one selection at ``epsilon``: epsilon^2 / 8."""
        return epsilon**2 / 8

    def epsilon(self, rho: float) -> float:
        """The epsilon whose selection costs ``rho``: sqrt(8 rho) (inverse of `rho`)."""
        return math.sqrt(8 * rho)


@dataclass(frozen=True)
class LaplaceMap:
    """Discrete Laplace(t) noise on an integer statistic of L1 ``sensitivity`` (integer units): (Delta_1 / t)-DP.

    >>> LaplaceMap(2).scale(0.5), LaplaceMap(2).epsilon(4)
    (4, Fraction(1, 2))
    """

    sensitivity: int

    def __post_init__(self) -> None:
        if not self.sensitivity >= 1:
            raise ValueError(f"the Laplace map needs an integer sensitivity >= 1, got {self.sensitivity!r}")
        object.__setattr__(self, "sensitivity", operator.index(self.sensitivity))

    def epsilon(self, scale: int) -> Fraction:
        """The pure-DP loss of integer scale t: Delta_1 / t, exactly."""
        return Fraction(self.sensitivity, int(scale))

    def scale(self, epsilon: float) -> int:
        """The smallest integer scale t = ceil(Delta_1 / epsilon) whose loss is <= ``epsilon``."""
        t = math.ceil(Fraction(self.sensitivity) / Fraction(float(epsilon)))
        assert self.epsilon(t) <= Fraction(float(epsilon))
        return t
