"""PMT (Cao, Bi & Zhang, "Differentially Private Truncation of Unbounded Data via Public Second
Moments") on numeric arrays: the public-moment transform, DP-PMT ridge (Algorithm 2), DP-PMT
logistic (Algorithm 3, noisy Newton) and the private-only baselines DP-RR (Thm 4.3) and DP-LR
(Algorithm 5). The estimators on encoded tables are in `ddssp.baselines.pmt_models`.

Transform (Algorithm 1): x -> Sigma_B^{-1/2} x with Sigma_B the *public* uncentred second moment,
then L2 clipping at R = sqrt(d L_n), L_n = 1 + log(2 n / eta). The clip enforces the bound
deterministically, so privacy never depends on the public moment being accurate; eta (and
Sigma_B) only decide how many rows are clipped.

Privacy (neighbours differ in one row, n public; the paper's convention): every release is
snapped to a 2^-k lattice and gets exact discrete Gaussian noise (`marginals.lattice`) calibrated
to mu_release^2 / 2 zCDP at the lattice sensitivity (replace-one sensitivity) / gamma + sqrt(d)
(the rounding folded in; d the number of released entries: the upper triangle of a Gram or
Hessian, or a vector). Ridge releases the transformed Gram (sensitivity 2 R^2 / n) and cross
moment (2 R R_y / n), each with mu_release = mu / sqrt(2); Newton releases a Hessian
(R^2 / (2 n)) and a gradient (2 R / n) per step, each with mu / sqrt(2 T), over exactly T steps
(the pseudocode's T+1 loop is a typo). zCDP composes additively, so a fit is mu^2 / 2-zCDP
(the estimators take mu = sqrt(2 cdp_rho(eps, delta))). The paper's mu-GDP accounting is proved
for continuous Gaussian noise only; the exact discrete noise is accounted in zCDP (Canonne,
Kamath & Steinke 2020, Thm 14), which costs about 8% more noise at the same (eps, delta).
``sigmas`` are the stds actually used. Passing ``mu=math.inf`` switches noise off (non-private;
for tests of the algebra).

Deviation (post-processing, privacy unchanged): the paper leaves a noisy Newton Hessian that is
not positive definite unspecified. We symmetrise it and raise its eigenvalues to at least
``HESSIAN_FLOOR`` times the largest before solving (a condition-number cap of 1e3). The PMT
Hessian is near-isotropic, so without noise the cap never binds there; on raw ill-conditioned
rows (DP-LR) it acts as an implicit, data-independent damping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from marginals.lattice import lattice_gaussian, symmetric_lattice_gaussian
from marginals.maps import GaussianMap
from marginals.randomness import RandomSource

from ..solvers import sigmoid, solve_linear_system

#: smallest eigenvalue of a noisy Newton Hessian, relative to its largest (a condition cap of 1e3).
HESSIAN_FLOOR = 1e-3
#: the public moment is far from the private rows when the released whitened Gram (the identity when they
#: agree) has, beyond its noise, an eigenvalue above MOMENT_FAR (`moment_mismatch`).
MOMENT_FAR = 10.0


def moment_mismatch(released_gram: np.ndarray, sigma: float) -> float:
    """The largest eigenvalue of a released whitened Gram A^T A / n less 2.5 sigma sqrt(d) (the spectral norm of
    its symmetric noise is about 2 sigma sqrt(d)), at least 1: post-processing of the release, so free. It is
    about 1 when the public moment matches the private rows; k when some direction of the rows has k times the
    public moment's second moment (small directions say nothing: a collinear encoding has them anyway)."""
    top = float(np.linalg.eigvalsh(0.5 * (released_gram + released_gram.T))[-1])
    return max(top - 2.5 * sigma * math.sqrt(released_gram.shape[0]), 1.0)


def inverse_sqrt_psd(moment: np.ndarray) -> np.ndarray:
    """Sigma^{-1/2}, the symmetric inverse square root of a positive definite matrix (by eigh)."""
    moment = np.asarray(moment, dtype=np.float64)
    eigval, eigvec = np.linalg.eigh(0.5 * (moment + moment.T))
    if not eigval.size or eigval[0] <= 0 or not np.all(np.isfinite(eigval)):
        low = float(eigval[0]) if eigval.size else float("nan")
        raise ValueError(
            f"the public second moment must be positive definite (smallest eigenvalue {low:.3g}); "
            "add a small ridge to it (moment_ridge) or use more public rows"
        )
    return (eigvec / np.sqrt(eigval)) @ eigvec.T


def symmetric_gaussian(d: int, sigma: float, rng: RandomSource) -> np.ndarray:
    """SG_d(sigma^2) in exact lattice noise: a symmetric d x d matrix whose upper triangle (diagonal
    included) is i.i.d. discrete Gaussian of std about sigma on a 2^-k lattice (`noisy_symmetric` at 0)."""
    return noisy_symmetric(np.zeros((d, d)), sigma, sigma, rng)[0]


def noisy_symmetric(matrix: np.ndarray, sensitivity: float, sigma: float, rng: RandomSource) -> tuple[np.ndarray, float]:
    """(matrix + symmetric lattice Gaussian noise, std used): the upper triangle's release costs
    (sensitivity / sigma)^2 / 2 zCDP (rounding included); sigma = 0 (mu = inf) adds nothing."""
    if sigma == 0:
        return np.asarray(matrix, dtype=np.float64), 0.0
    release = symmetric_lattice_gaussian(rng, matrix, sensitivity, GaussianMap(sensitivity).rho(sigma))
    return release.values, release.sigma


def noisy_vector(vector: np.ndarray, sensitivity: float, sigma: float, rng: RandomSource) -> tuple[np.ndarray, float]:
    """(vector + lattice Gaussian noise, std used), as `noisy_symmetric` for a vector."""
    if sigma == 0:
        return np.asarray(vector, dtype=np.float64), 0.0
    release = lattice_gaussian(rng, vector, sensitivity, GaussianMap(sensitivity).rho(sigma))
    return release.values, release.sigma


def log_term(n: int, eta: float) -> float:
    """L_n = 1 + log(2 n / eta)."""
    if not (0 < eta < 1):
        raise ValueError(f"eta must lie in (0, 1), got {eta}")
    return 1.0 + math.log(2.0 * n / eta)


def clip_rows(rows: np.ndarray, radius: float) -> tuple[np.ndarray, int]:
    """Rows scaled down to L2 norm <= radius, and how many were clipped."""
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows.reshape(len(rows), -1), axis=1)
    over = norms > radius
    scale = np.where(over, radius / np.where(over, norms, 1.0), 1.0)
    return rows * (scale[:, None] if rows.ndim == 2 else scale), int(over.sum())


def pmt_transform(A: np.ndarray, moment: np.ndarray, eta: float) -> tuple[np.ndarray, float, int, np.ndarray]:
    """Algorithm 1: (clipped A Sigma^{-1/2}, radius R = sqrt(d L_n), rows clipped, Sigma^{-1/2})."""
    n, d = A.shape
    root = inverse_sqrt_psd(moment)
    radius = math.sqrt(d * log_term(n, eta))
    transformed, clipped = clip_rows(A @ root, radius)
    return transformed, radius, clipped, root


@dataclass(frozen=True)
class PMTFit:
    """Coefficients on the original scale plus the (public) calibration of one fit; never the number
    of clipped rows, an exact private count."""

    coef: np.ndarray
    sigmas: tuple[float, float]  # noise std of (Gram or Hessian, cross moment or gradient)
    radius: float  # feature clipping radius
    y_radius: float | None  # response clipping radius (ridge only)
    mu_release: float  # mu of each Gaussian release
    moment_mismatch: float | None = None  # `moment_mismatch` of the released whitened Gram (PMT only)


def _ridge_solution(gram, cross, penalty, sens, sigmas, rng) -> tuple[np.ndarray, tuple[float, float], np.ndarray]:
    """(the noisy ridge solution, noise stds used, the released Gram); ``sens`` and ``sigmas``: (Gram, cross moment)."""
    noisy_gram, used_gram = noisy_symmetric(gram, sens[0], sigmas[0], rng)
    noisy_cross, used_cross = noisy_vector(cross, sens[1], sigmas[1], rng)
    return solve_linear_system(noisy_gram + penalty, noisy_cross), (used_gram, used_cross), noisy_gram


def pmt_ridge(
    A: np.ndarray, y: np.ndarray, moment: np.ndarray, y_moment: float, mu: float, ridge: float, eta: float,
    rng: RandomSource,
) -> PMTFit:  # fmt: skip
    """Algorithm 2 (DP-PMTRR): mu-GDP ridge (A^T A / n + ridge I)^-1 A^T y / n through the transform.

    ``moment`` is the public Sigma_B, ``y_moment`` the public mean of y^2 (sigma_B^2).
    """
    n, d = A.shape
    if not (y_moment > 0 and math.isfinite(y_moment)):
        raise ValueError(f"the public second moment of y must be > 0, got {y_moment}")
    mu_release = mu / math.sqrt(2.0)
    transformed, radius, _, root = pmt_transform(A, moment, eta)
    y_scale = math.sqrt(y_moment)
    y_radius = math.sqrt(log_term(n, eta))
    y_t, _ = clip_rows(np.asarray(y, dtype=np.float64) / y_scale, y_radius)
    sens = (2.0 * radius**2 / n, 2.0 * radius * y_radius / n)
    penalty = ridge * (root @ root)  # lambda Sigma_B^{-1}: the ridge penalty in transformed coordinates
    beta, sigmas, gram = _ridge_solution(transformed.T @ transformed / n, transformed.T @ y_t / n, penalty, sens,
                                         (sens[0] / mu_release, sens[1] / mu_release), rng)  # fmt: skip
    return PMTFit(y_scale * root @ beta, sigmas, radius, y_radius, mu_release, moment_mismatch(gram, sigmas[0]))


def private_only_radii(moment_trace: float, y_moment: float, n: int, d: int, eta: float) -> tuple[float, float]:
    """DP-RR / DP-LR radii (Thm 4.3, Remark 4.4 with public moments): sqrt(Tr Sigma + d log(n/eta))
    for the features and sqrt(E y^2 + log(n/eta)) for the response."""
    if not (0 < eta < 1):
        raise ValueError(f"eta must lie in (0, 1), got {eta}")
    log_n = math.log(n / eta)
    return math.sqrt(moment_trace + d * log_n), math.sqrt(y_moment + log_n)


def dp_ridge(
    A: np.ndarray, y: np.ndarray, radius: float, y_radius: float, mu: float, ridge: float, rng: RandomSource
) -> PMTFit:
    """DP-RR (Thm 4.3): clip rows at ``radius`` and y at ``y_radius``, then noisy ridge, mu-GDP."""
    n, d = A.shape
    mu_release = mu / math.sqrt(2.0)
    clipped_A, _ = clip_rows(A, radius)
    clipped_y, _ = clip_rows(np.asarray(y, dtype=np.float64), y_radius)
    sens = (2.0 * radius**2 / n, 2.0 * radius * y_radius / n)
    beta, sigmas, _ = _ridge_solution(clipped_A.T @ clipped_A / n, clipped_A.T @ clipped_y / n, ridge * np.eye(d),
                                      sens, (sens[0] / mu_release, sens[1] / mu_release), rng)  # fmt: skip
    return PMTFit(beta, sigmas, radius, y_radius, mu_release)


def _floored_solve(hessian: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """hessian^-1 grad after symmetrising and raising eigenvalues to HESSIAN_FLOOR * the largest."""
    eigval, eigvec = np.linalg.eigh(0.5 * (hessian + hessian.T))
    floor = HESSIAN_FLOOR * max(float(eigval[-1]), 0.0)
    if floor <= 0:  # no positive curvature at all: take no step
        return np.zeros_like(grad)
    eigval = np.maximum(eigval, floor)
    return eigvec @ ((eigvec.T @ grad) / eigval)


def noisy_newton(
    A: np.ndarray, y01: np.ndarray, penalty: np.ndarray, radius: float, mu: float, steps: int, rng: RandomSource,
    hessians: list | None = None,
) -> tuple[np.ndarray, tuple[float, float], list[np.ndarray]]:
    """Exactly ``steps`` noisy Newton steps from 0 on the mean logistic loss + (1/2) b^T penalty b
    for rows of norm <= radius and labels in {0, 1}: (final iterate, noise stds, all iterates); the
    released Hessians are appended to ``hessians`` when given."""
    n, d = A.shape
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"the number of Newton steps must be >= 1, got {steps}")
    mu_release = mu / math.sqrt(2.0 * steps)
    sens_hessian, sens_grad = radius**2 / (2.0 * n), 2.0 * radius / n
    sigma_hessian, sigma_grad = sens_hessian / mu_release, sens_grad / mu_release
    beta = np.zeros(d)
    iterates = []
    for _ in range(steps):
        prob = sigmoid(A @ beta)
        grad = -A.T @ (y01 - prob) / n + penalty @ beta
        scaled = A * np.sqrt(prob * (1.0 - prob) / n)[:, None]
        hessian, used_hessian = noisy_symmetric(scaled.T @ scaled, sens_hessian, sigma_hessian, rng)
        if hessians is not None:
            hessians.append(hessian)
        noisy_grad, used_grad = noisy_vector(grad, sens_grad, sigma_grad, rng)
        beta = beta - _floored_solve(hessian + penalty, noisy_grad)
        iterates.append(beta.copy())
    return beta, (used_hessian, used_grad), iterates


def pmt_logistic(
    A: np.ndarray, y01: np.ndarray, moment: np.ndarray, mu: float, ridge: float, eta: float, steps: int,
    rng: RandomSource,
) -> PMTFit:  # fmt: skip
    """Algorithm 3 (DP-PMTLR): mu-GDP logistic regression (labels 0/1, penalty (ridge/2)||b||^2)
    by T noisy Newton steps on the transformed rows; coefficients mapped back by Sigma_B^{-1/2}."""
    transformed, radius, _, root = pmt_transform(A, moment, eta)
    hessians: list[np.ndarray] = []
    beta, sigmas, _ = noisy_newton(transformed, np.asarray(y01, dtype=np.float64), ridge * (root @ root), radius, mu,
                                   steps, rng, hessians)  # fmt: skip
    # the first step is at 0, where the Hessian is A^T A / (4 n): its release, times 4, is the whitened Gram
    return PMTFit(root @ beta, sigmas, radius, None, mu / math.sqrt(2.0 * steps),
                  moment_mismatch(4.0 * hessians[0], 4.0 * sigmas[0]))  # fmt: skip


def dp_logistic(
    A: np.ndarray, y01: np.ndarray, radius: float, mu: float, ridge: float, steps: int, rng: RandomSource
) -> PMTFit:
    """DP-LR (Algorithm 5): the same noisy Newton on the raw rows clipped at ``radius``."""
    clipped_A, _ = clip_rows(A, radius)
    d = A.shape[1]
    beta, sigmas, _ = noisy_newton(clipped_A, np.asarray(y01, dtype=np.float64), ridge * np.eye(d), radius, mu, steps,
                                   rng)  # fmt: skip
    return PMTFit(beta, sigmas, radius, None, mu / math.sqrt(2.0 * steps))
