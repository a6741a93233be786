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

Intercept (``fit_intercept=True``, the default): every clipped row gets a leading constant column of
value R (`INTERCEPT` layout: statistic x0 is that column), so the sums include sum(y) and sum(x) and
the posterior fits an intercept on uncentred features; the augmented rows have norm <= sqrt(2) R and
the sensitivity is taken at that radius. Logistic labels: {0, 1} or {-1, +1}, used as -1/+1; the coding
recorded for ``classes_`` is ``classes`` when given, else (0, 1) — never read off the private labels.

Noise always comes from a `RandomSource` (`noise_source(insecure_seed)`): secure by default.
"""

from __future__ import annotations

import math
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
    intercept: float = 0.0  # value of the leading constant column (0: none)
    classes: tuple | None = None  # logistic label coding, negative class first

    @property
    def n_features(self) -> int:
        """Features of the released rows, the intercept column not counted."""
        return self.d - (self.intercept > 0)

    @property
    def names(self) -> list[str]:
        return statistic_names(self.d, self.family)


def clip_rows(X: np.ndarray, R: float) -> np.ndarray:
    """Rows scaled down to L2 norm at most R (x <- x min(1, R / ||x||))."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, R / np.maximum(norms, 1e-300))
    return X * scale[:, None]


def _labels(y: np.ndarray, classes: tuple | None) -> tuple[np.ndarray, tuple]:
    """Logistic labels as -1/+1 and the coding recorded for ``classes_`` (negative class first).

    The coding is public, never read off the private labels: ``classes`` when given ((0, 1) or
    (-1, 1); every label must be one of them), else (0, 1) with both 0 and -1 read as the
    negative class."""
    if classes is None:
        if not np.all(np.isin(y, (-1.0, 0.0, 1.0))):
            raise ValueError("logistic labels must be in {0, 1} or {-1, +1} (pass classes=(0, 1) or (-1, 1) to name the coding)")
        return np.where(y == 1.0, 1.0, -1.0), (0.0, 1.0)
    classes = tuple(float(c) for c in classes)
    if classes not in ((0.0, 1.0), (-1.0, 1.0)):
        raise ValueError(f"logistic classes must be (0, 1) or (-1, 1), got {classes}")
    if not np.all(np.isin(y, classes)):
        raise ValueError(f"logistic labels must all lie in classes={classes}")
    return np.where(y == classes[1], 1.0, -1.0), classes


def _check(X, y, family: str, R_y: float, classes: tuple | None = None) -> tuple[np.ndarray, np.ndarray, tuple | None]:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if family == "logistic":
        y, classes = _labels(y, classes)
        return X, y, classes
    return X, np.clip(y, -R_y, R_y), None


def _rows(X: np.ndarray, R: float, fit_intercept: bool) -> tuple[np.ndarray, float]:
    """Rows clipped to norm R, with the leading constant column R when ``fit_intercept``; and their radius."""
    X = clip_rows(X, R)
    if not fit_intercept:
        return X, R
    return np.column_stack([np.full(X.shape[0], float(R)), X]), math.sqrt(2.0) * R


def ssp_sensitivity(family: str, R: float = 1.0, R_y: float = 1.0) -> float:
    """Joint L2 sensitivity of the summed statistics with common noise (replace-one)."""
    return logistic_sensitivity(R) if family == "logistic" else linear_sensitivity(R, R_y)


def _calibrated(X, y, family: str, epsilon: float, delta: float, R: float, R_y: float, insecure_seed, fit_intercept: bool,
                classes: tuple | None):  # fmt: skip
    """(rows, y, joint sensitivity, zCDP budget rho of (epsilon, delta), noise source, metadata) shared by both releases."""
    X, y, classes = _check(X, y, family, R_y, classes)
    rows, radius = _rows(X, R, fit_intercept)
    meta = {"intercept": float(R) if fit_intercept else 0.0, "classes": classes}
    rng = noise_source(insecure_seed, "insecure_seed")
    return rows, y, ssp_sensitivity(family, radius, R_y), cdp_rho(epsilon, delta), rng, meta


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
    fit_intercept: bool = True,
    classes: tuple | None = None,
) -> NoisyStatistics:
    """Central (epsilon, delta)-DP release of sum_i t(x_i, y_i): exact lattice Gaussian noise, cdp_rho(epsilon, delta)-zCDP.

    The charge (the lattice's cost incurred) never exceeds cdp_rho(epsilon, delta), so a fresh
    ``Accountant.from_epsilon(epsilon, delta)`` always holds it."""
    X, y, delta_s, rho, rng, meta = _calibrated(X, y, family, epsilon, delta, R, R_y, insecure_seed, fit_intercept, classes)
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
                           rng.private, **meta)  # fmt: skip


def local_ssp(
    X: np.ndarray,
    y: np.ndarray,
    family: str,
    epsilon: float,
    delta: float,
    R: float = 1.0,
    R_y: float = 1.0,
    insecure_seed: int | RandomSource | None = None,
    fit_intercept: bool = True,
    classes: tuple | None = None,
) -> NoisyStatistics:
    """Every user releases t(x_i, y_i) + exact lattice Gaussian noise ((epsilon, delta)-LDP); the aggregator sums them."""
    X, y, delta_s, rho, rng, meta = _calibrated(X, y, family, epsilon, delta, R, R_y, insecure_seed, fit_intercept, classes)
    t = record_statistics(X, y, family)
    release = lattice_gaussian(rng, t, delta_s, rho, dim=t.shape[1])  # one release per user (row)
    reports, sigma = release.values, release.sigma
    n = X.shape[0]
    return NoisyStatistics(reports.sum(axis=0), n * sigma**2 * np.eye(t.shape[1]), n, family, X.shape[1], sigma, delta_s,
                           rng.private, **meta)  # fmt: skip


def exact_statistics(
    X: np.ndarray, y: np.ndarray, family: str, R: float = 1.0, R_y: float = 1.0, fit_intercept: bool = True,
    classes: tuple | None = None,
) -> NoisyStatistics:  # fmt: skip
    """The non-private sums (noise covariance 0): the reference posterior of the papers."""
    X, y, classes = _check(X, y, family, R_y, classes)
    X, _ = _rows(X, R, fit_intercept)
    s = record_statistics(X, y, family).sum(axis=0)
    return NoisyStatistics(s, np.zeros((s.size, s.size)), X.shape[0], family, X.shape[1], 0.0, 0.0, False,
                           float(R) if fit_intercept else 0.0, classes)  # fmt: skip
