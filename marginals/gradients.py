"""Private gradients of a regression loss on the rows: what a release's Newton refinement measures.

A `RegressionSpec` is public: the target, the loss ("linear": (x.theta - y)^2 / 2; "logistic":
log(1 + exp(-y x.theta)) with y in {-1, +1}), and the encoding of every feature attribute as a
matrix A_j (p_j x m_j), so one row's features are x = [1?, A_1[:, c_1], ..., A_d[:, c_d]] and its
label y = values[c_t]. Two statistics of the private rows are measured (`measure_statistic`):

* the gradient at a public point theta, G(theta) = sum over rows of x l'(x.theta, y), with
  l'(z, y) = z - y (linear) or sigmoid(z) - (y + 1) / 2 (logistic);
* a gradient difference G(theta_b) - G(theta_a) = sum over rows of x (m(x.theta_b) - m(x.theta_a)),
  m(z) = z (linear) or sigmoid(z) (logistic): it does not depend on y.

Sensitivity (add or remove one row; derived here, `gradient_sensitivity`, `difference_sensitivity`):
the statistic moves by one row's term, whose L2 norm is at most ||x||_max times the largest |scalar
factor| over the domain. ||x||_max^2 = [intercept] + sum_j max_c ||A_j[:, c]||^2. The score z = x.theta
ranges over [lo, hi] with lo and hi the sums of each attribute's smallest and largest A_j[:, c].theta_j
(plus the intercept), computed exactly from the public encoding and theta (`score_range`). So

* linear gradient: max(|hi - min y|, |max y - lo|);  logistic gradient: sigmoid(max(-lo, hi)) < 1
  (|sigmoid(z) - t| = sigmoid(-z) for t = 1, sigmoid(z) for t = 0);
* linear difference: max |z_b - z_a| over the range of x.(theta_b - theta_a); logistic difference:
  min(1, max |z_b - z_a| / 4) (sigmoid is 1/4-Lipschitz).

A privacy unit of k rows multiplies each by k (triangle inequality over its rows). Every theta is
public (computed from the release), so adaptive composition of the Gaussian mechanisms applies: each
charge is the Gaussian zCDP cost Delta^2 / (2 sigma^2) on the run's one ledger. The noise is exact
(lattice discrete Gaussian, `marginals.lattice`) unless a seeded benchmark asks for float noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.special import expit

from .domain import Domain
from .lattice import lattice_gaussian
from .maps import GaussianMap
from .privacy import Accountant, BudgetExceeded
from .randomness import RandomSource

#: the losses a `RegressionSpec` may name.
KINDS = ("linear", "logistic")
#: rows encoded at a time when a statistic is summed over the rows (bounds the memory of X).
CHUNK_ROWS = 65_536


@dataclass(frozen=True, eq=False)
class RegressionSpec:
    """A regression loss over a domain's codes: public (target, loss, encoding matrices; see the module docstring)."""

    kind: str
    target: str
    features: tuple[tuple[str, np.ndarray], ...]  # (attribute, A_j of shape (p_j, m_j)) in column order
    target_values: np.ndarray  # y of every target level; NaN: a level whose rows the regression leaves out
    intercept: bool

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        feats = tuple((str(a), np.array(m, dtype=np.float64, ndmin=2)) for a, m in self.features)
        values = np.array(self.target_values, dtype=np.float64).ravel()
        for attr, matrix in feats:
            if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
                raise ValueError(f"the encoding of {attr!r} must be a finite 2-d matrix")
            matrix.flags.writeable = False
        if not feats and not self.intercept:
            raise ValueError("a regression needs at least one feature or an intercept")
        if self.target in {a for a, _ in feats}:
            raise ValueError(f"the target {self.target!r} cannot also be a feature")
        kept = values[~np.isnan(values)]
        if np.any(np.isinf(values)) or kept.size < 2:
            raise ValueError("target_values must hold a finite value (or NaN: rows left out) for at least two levels")
        if self.kind == "logistic" and not np.array_equal(np.unique(kept), [-1.0, 1.0]):
            raise ValueError("a logistic target's values must be -1 and +1 (NaN: rows left out)")
        values.flags.writeable = False
        object.__setattr__(self, "features", feats)
        object.__setattr__(self, "target_values", values)
        object.__setattr__(self, "intercept", bool(self.intercept))

    @property
    def width(self) -> int:
        """p: the number of coefficients (intercept included)."""
        return int(self.intercept) + sum(m.shape[0] for _, m in self.features)

    @property
    def attrs(self) -> tuple[str, ...]:
        """The feature attributes, then the target."""
        return tuple(a for a, _ in self.features) + (self.target,)

    def check_domain(self, domain: Domain) -> None:
        """ValueError unless every attribute is in ``domain`` with as many levels as its matrix has columns."""
        for attr, levels in [(a, m.shape[1]) for a, m in self.features] + [(self.target, self.target_values.size)]:
            if attr not in domain.attrs:
                raise ValueError(f"the regression's attribute {attr!r} is not in the domain {list(domain.attrs)}")
            if domain[attr] != levels:
                raise ValueError(f"the regression encodes {attr!r} with {levels} levels; the domain has {domain[attr]}")

    def max_norm(self) -> float:
        """max ||x|| over the domain."""
        squares = [float(np.max(np.sum(m**2, axis=0))) for _, m in self.features]
        return math.sqrt(math.fsum(squares) + (1.0 if self.intercept else 0.0))

    def score_range(self, theta: np.ndarray) -> tuple[float, float]:
        """(min, max) of x.theta over the domain (exact: each attribute's level is free)."""
        theta = self.check_theta(theta)
        lo = hi = theta[0] if self.intercept else 0.0
        start = int(self.intercept)
        for _, matrix in self.features:
            scores = theta[start:start + matrix.shape[0]] @ matrix
            lo, hi, start = lo + float(scores.min()), hi + float(scores.max()), start + matrix.shape[0]
        return lo, hi

    def check_theta(self, theta: Any) -> np.ndarray:
        """``theta`` as a finite float vector of length `width`."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.width,) or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be a finite vector of length {self.width}, got shape {theta.shape}")
        return theta

    def design(self, codes: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) of rows given as integer codes per attribute."""
        n = len(codes[self.target])
        blocks = [np.ones((n, 1))] if self.intercept else []
        blocks += [matrix.T[np.asarray(codes[attr])] for attr, matrix in self.features]
        return np.hstack(blocks), self.target_values[np.asarray(codes[self.target])]


def gradient_sensitivity(spec: RegressionSpec, theta: np.ndarray, rows_per_unit: float = 1.0) -> float:
    """L2 sensitivity of `gradient` at ``theta`` (see the module docstring)."""
    lo, hi = spec.score_range(theta)
    if spec.kind == "linear":
        ys = spec.target_values[~np.isnan(spec.target_values)]
        factor = max(abs(hi - ys.min()), abs(ys.max() - lo))
    else:
        factor = float(expit(max(-lo, hi)))
    return rows_per_unit * spec.max_norm() * factor


def difference_sensitivity(spec: RegressionSpec, theta_a: np.ndarray, theta_b: np.ndarray,
                           rows_per_unit: float = 1.0) -> float:  # fmt: skip
    """L2 sensitivity of `gradient_difference` between ``theta_a`` and ``theta_b``."""
    step = spec.check_theta(theta_b) - spec.check_theta(theta_a)
    lo, hi = spec.score_range(step)
    reach = max(abs(lo), abs(hi))
    factor = reach if spec.kind == "linear" else min(1.0, reach / 4.0)
    return rows_per_unit * spec.max_norm() * factor


def _link(spec: RegressionSpec, z: np.ndarray) -> np.ndarray:
    return z if spec.kind == "linear" else expit(z)


def _row_sums(spec: RegressionSpec, codes: Mapping[str, np.ndarray], weight) -> np.ndarray:
    """sum over the rows the regression keeps (target value not NaN) of x * weight(X, y), in chunks of
    `CHUNK_ROWS` rows."""
    n = len(codes[spec.target])
    total = np.zeros(spec.width)
    for start in range(0, n, CHUNK_ROWS):
        X, y = spec.design({a: np.asarray(codes[a])[start:start + CHUNK_ROWS] for a in spec.attrs})
        kept = ~np.isnan(y)
        total += X[kept].T @ weight(X[kept], y[kept])
    return total


def gradient(spec: RegressionSpec, codes: Mapping[str, np.ndarray], theta: np.ndarray) -> np.ndarray:
    """The loss's gradient at ``theta`` summed over the rows (``codes``: integer codes per attribute)."""
    theta = spec.check_theta(theta)
    if spec.kind == "linear":
        return _row_sums(spec, codes, lambda X, y: X @ theta - y)
    return _row_sums(spec, codes, lambda X, y: expit(X @ theta) - (y + 1.0) / 2.0)


def gradient_difference(spec: RegressionSpec, codes: Mapping[str, np.ndarray], theta_a: np.ndarray,
                        theta_b: np.ndarray) -> np.ndarray:  # fmt: skip
    """gradient(theta_b) - gradient(theta_a) summed over the rows, without the labels."""
    theta_a, theta_b = spec.check_theta(theta_a), spec.check_theta(theta_b)
    return _row_sums(spec, codes, lambda X, y: _link(spec, X @ theta_b) - _link(spec, X @ theta_a))


@dataclass(frozen=True)
class NoisyStatistic:
    """One measured statistic: its noisy values, the noise's standard deviation and the sensitivity priced;
    ``kind``: "gradient" (at its point) or "difference" (the gradient at its point minus the first point's)."""

    label: str
    values: np.ndarray
    sigma: float
    sensitivity: float
    rho: float
    kind: str = "gradient"


def measure_statistic(values: np.ndarray, sensitivity: float, rho: float, rng: RandomSource, ledger: Accountant,
                      label: str, exact: bool = True, rows_per_unit: float = 1.0,
                      kind: str = "gradient") -> NoisyStatistic:  # fmt: skip
    """``values`` plus Gaussian noise for L2 ``sensitivity`` at zCDP cost at most ``rho``, charged to ``ledger``
    (exact lattice noise; ``exact=False``: float noise, seeded benchmarks only). The charge records the
    sensitivity as ``l2_sensitivity`` and the privacy unit's ``rows_per_unit`` it was derived for."""
    values = np.asarray(values, dtype=np.float64)
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"{label}: the sensitivity must be a finite number > 0, got {sensitivity}")
    if not ledger.can_afford(rho):
        raise BudgetExceeded(f"{label}: rho={rho:.6g} exceeds the remaining budget {ledger.remaining:.6g}")
    if exact:
        release = lattice_gaussian(rng, values, sensitivity, rho)
        ledger.charge(release.rho, label, "lattice_gaussian", sigma=release.sigma, l2_sensitivity=float(sensitivity),
                      rows_per_unit=rows_per_unit)
        return NoisyStatistic(label, release.values, release.sigma, float(sensitivity), release.rho, kind)
    if rng.private:
        raise ValueError("float Gaussian noise is only for benchmarks on an InsecureRandom source; use exact=True")
    sigma = GaussianMap(float(sensitivity)).sigma(rho)
    charged = ledger.charge(GaussianMap(float(sensitivity)).rho(sigma), label, "gaussian", sigma=sigma,
                            l2_sensitivity=float(sensitivity), rows_per_unit=rows_per_unit)
    return NoisyStatistic(label, values + rng.normal(0.0, sigma, size=values.shape), sigma, float(sensitivity), charged,
                          kind)


def spec_from_arrays(kind: str, target: str, features: Sequence[tuple[str, Any]], target_values: Any,
                     intercept: bool) -> RegressionSpec:  # fmt: skip
    """A `RegressionSpec` from plain arrays (e.g. read back from a release file)."""
    return RegressionSpec(kind, target, tuple((a, np.asarray(m)) for a, m in features), np.asarray(target_values), intercept)
