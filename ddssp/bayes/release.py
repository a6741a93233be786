"""Releases of GLM sufficient statistics for the noise-aware posterior: central Gaussian SSP and LDP sums.

`gaussian_ssp` (Kulkarni et al. 2021, central DP): rows are clipped to ||x|| <= R (and |y| <= R_y for
linear), the summed statistics t(x, y) (layout of `moments.statistic_names`) get i.i.d. exact
discrete Gaussian noise on a 2^-k lattice (`marginals.lattice`) at the joint sensitivity (logistic:
Lemma 3.3, sqrt(4.5) at R = 1; linear: the exact maximum of Paper B's Lemma 3.1 setting). Privacy
map: rho = cdp_rho(epsilon, delta); the snapped sums have L2 sensitivity Delta / gamma + sqrt(d)
(rounding folded in) and the noise variance is chosen so that the release is rho'-zCDP with
rho' <= rho (CKS 2020 Thm 14), hence (epsilon, delta)-DP under *replace-one* neighbours with N public
(the papers' setting); the accountant is charged rho', the cost actually incurred (replace-one Delta,
which also bounds the add/remove distance sqrt(R^2 + R^4) of the noised part). The papers' analytic
Gaussian calibration holds for continuous noise only; zCDP costs about 8% more noise at eps = 1.
``sigma`` is the std actually used (``noise_cov`` = sigma^2 I: the posterior models the noise as
Gaussian, an approximation of the discrete Gaussian of the same variance on a fine lattice).

`local_ssp` (Kulkarni, Jälkö, Kaski, Honkela, LDP): every user releases its own t(x_i, y_i) snapped
to the lattice plus exact discrete Gaussian noise, each rho-zCDP as above (rounding slack sqrt(d) of
one user's d statistics), the aggregator sums, so the aggregate noise covariance is N sigma^2 I.

Noise always comes from a `RandomSource` (`noise_source(insecure_seed)`): secure by default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marginals.lattice import lattice_gaussian
from marginals.privacy import Accountant, BudgetExceeded, cdp_rho
from marginals.randomness import RandomSource, noise_source

from .moments import record_statistics, statistic_names
from .sensitivity import linear_sensitivity, logistic_sensitivity

FAMILIES = ("linear", "logistic")


@dataclass(frozen=True, eq=False)
class NoisyStatistics:
    """Released sums ``z`` with Gaussian noise covariance ``noise_cov``, over ``n`` public rows."""

    z: np.ndarray
    noise_cov: np.ndarray
    n: int
    family: str
    d: int
    sigma: float = float("nan")
    sensitivity: float = float("nan")
    private: bool = True

    @property
    def names(self) -> list[str]:
        return statistic_names(self.d, self.family)


def clip_rows(X: np.ndarray, R: float) -> np.ndarray:
    """Rows scaled down to L2 norm at most R (x <- x min(1, R / ||x||))."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, R / np.maximum(norms, 1e-300))
    return X * scale[:, None]


def _check(X: np.ndarray, y: np.ndarray, family: str, R_y: float) -> tuple[np.ndarray, np.ndarray]:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if family == "logistic":
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("logistic labels must be -1 or +1")
    else:
        y = np.clip(y, -R_y, R_y)
    return X, y


def ssp_sensitivity(family: str, R: float = 1.0, R_y: float = 1.0) -> float:
    """Joint L2 sensitivity of the summed statistics with common noise (replace-one)."""
    return logistic_sensitivity(R) if family == "logistic" else linear_sensitivity(R, R_y)


def _calibrated(X, y, family: str, epsilon: float, delta: float, R: float, R_y: float, insecure_seed):
    """(clipped X, y, joint sensitivity, zCDP budget rho of (epsilon, delta), noise source) shared by both releases."""
    X, y = _check(X, y, family, R_y)
    delta_s = ssp_sensitivity(family, R, R_y)
    return clip_rows(X, R), y, delta_s, cdp_rho(epsilon, delta), noise_source(insecure_seed, "insecure_seed")


def gaussian_ssp(
    X: np.ndarray,
    y: np.ndarray,
    family: str,
    epsilon: float,
    delta: float,
    R: float = 1.0,
    R_y: float = 1.0,
    accountant: Accountant | None = None,
    insecure_seed: int | RandomSource | None = None,
) -> NoisyStatistics:
    """Central (epsilon, delta)-DP release of sum_i t(x_i, y_i): exact lattice Gaussian noise, cdp_rho(epsilon, delta)-zCDP."""
    X, y, delta_s, rho, rng = _calibrated(X, y, family, epsilon, delta, R, R_y, insecure_seed)
    if accountant is not None and not accountant.can_afford(rho):
        raise BudgetExceeded(f"gaussian SSP needs rho={rho:.6g} but the accountant has {accountant.remaining:.6g} left")
    s = record_statistics(X, y, family).sum(axis=0)
    release = lattice_gaussian(rng, s, delta_s, rho)
    sigma = release.sigma
    if accountant is not None:
        accountant.charge(
            release.rho, f"gaussian SSP ({family})", "gaussian_ssp", sigma=sigma, sensitivity=delta_s,
            lattice_step=release.gamma, epsilon=epsilon, delta=delta, neighbours="replace-one",
        )  # fmt: skip
    return NoisyStatistics(release.values, sigma**2 * np.eye(s.size), X.shape[0], family, X.shape[1], sigma, delta_s,
                           rng.private)  # fmt: skip


def local_ssp(
    X: np.ndarray,
    y: np.ndarray,
    family: str,
    epsilon: float,
    delta: float,
    R: float = 1.0,
    R_y: float = 1.0,
    insecure_seed: int | RandomSource | None = None,
) -> NoisyStatistics:
    """Every user releases t(x_i, y_i) + exact lattice Gaussian noise ((epsilon, delta)-LDP); the aggregator sums them."""
    X, y, delta_s, rho, rng = _calibrated(X, y, family, epsilon, delta, R, R_y, insecure_seed)
    t = record_statistics(X, y, family)
    release = lattice_gaussian(rng, t, delta_s, rho, dim=t.shape[1])  # one release per user (row)
    reports, sigma = release.values, release.sigma
    n = X.shape[0]
    return NoisyStatistics(reports.sum(axis=0), n * sigma**2 * np.eye(t.shape[1]), n, family, X.shape[1], sigma, delta_s, rng.private)


def exact_statistics(X: np.ndarray, y: np.ndarray, family: str, R: float = 1.0, R_y: float = 1.0) -> NoisyStatistics:
    """The non-private sums (noise covariance 0): the reference posterior of the papers."""
    X, y = _check(X, y, family, R_y)
    X = clip_rows(X, R)
    s = record_statistics(X, y, family).sum(axis=0)
    return NoisyStatistics(s, np.zeros((s.size, s.size)), X.shape[0], family, X.shape[1], 0.0, 0.0, False)
