"""Per-record mean and covariance of the released statistics under a Gaussian feature model.

Model (Kulkarni et al. 2021; Bernstein & Sheldon 2019): x ~ N(0, Sigma) in R^d and

- linear:   y = theta.x + e, e ~ N(0, noise_var). With w = (x, y) jointly Gaussian with covariance
  C = [[Sigma, Sigma theta], [theta' Sigma, theta' Sigma theta + noise_var]], the statistics are
  vech(w w^T) (all products w_p w_q, p <= q: t2(x), y x and y^2) and exactly
  E[w_p w_q] = C_pq, Cov(w_p w_q, w_r w_s) = C_pr C_qs + C_ps C_qr (Isserlis).
- logistic: y in {-1, +1}, P(y = 1 | x) = sigmoid(theta.x). Statistics [y x, vech(x x^T)] (y^2 = 1
  is constant and dropped). E[y | x] = tanh(u/2) with u = theta.x: this is the corrected sign (the
  paper's Eq. 5 prints -tanh(u/2), which flips theta). Its cubic Taylor series u/2 - u^3/24 and
  Isserlis give, with a = Sigma theta, v = theta' Sigma theta:
  E[y x_i] = a_i (1/2 - v/8), Cov(y x_i, y x_j) = Sigma_ij - E[y x_i] E[y x_j],
  Cov(y x_i, x_k x_l) = L_ikl (1/2 - v/8) - a_i a_k a_l / 4 - E[y x_i] Sigma_kl with
  L_ikl = Sigma_ik a_l + Sigma_il a_k + Sigma_kl a_i, Cov(x_i x_j, x_k x_l) = Sigma_ik Sigma_jl + Sigma_il Sigma_jk.
  (The paper's covariance case (b), both parities odd, wrongly keeps a g(u) factor: y^2 = 1.)

The sum over N records has mean N mu_s and covariance N Sigma_s (CLT). Every function takes an
array namespace ``xp`` (numpy by default, ``jax.numpy`` inside NUTS) and only gathers and
broadcasts, so one code path serves both.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def vech_pairs(size: int) -> np.ndarray:
    """(k, 2) index pairs (p, q), p <= q, of the upper triangle in row-major order."""
    rows, cols = np.triu_indices(size)
    return np.stack([rows, cols], axis=1)


def vech(matrix: np.ndarray) -> np.ndarray:
    """The upper triangle (diagonal included) of a square matrix, row-major."""
    matrix = np.asarray(matrix)
    return matrix[np.triu_indices(matrix.shape[0])]


def statistic_names(d: int, family: str) -> list[str]:
    """Labels of the statistics in layout order (x0..x{d-1}, y)."""
    names = [f"x{i}" for i in range(d)] + ["y"]
    if family == "linear":
        return [f"{names[p]}*{names[q]}" for p, q in vech_pairs(d + 1)]
    if family == "logistic":
        return [f"y*x{i}" for i in range(d)] + [f"x{p}*x{q}" for p, q in vech_pairs(d)]
    raise ValueError(f"family must be 'linear' or 'logistic', got {family!r}")


def record_statistics(X: np.ndarray, y: np.ndarray, family: str) -> np.ndarray:
    """(n, k) per-record statistics t(x, y) in the layout of `statistic_names`."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d = X.shape[1]
    if family == "linear":
        W = np.column_stack([X, y])
        pairs = vech_pairs(d + 1)
        return W[:, pairs[:, 0]] * W[:, pairs[:, 1]]
    if family == "logistic":
        pairs = vech_pairs(d)
        return np.column_stack([y[:, None] * X, X[:, pairs[:, 0]] * X[:, pairs[:, 1]]])
    raise ValueError(f"family must be 'linear' or 'logistic', got {family!r}")


def gaussian_product_moments(C: Any, pairs: np.ndarray, xp: Any = np) -> tuple[Any, Any]:
    """Mean and covariance of the products w_p w_q for w ~ N(0, C) (exact, Isserlis)."""
    p, q = pairs[:, 0], pairs[:, 1]
    mean = C[p, q]
    cov = C[p[:, None], p[None, :]] * C[q[:, None], q[None, :]] + C[p[:, None], q[None, :]] * C[q[:, None], p[None, :]]
    return mean, cov


def linear_moments(theta: Any, Sigma: Any, noise_var: Any, xp: Any = np) -> tuple[Any, Any]:
    """Per-record (mu_s, Sigma_s) of vech(w w^T), w = (x, y), for the linear-Gaussian model (exact)."""
    a = Sigma @ theta
    v = theta @ a
    d = Sigma.shape[0]
    top = xp.concatenate([Sigma, a[:, None]], axis=1)
    bottom = xp.concatenate([a, xp.reshape(v + noise_var, (1,))])[None, :]
    C = xp.concatenate([top, bottom], axis=0)
    return gaussian_product_moments(C, vech_pairs(d + 1), xp)


def logistic_moments(theta: Any, Sigma: Any, xp: Any = np) -> tuple[Any, Any]:
    """Per-record (mu_s, Sigma_s) of [y x, vech(x x^T)] under the cubic Taylor approximation (fixed sign)."""
    d = Sigma.shape[0]
    a = Sigma @ theta
    v = theta @ a
    slope = 0.5 - v / 8.0
    m1 = a * slope
    pairs = vech_pairs(d)
    k, l = pairs[:, 0], pairs[:, 1]
    m2, cov22 = gaussian_product_moments(Sigma, pairs, xp)
    cov11 = Sigma - m1[:, None] * m1[None, :]
    L = Sigma[:, k] * a[l][None, :] + Sigma[:, l] * a[k][None, :] + Sigma[k, l][None, :] * a[:, None]
    cov12 = L * slope - a[:, None] * (a[k] * a[l])[None, :] / 4.0 - m1[:, None] * Sigma[k, l][None, :]
    mean = xp.concatenate([m1, m2])
    cov = xp.concatenate(
        [xp.concatenate([cov11, cov12], axis=1), xp.concatenate([cov12.T, cov22], axis=1)], axis=0
    )
    return mean, cov


def glm_moments(family: str, theta: Any, Sigma: Any, noise_var: Any = None, xp: Any = np) -> tuple[Any, Any]:
    """`linear_moments` or `logistic_moments` by name."""
    if family == "linear":
        return linear_moments(theta, Sigma, noise_var, xp)
    if family == "logistic":
        return logistic_moments(theta, Sigma, xp)
    raise ValueError(f"family must be 'linear' or 'logistic', got {family!r}")


def isserlis_moment(Sigma: np.ndarray, indices: tuple[int, ...]) -> float:
    """E[x_i1 ... x_ik] for x ~ N(0, Sigma) by summing over all (k-1)!! pairings (0 for odd k)."""
    idx = list(indices)
    if len(idx) % 2:
        return 0.0
    if not idx:
        return 1.0
    first, rest = idx[0], idx[1:]
    total = 0.0
    for j in range(len(rest)):
        total += Sigma[first, rest[j]] * isserlis_moment(Sigma, tuple(rest[:j] + rest[j + 1 :]))
    return total


def count_pairings(k: int) -> int:
    """Number of perfect matchings of k items ((k-1)!!; 0 for odd k)."""
    if k % 2:
        return 0
    out = 1
    for j in range(k - 1, 0, -2):
        out *= j
    return out
