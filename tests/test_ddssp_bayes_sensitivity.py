"""Sensitivities and the analytic Gaussian mechanism: the constants of the reference note."""

import math

import numpy as np
import pytest

from ddssp.bayes.moments import record_statistics
from ddssp.bayes.sensitivity import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    degree_m_sensitivity,
    gaussian_delta,
    linear_sensitivity,
    linear_sensitivity_bound,
    logistic_sensitivity,
    poisson_sensitivity,
)


def test_logistic_sensitivity_constants():
    assert logistic_sensitivity() == pytest.approx(math.sqrt(4.5), abs=1e-12)
    assert logistic_sensitivity(1.0, 2.0, 1.0) == pytest.approx(3.1820, abs=1e-4)
    # t* = 2 is infeasible for sigma1 = 1, sigma2 = 2: the exact maximum is 2, the lemma's form 2.1213
    assert logistic_sensitivity(1.0, 1.0, 2.0) == pytest.approx(2.0, abs=1e-12)
    assert logistic_sensitivity(1.0, 1.0, 2.0, exact=False) == pytest.approx(2.1213, abs=1e-4)


def test_degree_m_and_poisson_constants():
    delta6, t6 = degree_m_sensitivity(6)
    assert delta6**2 == pytest.approx(12.7298, abs=1e-3) and t6 == pytest.approx(-0.6703, abs=1e-3)
    assert degree_m_sensitivity(2)[0] ** 2 == pytest.approx(4.5)
    assert degree_m_sensitivity(3) == pytest.approx((math.sqrt(8.0), -1.0))
    assert degree_m_sensitivity(4)[0] ** 2 == pytest.approx(8.653, abs=1e-3)
    assert poisson_sensitivity(1.0, 1.0) == pytest.approx(3.0)
    assert poisson_sensitivity(1.0, 2.0) == pytest.approx(4.743, abs=1e-3)


def test_ldp_linear_bound_and_exact_maximum():
    assert linear_sensitivity_bound(1.0, 1.0) == pytest.approx(2.3452, abs=1e-4)
    assert linear_sensitivity_bound(1.0, 2.0) == pytest.approx(math.sqrt(34), abs=1e-9)
    assert linear_sensitivity(1.0, 1.0) == pytest.approx(2.1213, abs=1e-4)
    assert linear_sensitivity(1.0, 2.0) == pytest.approx(4.69, abs=1e-2)
    assert linear_sensitivity(1.0, 2.0) <= linear_sensitivity_bound(1.0, 2.0)


def _ball(rng, n, d, R=1.0):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * R * rng.random((n, 1)) ** (1 / d)


@pytest.mark.parametrize("family", ["logistic", "linear"])
def test_released_statistics_never_exceed_the_sensitivity(family):
    rng = np.random.default_rng(0)
    d, n = 3, 20000
    X, Xp = _ball(rng, n, d), _ball(rng, n, d)
    if family == "logistic":
        y, yp = rng.choice([-1.0, 1.0], n), rng.choice([-1.0, 1.0], n)
        bound = logistic_sensitivity()
    else:
        y, yp = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        bound = linear_sensitivity(1.0, 1.0)
    dist = np.linalg.norm(record_statistics(X, y, family) - record_statistics(Xp, yp, family), axis=1)
    assert dist.max() <= bound + 1e-12
    # the worst case: unit x, x' at angle <x, x'> = -1/2, equal labels, sqrt(2)-scaled t2 reaches sqrt(4.5)
    x = np.array([1.0, 0.0, 0.0])
    xp = np.array([-0.5, math.sqrt(0.75), 0.0])
    t2 = lambda v: np.concatenate([v**2, math.sqrt(2) * np.array([v[0] * v[1], v[0] * v[2], v[1] * v[2]])])
    worst = np.sum((x - xp) ** 2) + np.sum((t2(x) - t2(xp)) ** 2)
    assert worst == pytest.approx(4.5)


@pytest.mark.parametrize("m", [2, 3])
def test_tensor_norm_identity(m):
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, xp = rng.normal(size=4), rng.normal(size=4)
        tx, txp = x, xp
        for _ in range(m - 1):
            tx, txp = np.multiply.outer(tx, x), np.multiply.outer(txp, xp)
        lhs = np.sum((tx - txp) ** 2)
        rhs = (x @ x) ** m + (xp @ xp) ** m - 2 * (x @ xp) ** m
        assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


def test_analytic_gaussian_reference_values():
    D = math.sqrt(4.5)
    expected = {0.1: 65.23, 0.3: 23.84, 0.5: 14.92, 1.0: 7.914, 2.0: 4.230}
    sigmas = []
    for eps, value in expected.items():
        sigma = analytic_gaussian_sigma(D, eps, 1e-5)
        assert sigma == pytest.approx(value, abs=6e-3)
        assert gaussian_delta(sigma, D, eps) <= 1e-5
        assert gaussian_delta(sigma, D, eps) == pytest.approx(1e-5, abs=1e-9)
        assert sigma < classical_gaussian_sigma(D, eps, 1e-5)
        sigmas.append(sigma)
    assert np.all(np.diff(sigmas) < 0)
    assert analytic_gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)
    assert classical_gaussian_sigma(D, 1.0, 1e-5) == pytest.approx(10.28, abs=1e-2)


def test_analytic_gaussian_rejects_bad_input():
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(1.0, 0.0, 1e-5)
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(1.0, 1.0, 1.5)
