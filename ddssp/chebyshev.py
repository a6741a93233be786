"""Chebyshev polynomial approximations of phi(s) = log sigmoid(s) = -log(1 + e^-s) on [-R, R].

Huggins et al. (2017) and Ferrando & Sheldon (section 3.3) replace phi by a degree-M polynomial
sum_m b_m s^m so the logistic log-likelihood depends on the data only through moments. The
coefficients are computed in the Chebyshev basis of t = s / R (numpy's convention: the series
is c_0 T_0(t) + c_1 T_1(t) + ...) and then converted to *monomial* coefficients b_m in s. The
paper's code plugged Chebyshev-basis coefficients in as if they were monomial; we do not.

Two constructions:
- "interpolation": the polynomial through f at the M+1 Chebyshev nodes (first kind);
- "projection": the truncated Chebyshev series, c_k = (2/pi) int_0^pi f(R cos u) cos(k u) du
  (c_0 halved), computed by Gauss-Chebyshev quadrature. It is the best degree-M approximation
  in the L2 norm with weight 1 / sqrt(1 - t^2).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.polynomial import chebyshev as C

METHODS = ("interpolation", "projection")

#: quadrature nodes for the projection method (exact for polynomials of degree < 2 * this).
PROJECTION_NODES = 4096


def log_sigmoid(s: np.ndarray) -> np.ndarray:
    """phi(s) = -log(1 + exp(-s)), computed stably for any s."""
    return -np.logaddexp(0.0, -np.asarray(s, dtype=np.float64))


def chebyshev_nodes(count: int) -> np.ndarray:
    """The ``count`` Chebyshev points of the first kind on [-1, 1], cos(pi (k + 1/2) / count)."""
    return np.cos(np.pi * (np.arange(count) + 0.5) / count)


def chebyshev_coefficients(
    func: Callable[[np.ndarray], np.ndarray] = log_sigmoid,
    degree: int = 2,
    radius: float = 6.0,
    method: str = "interpolation",
) -> np.ndarray:
    """Chebyshev-basis coefficients c_0..c_M (numpy convention) of ``func`` on [-radius, radius] in t = s / radius."""
    degree = int(degree)
    if degree < 0:
        raise ValueError(f"degree must be >= 0, got {degree}")
    if not (radius > 0 and np.isfinite(radius)):
        raise ValueError(f"radius must be a finite number > 0, got {radius}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    count = degree + 1 if method == "interpolation" else max(PROJECTION_NODES, 4 * (degree + 1))
    nodes = chebyshev_nodes(count)
    values = np.asarray(func(radius * nodes), dtype=np.float64)
    # discrete cosine sums: for interpolation they are exact (discrete orthogonality at the
    # nodes); for projection they are the Gauss-Chebyshev quadrature of the series integral
    angles = np.pi * (np.arange(count) + 0.5) / count
    k = np.arange(degree + 1)
    coef = (2.0 / count) * np.cos(np.outer(k, angles)) @ values
    coef[0] /= 2.0
    return coef


def monomial_coefficients(cheb_coef: np.ndarray, radius: float) -> np.ndarray:
    """b_0..b_M with sum_m b_m s^m equal to the Chebyshev series in t = s / radius."""
    in_t = C.cheb2poly(np.asarray(cheb_coef, dtype=np.float64))
    return in_t / float(radius) ** np.arange(in_t.size)


def numerical_recipes_coefficients(cheb_coef: np.ndarray) -> np.ndarray:
    """The same series in the Numerical-Recipes convention (c_0 doubled: f ~ c_0/2 + sum c_k T_k)."""
    out = np.array(cheb_coef, dtype=np.float64)
    out[0] *= 2.0
    return out


def evaluate_monomial(b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """sum_m b_m s^m."""
    return np.polynomial.polynomial.polyval(np.asarray(s, dtype=np.float64), b)


def approximation_errors(b: np.ndarray, radius: float, func: Callable = log_sigmoid, points: int = 20001) -> dict:
    """Max error and Chebyshev-weighted L2 error of the polynomial ``b`` against ``func`` on [-R, R]."""
    grid = np.linspace(-radius, radius, points)
    max_err = float(np.max(np.abs(evaluate_monomial(b, grid) - func(grid))))
    nodes = radius * chebyshev_nodes(PROJECTION_NODES)  # Gauss-Chebyshev: int w(t) g(t) dt ~ pi/N sum g(t_k)
    resid = evaluate_monomial(b, nodes) - func(nodes)
    weighted_l2 = float(np.sqrt(np.pi * np.mean(resid**2)))
    return {"max": max_err, "weighted_l2": weighted_l2}
