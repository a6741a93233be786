"""ddssp.chebyshev: coefficients of the log-sigmoid approximation in both conventions, and their properties."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial import chebyshev as C

from ddssp.chebyshev import (
    approximation_errors,
    chebyshev_coefficients,
    chebyshev_nodes,
    evaluate_monomial,
    log_sigmoid,
    monomial_coefficients,
    numerical_recipes_coefficients,
)


def test_known_interpolation_coefficients_on_minus6_6():
    cheb = chebyshev_coefficients(log_sigmoid, degree=2, radius=6.0, method="interpolation")
    assert np.allclose(numerical_recipes_coefficients(cheb), [-3.93356, 3.0, -1.27363], atol=1e-5)
    assert np.allclose(monomial_coefficients(cheb, 6.0), [-0.693147, 0.5, -0.0707575], atol=1e-6)
    assert np.isclose(monomial_coefficients(cheb, 6.0)[0], np.log(0.5))


def test_interpolant_passes_through_the_nodes():
    for degree in (2, 3, 6):
        b = monomial_coefficients(chebyshev_coefficients(degree=degree, radius=4.0), 4.0)
        s = 4.0 * chebyshev_nodes(degree + 1)
        assert np.allclose(evaluate_monomial(b, s), log_sigmoid(s), atol=1e-12)


def test_monomial_form_equals_the_chebyshev_series():
    cheb = chebyshev_coefficients(degree=5, radius=3.0, method="projection")
    s = np.linspace(-3, 3, 41)
    assert np.allclose(evaluate_monomial(monomial_coefficients(cheb, 3.0), s), C.chebval(s / 3.0, cheb), atol=1e-12)


def test_projection_is_the_weighted_least_squares_best_and_differs_from_interpolation():
    interp = chebyshev_coefficients(degree=2, radius=6.0, method="interpolation")
    proj = chebyshev_coefficients(degree=2, radius=6.0, method="projection")
    assert not np.allclose(interp, proj, atol=1e-3)
    errors = {m: approximation_errors(monomial_coefficients(c, 6.0), 6.0) for m, c in (("i", interp), ("p", proj))}
    assert errors["p"]["weighted_l2"] < errors["i"]["weighted_l2"]
    assert errors["p"]["max"] < errors["i"]["max"]
    # optimality: any perturbation of the projection's coefficients increases the weighted L2 error
    rng = np.random.default_rng(0)
    for _ in range(20):
        other = proj + 0.01 * rng.standard_normal(3)
        assert approximation_errors(monomial_coefficients(other, 6.0), 6.0)["weighted_l2"] > errors["p"]["weighted_l2"]


def test_error_shrinks_with_degree():
    errs = [approximation_errors(monomial_coefficients(chebyshev_coefficients(degree=d), 6.0), 6.0)["max"]
            for d in (2, 4, 8)]
    assert errs[0] > errs[1] > errs[2]


def test_log_sigmoid_is_stable():
    assert np.allclose(log_sigmoid(np.array([-800.0, 0.0, 800.0])), [-800.0, np.log(0.5), 0.0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="method must be one of"):
        chebyshev_coefficients(method="lsq")
    with pytest.raises(ValueError, match="radius must be"):
        chebyshev_coefficients(radius=0.0)
    with pytest.raises(ValueError, match="degree must be"):
        chebyshev_coefficients(degree=-1)
