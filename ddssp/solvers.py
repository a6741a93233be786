"""Numerical solvers shared by the estimators: ridge normal equations, logistic likelihoods and
the non-private fit on encoded rows (`fit_encoded`: AIM-Synth and the public baselines).

`solve_normal_equations` solves (G + ridge I) theta = r for a symmetric G with an eigen-
decomposition. Features whose diagonal entry of G is zero (a level that never occurs, a
1-level numeric attribute) get coefficient 0 silently. If the remaining system is numerically
singular (condition number beyond 1 / `SINGULAR_RTOL`) it warns and returns the minimum-norm
(pseudo-inverse) solution instead of failing.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd
from scipy.special import expit

if TYPE_CHECKING:
    from .encoding import Encoding

#: eigenvalues below this fraction of the largest are treated as zero (pseudo-inverse fallback).
SINGULAR_RTOL = 1e-12

#: default ridge added to X^T X: absolute, like the paper's code (negligible against counts).
DEFAULT_RIDGE = 1e-12


class CollinearityWarning(UserWarning):
    """X^T X (plus ridge) is numerically singular; the minimum-norm solution was returned."""


def solve_normal_equations(gram: np.ndarray, rhs: np.ndarray, ridge: float = DEFAULT_RIDGE) -> np.ndarray:
    """theta = (gram + ridge I)^-1 rhs, with zero features dropped and a pseudo-inverse fallback."""
    gram = np.asarray(gram, dtype=np.float64)
    rhs = np.asarray(rhs, dtype=np.float64)
    ridge = float(ridge)
    if not (ridge >= 0 and np.isfinite(ridge)):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(rhs))):
        raise ValueError("the sufficient statistics contain non-finite values")
    p = gram.shape[0]
    theta = np.zeros(p)
    diag = np.diag(gram)
    scale = float(np.max(np.abs(diag))) if p else 0.0
    live = np.flatnonzero(diag > SINGULAR_RTOL * scale) if scale > 0 else np.array([], dtype=int)
    if live.size == 0:
        return theta
    sub = gram[np.ix_(live, live)]
    sub = 0.5 * (sub + sub.T) + ridge * np.eye(live.size)
    eigval, eigvec = np.linalg.eigh(sub)
    top = float(np.max(np.abs(eigval)))
    keep = eigval > SINGULAR_RTOL * top
    if not np.all(keep):
        smallest = float(eigval.min())
        warnings.warn(
            "X^T X + ridge I is numerically singular, so the coefficients are not identifiable "
            f"(smallest eigenvalue {smallest:.3g} vs largest {top:.3g}; "
            f"{int((~keep).sum())} direction(s) dropped): using the minimum-norm pseudo-inverse solution. "
            "Collinear features (e.g. an intercept with all one-hot levels kept) or a noisy X^T X cause this; "
            "a larger ridge avoids it.",
            CollinearityWarning,
            stacklevel=2,
        )
    coords = eigvec[:, keep].T @ rhs[live]
    theta[live] = eigvec[:, keep] @ (coords / eigval[keep])
    return theta


def solve_linear_system(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """matrix^-1 rhs for a general (possibly indefinite, noisy) matrix; least squares if singular."""
    try:
        solution = np.linalg.solve(matrix, rhs)
        if np.all(np.isfinite(solution)):
            return solution
    except np.linalg.LinAlgError:
        pass
    warnings.warn(
        "the linear system is singular: using the minimum-norm least-squares solution",
        CollinearityWarning,
        stacklevel=2,
    )
    return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


def approx_log_likelihood(theta: np.ndarray, XtX: np.ndarray, Xty: np.ndarray, n: float, b: np.ndarray) -> float:
    """Degree-2 approximate logistic log-likelihood n b0 + b1 theta.X^T y + b2 theta^T X^T X theta."""
    theta = np.asarray(theta, dtype=np.float64)
    return float(n * b[0] + b[1] * theta @ Xty + b[2] * theta @ XtX @ theta)


def quadratic_logistic_solution(
    XtX: np.ndarray, Xty: np.ndarray, b: np.ndarray, alpha: float = 0.0, ridge: float = DEFAULT_RIDGE
) -> np.ndarray:
    """argmax of the approximate log-likelihood minus (alpha/2)||theta||^2 (needs b2 < 0).

    Setting the gradient b1 X^T y + 2 b2 X^T X theta - alpha theta to zero gives
    theta = -b1/(2 b2) (X^T X + alpha/(-2 b2) I)^-1 X^T y.
    """
    b = np.asarray(b, dtype=np.float64)
    if b.size != 3:
        raise ValueError(f"the closed form needs degree-2 coefficients (b0, b1, b2), got {b.size}")
    if not b[2] < 0:
        raise ValueError(f"the quadratic coefficient b2 = {b[2]:.6g} must be < 0 for a concave objective")
    if not (alpha >= 0 and np.isfinite(alpha)):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha}")
    factor = -b[1] / (2.0 * b[2])
    return factor * solve_normal_equations(XtX, Xty, ridge + alpha / (-2.0 * b[2]))


def logistic_loss(
    theta: np.ndarray, X: np.ndarray, y_pm: np.ndarray, weights: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Mean log-loss (1/n) sum log(1 + exp(-y x.theta)) for labels y in {-1, +1}, and its gradient;
    with ``weights`` (summing to 1) the weighted sum instead of the mean."""
    margins = y_pm * (X @ theta)
    losses = np.logaddexp(0.0, -margins)
    # d/dm log(1 + e^-m) = -sigmoid(-m), computed without overflow
    slope = -y_pm * expit(-margins)
    if weights is None:
        return float(np.mean(losses)), X.T @ slope / X.shape[0]
    return float(weights @ losses), X.T @ (slope * weights)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) without overflow (`scipy.special.expit`)."""
    return expit(np.asarray(z, dtype=np.float64))


def fit_logistic(
    X: np.ndarray,
    y_pm: np.ndarray,
    l2: float = 0.0,
    linear: np.ndarray | None = None,
    tol: float = 1e-18,
    max_iter: int = 200,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """argmin over theta of mean log-loss + (l2/2)||theta||^2 + linear.theta (damped Newton from 0);
    ``weights`` (>= 0, normalised here) weight the rows' losses instead of the mean.

    Each step solves the Newton system with a pseudo-inverse of the Hessian, so with ``l2 = 0``
    the iterates stay in the row space of X: all-zero and collinear columns end at the
    minimum-norm solution instead of drifting. Backtracking (Armijo) keeps every step a descent
    step; iteration stops when the Newton decrement g.H^+g falls below ``tol``.
    """
    X = np.asarray(X, dtype=np.float64)
    y_pm = np.asarray(y_pm, dtype=np.float64)
    n, p = X.shape
    lin = np.zeros(p) if linear is None else np.asarray(linear, dtype=np.float64)
    share = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = logistic_loss(theta, X, y_pm, share)
        return loss + 0.5 * l2 * theta @ theta + lin @ theta, grad + l2 * theta + lin

    def hessian(theta: np.ndarray, _: None) -> np.ndarray:
        prob = sigmoid(X @ theta)
        curvature = prob * (1.0 - prob) / n if share is None else prob * (1.0 - prob) * share
        scaled = X * np.sqrt(curvature)[:, None]
        return scaled.T @ scaled + l2 * np.eye(p)  # A.T @ A runs as one symmetric BLAS product

    return damped_newton(lambda theta: (*objective(theta), None), hessian, p, tol, max_iter)


def damped_newton(value_grad: Callable[[np.ndarray], tuple[float, np.ndarray, Any]],
                  hessian: Callable[[np.ndarray, Any], np.ndarray], p: int, tol: float, max_iter: int) -> np.ndarray:
    """Minimise a convex objective from theta = 0 by Newton steps with backtracking (Armijo).

    ``value_grad(theta)`` gives (value, gradient, state) and ``hessian(theta, state)`` the Hessian
    there. Steps use the Hessian's pseudo-inverse, so flat directions (all-zero or collinear columns)
    keep their 0 (the minimum-norm optimum); iteration stops when the Newton decrement g.H^+g falls
    below ``tol`` or no decrease is representable."""
    theta = np.zeros(p)
    value, grad, state = value_grad(theta)
    for _ in range(max_iter):
        eigval, eigvec = np.linalg.eigh(hessian(theta, state))
        keep = eigval > SINGULAR_RTOL * max(float(eigval.max()), 0.0)
        step = -eigvec[:, keep] @ ((eigvec[:, keep].T @ grad) / eigval[keep])
        decrement = -float(grad @ step)
        if not decrement > tol:
            break
        size = 1.0
        for _ in range(60):
            new_value, new_grad, new_state = value_grad(theta + size * step)
            if new_value <= value - 1e-4 * size * decrement:
                break
            size *= 0.5
        else:
            break  # no decrease representable in floating point: at the optimum
        theta = theta + size * step
        value, grad, state = new_value, new_grad, new_state
    return theta


def fit_encoded(encoding: Encoding, df: pd.DataFrame, task: str) -> np.ndarray:
    """Non-private fit on a table: minimum-norm least squares (linear) or maximum likelihood (logistic).

    All-zero columns (levels absent from the table) get coefficient exactly 0.
    """
    X, y = encoding.encode(df)
    if X.shape[0] == 0:
        raise ValueError("cannot fit a regression on an empty table (0 rows)")
    live = np.any(X != 0, axis=0)
    theta = np.zeros(X.shape[1])
    if task == "linear":
        theta[live] = np.linalg.lstsq(X[:, live], y, rcond=None)[0]
    else:
        theta[live] = fit_logistic(X[:, live], y)
    return theta
