"""Moments of the released statistics under the Gaussian feature model, against Monte Carlo."""


import numpy as np
import pytest

from ddssp.bayes.moments import (
    count_pairings,
    glm_moments,
    isserlis_moment,
    linear_moments,
    logistic_moments,
    record_statistics,
    statistic_names,
    vech,
)


def _sigma(d, seed, scale):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = A @ A.T + 0.5 * np.eye(d)
    return S / np.trace(S) * d * scale


def test_isserlis_identities():
    S = _sigma(4, 0, 1.0)
    assert isserlis_moment(S, (0, 1, 2, 3)) == pytest.approx(S[0, 1] * S[2, 3] + S[0, 2] * S[1, 3] + S[0, 3] * S[1, 2])
    assert isserlis_moment(S, (0, 1, 2)) == 0.0 and isserlis_moment(S, (3,)) == 0.0
    assert [count_pairings(k) for k in (2, 4, 6, 3)] == [1, 3, 15, 0]
    rng = np.random.default_rng(1)
    x = rng.multivariate_normal(np.zeros(4), S, size=2_000_000)
    for idx in [(0, 0, 1, 2, 3, 3), (0, 1, 1, 2, 2, 3)]:
        mc = np.mean(np.prod(x[:, list(idx)], axis=1))
        assert isserlis_moment(S, idx) == pytest.approx(mc, rel=0.03)


def test_layout_names_match_statistics():
    X = np.arange(6.0).reshape(2, 3)
    y = np.array([1.0, -1.0])
    assert len(statistic_names(3, "linear")) == record_statistics(X, y, "linear").shape[1] == 10
    assert len(statistic_names(3, "logistic")) == record_statistics(X, y, "logistic").shape[1] == 3 + 6
    np.testing.assert_allclose(record_statistics(X, y, "linear")[0], vech(np.outer([0, 1, 2, 1], [0, 1, 2, 1])))


def test_linear_moments_match_monte_carlo():
    rng = np.random.default_rng(2)
    d = 3
    S = _sigma(d, 3, 0.3)
    theta = np.array([0.8, -0.4, 0.2])
    noise_var = 0.05
    X = rng.multivariate_normal(np.zeros(d), S, size=1_000_000)
    y = X @ theta + rng.normal(0, np.sqrt(noise_var), size=X.shape[0])
    t = record_statistics(X, y, "linear")
    mu, cov = linear_moments(theta, S, noise_var)
    np.testing.assert_allclose(mu, t.mean(axis=0), atol=3e-3)
    np.testing.assert_allclose(cov, np.cov(t.T), atol=4e-3)
    assert np.allclose(cov, cov.T) and np.linalg.eigvalsh(cov).min() > -1e-12


def test_logistic_moments_match_monte_carlo_and_sign():
    rng = np.random.default_rng(4)
    d = 3
    S = _sigma(d, 5, 0.25)
    theta = np.array([-0.9, -0.5, 0.3])
    v = theta @ S @ theta
    assert v < 0.5  # inside the range where the cubic Taylor series is accurate
    X = rng.multivariate_normal(np.zeros(d), S, size=2_000_000)
    y = np.where(rng.random(X.shape[0]) < 1 / (1 + np.exp(-X @ theta)), 1.0, -1.0)
    t = record_statistics(X, y, "logistic")
    mu, cov = logistic_moments(theta, S)
    scale = np.abs(t).mean()
    np.testing.assert_allclose(mu, t.mean(axis=0), atol=0.02 * scale + 2e-3)
    np.testing.assert_allclose(cov, np.cov(t.T), atol=0.02 * np.abs(cov).max())
    # the sign erratum: E[y x] = +(Sigma theta)(1/2 - v/8), not its negative
    a = S @ theta
    assert np.all(np.sign(t.mean(axis=0)[:d]) == np.sign(a))
    assert np.all(np.sign(mu[:d]) == np.sign(a))
    assert np.linalg.eigvalsh(cov).min() > 0


def test_glm_moments_dispatch_and_errors():
    S = _sigma(2, 6, 0.3)
    np.testing.assert_allclose(glm_moments("logistic", np.ones(2), S)[0], logistic_moments(np.ones(2), S)[0])
    with pytest.raises(ValueError):
        glm_moments("poisson", np.ones(2), S)


def test_jax_backend_matches_numpy():
    jnp = pytest.importorskip("jax.numpy", reason="the bayes extra (jax) is not installed")
    import jax

    jax.config.update("jax_enable_x64", True)
    S = _sigma(3, 7, 0.3)
    theta = np.array([0.3, -0.2, 0.5])
    for family, args in (("linear", (0.1,)), ("logistic", ())):
        ref = glm_moments(family, theta, S, *args)
        got = glm_moments(family, jnp.asarray(theta), jnp.asarray(S), *args, xp=jnp)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(np.asarray(g), r, rtol=1e-12, atol=1e-14)
