"""LDP likelihoods: the clipped Gaussian with Laplace noise against quadrature, OUE against brute force."""

import itertools
import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from ddssp.bayes.ldp import (
    clipped_gaussian_laplace_logpdf,
    laplace_release,
    oue_estimate,
    oue_keep_probability,
    oue_log_likelihood,
    oue_perturb,
    oue_record_log_likelihood,
    project_simplex,
)
from marginals.randomness import InsecureRandom


def _direct(z, mu, s, a, b, eps):
    lam = (b - a) / eps
    lap = lambda x: np.exp(-abs(z - x) / lam) / (2 * lam)
    inner = quad(lambda x: norm.pdf(x, mu, s) * lap(x), a, b, points=[min(max(z, a), b)], epsabs=0, epsrel=1e-12)[0]
    return norm.cdf((a - mu) / s) * lap(a) + norm.sf((b - mu) / s) * lap(b) + inner


@pytest.mark.parametrize("mu,s,a,b,eps", [(0.7, 1.3, -1.0, 2.0, 0.8), (-3.0, 0.5, -5.0, 5.0, 0.1), (4.0, 2.0, 0.0, 5.0, 3.0)])
def test_clipped_gaussian_laplace_matches_quadrature(mu, s, a, b, eps):
    for z in (-7.0, a, (a + b) / 2, b - 1e-3, b, 9.0):
        got = math.exp(clipped_gaussian_laplace_logpdf(np.array(z), mu, s, a, b, eps))
        assert got == pytest.approx(_direct(z, mu, s, a, b, eps), rel=1e-8)
    f = lambda z: math.exp(clipped_gaussian_laplace_logpdf(np.array(z), mu, s, a, b, eps))
    total = quad(f, -np.inf, a)[0] + quad(f, a, b)[0] + quad(f, b, np.inf)[0]
    assert total == pytest.approx(1.0, abs=1e-7)


def test_clipped_gaussian_laplace_is_finite_in_log_space():
    # eps sigma / (b - a) = 125: the printed closed form overflows exp(7812)
    z = np.array([-50.0, 0.0, 0.3, 50.0])
    values = clipped_gaussian_laplace_logpdf(z, 0.0, 5.0, -1.0, 1.0, 50.0)
    assert np.all(np.isfinite(values))
    assert values[1] > values[0] and values[0] == pytest.approx(values[3])
    assert np.all(np.isfinite(clipped_gaussian_laplace_logpdf(z, 0.0, 0.01, -1.0, 1.0, 1e-3)))


def test_oue_likelihood_matches_brute_force_and_normalises():
    eps, d = 0.9, 4
    theta = np.array([0.5, 0.2, 0.2, 0.1])
    p = oue_keep_probability(eps)
    q = 1 - p
    patterns = np.array(list(itertools.product([0, 1], repeat=d)), dtype=np.float64)
    brute = np.zeros(len(patterns))
    for i, z in enumerate(patterns):
        for k in range(d):
            prob = 0.5  # the true bit is 1 or 0 with probability 1/2
            for j in range(d):
                if j != k:
                    prob *= q if z[j] == 1 else p
            brute[i] += theta[k] * prob
    got = np.exp(oue_record_log_likelihood(theta, patterns, eps))
    np.testing.assert_allclose(got, brute, rtol=1e-12)
    assert got.sum() == pytest.approx(1.0)
    assert oue_log_likelihood(theta, patterns[:3], eps) == pytest.approx(np.log(brute[:3]).sum())


def test_oue_estimator_is_unbiased_and_projection_is_on_simplex():
    truth = np.array([0.7, 0.2, 0.1])
    rng = np.random.default_rng(0)
    eps, n = 0.5, 400
    estimates = []
    for rep in range(200):
        items = rng.choice(3, size=n, p=truth)
        estimates.append(oue_estimate(oue_perturb(items, 3, eps, InsecureRandom(rep, warn=False)), eps))
    estimates = np.array(estimates)
    se = estimates.std(axis=0) / np.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * se)
    proj = project_simplex(np.array([0.9, 0.3, -0.2]))
    assert proj.sum() == pytest.approx(1.0) and np.all(proj >= 0)


def test_ldp_reports_come_from_a_random_source():
    with pytest.raises(TypeError):
        oue_perturb(np.array([0, 1]), 2, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError):
        laplace_release(np.zeros(3), 0.0, 1.0, 1.0, np.random.default_rng(0))
    z = laplace_release(np.array([-10.0, 0.5, 10.0]), 0.0, 1.0, 1e6, InsecureRandom(1, warn=False))
    np.testing.assert_allclose(z, [0.0, 0.5, 1.0], atol=1e-4)  # clipped to [a, b] before the noise
