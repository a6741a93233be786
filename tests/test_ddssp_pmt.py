"""PMT (public-moment transform) ridge and logistic, DP-RR / DP-LR: exact algebra without noise,
clipping, noise constants, sensitivities, accounting, public-moment sources, and utility."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ddssp import PMTLinearRegression, PMTLogisticRegression, mean_squared_error, roc_auc
from ddssp.baselines.pmt import (
    clip_rows,
    dp_ridge,
    inverse_sqrt_psd,
    log_term,
    noisy_newton,
    pmt_logistic,
    pmt_ridge,
    pmt_transform,
    private_only_radii,
    symmetric_gaussian,
)
from ddssp.solvers import fit_logistic, sigmoid
from ddssp.statistics import sufficient_statistics
from marginals import InsecureRandom, cdp_eps, cdp_rho, gdp_delta, gdp_mu
from marginals.datasets import demo_dataset

NO_NOISE = math.inf  # mu = inf: every noise scale is 0
NO_CLIP = 1e-300  # eta -> 0: the radius grows past every row


def quiet_rng(seed: int) -> InsecureRandom:
    return InsecureRandom(seed, warn=False)


def ill_conditioned(n_private: int, n_public: int, seed: int, d: int = 10, noise: float = 0.05):
    """X ~ N(m, Psi) with Psi's eigenvalues log-spaced from 1 to 1e-3, y = X beta + N(0, noise^2)."""
    rs = np.random.default_rng(seed)
    q = np.linalg.qr(rs.standard_normal((d, d)))[0]
    root = q * np.sqrt(np.logspace(0, -3, d))
    mean = rs.standard_normal(d) * 0.5
    beta = rs.standard_normal(d)

    def draw(n):
        X = mean + rs.standard_normal((n, d)) @ root.T
        return X, X @ beta + noise * rs.standard_normal(n)

    (A, y), (B, yb) = draw(n_private), draw(n_public)
    return A, y, B.T @ B / n_public, float(np.mean(yb**2)), beta


def test_ridge_recovers_ordinary_ridge_without_noise_or_clipping():
    A, y, moment, y_moment, _ = ill_conditioned(10_000, 200, seed=1)
    n, d = A.shape
    assert np.linalg.cond(A.T @ A / n) > 1e3
    for ridge in (0.0, 0.1):
        fit = pmt_ridge(A, y, moment, y_moment, NO_NOISE, ridge, NO_CLIP, quiet_rng(1))
        assert pmt_transform(A, moment, NO_CLIP)[2] == 0  # no row clipped (the fit never reports the count)
        assert clip_rows(y / math.sqrt(y_moment), fit.y_radius)[1] == 0
        exact = np.linalg.solve(A.T @ A / n + ridge * np.eye(d), A.T @ y / n)
        assert np.max(np.abs(fit.coef - exact)) <= 1e-10 * max(1.0, np.max(np.abs(exact)))


def plain_newton(X: np.ndarray, y01: np.ndarray, ridge: float, steps: int) -> list[np.ndarray]:
    beta, out = np.zeros(X.shape[1]), []
    for _ in range(steps):
        p = sigmoid(X @ beta)
        grad = -X.T @ (y01 - p) / len(X) + ridge * beta
        hess = (X * (p * (1 - p))[:, None]).T @ X / len(X) + ridge * np.eye(X.shape[1])
        beta = beta - np.linalg.solve(hess, grad)
        out.append(beta)
    return out


def test_newton_iterates_are_invariant_under_the_transform():
    A, _, moment, _, beta = ill_conditioned(5000, 200, seed=2, d=6)
    rs = np.random.default_rng(2)
    y01 = (rs.random(len(A)) < sigmoid(A @ beta)).astype(float)
    ridge, steps = 1e-3, 8
    transformed, _, clipped, root = pmt_transform(A, moment, NO_CLIP)
    assert clipped == 0
    _, _, iterates = noisy_newton(transformed, y01, ridge * root @ root, 1e9, NO_NOISE, steps, quiet_rng(2))
    assert len(iterates) == steps  # exactly T updates
    for got, want in zip(iterates, plain_newton(A, y01, ridge, steps)):
        assert np.allclose(root @ got, want, rtol=1e-7, atol=1e-9)
    # and they converge to the penalised maximum-likelihood fit
    final = pmt_logistic(A, y01, moment, NO_NOISE, ridge, NO_CLIP, 25, quiet_rng(2)).coef
    assert np.allclose(final, fit_logistic(A, 2 * y01 - 1, l2=ridge), rtol=1e-6, atol=1e-8)


def test_clipping_radius_and_clipped_fraction():
    rs = np.random.default_rng(3)
    d, n, eta = 8, 20_000, 0.05
    cov = np.diag(np.logspace(0, -2, d))
    B = rs.multivariate_normal(np.zeros(d), cov, size=10 * d)
    A = rs.multivariate_normal(np.zeros(d), cov, size=n)
    transformed, radius, clipped, _ = pmt_transform(A, B.T @ B / len(B), eta)
    assert radius == pytest.approx(math.sqrt(d * (1 + math.log(2 * n / eta))))
    assert np.all(np.linalg.norm(transformed, axis=1) <= radius * (1 + 1e-12))
    assert clipped / n <= eta
    y = 50 * rs.standard_normal(n)
    fit = pmt_ridge(A, y, B.T @ B / len(B), 1.0, 1.0, 0.0, eta, quiet_rng(3))  # a wrong y scale: y is clipped
    assert fit.y_radius == pytest.approx(math.sqrt(log_term(n, eta)))
    assert clip_rows(y, fit.y_radius)[1] > 0 and not hasattr(fit, "y_clipped")  # clipped, never reported
    rows, count = clip_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    assert count == 1 and np.allclose(rows, [[0.6, 0.8], [0.3, 0.4]])


@pytest.mark.parametrize(
    "d, n, eta, mu_release, sigmas, radius",
    [(10, 10_000, 0.05, 1.0, (0.027798, 0.0087906), 11.7895), (11, 4649, 1e-3, 20.0, (0.0040331, 0.0012160), 13.693)],
)
def test_ridge_noise_constants(d, n, eta, mu_release, sigmas, radius):
    rs = np.random.default_rng(4)
    A, y = rs.standard_normal((n, d)), rs.standard_normal(n)
    fit = pmt_ridge(A, y, np.eye(d), 1.0, mu_release * math.sqrt(2), 0.0, eta, quiet_rng(4))
    assert fit.radius == pytest.approx(radius, rel=1e-4)
    assert fit.sigmas == pytest.approx(sigmas, rel=1e-4)
    assert fit.mu_release == pytest.approx(mu_release)
    if d == 10:
        assert fit.y_radius == pytest.approx(3.7282, rel=1e-4)


def test_logistic_noise_constants():
    rs = np.random.default_rng(5)
    d, n, steps = 8, 10_000, 5
    A, y01 = rs.standard_normal((n, d)), (rs.random(n) < 0.5).astype(float)
    # the paper's mu = 1 per iteration pair is sqrt(2) mu-GDP in total
    fit = pmt_logistic(A, y01, np.eye(d), math.sqrt(2), 0.0, 0.05, steps, quiet_rng(5))
    assert fit.sigmas == pytest.approx((0.012432, 0.0047158), rel=1e-4)
    assert fit.mu_release * math.sqrt(2 * steps) == pytest.approx(math.sqrt(2))


def test_replace_one_sensitivities_hold_for_adversarial_rows():
    rs = np.random.default_rng(6)
    d, n, eta = 5, 500, 0.05
    A, y = rs.standard_normal((n, d)), rs.standard_normal(n)
    moment = np.eye(d) * 0.5
    radius, y_radius = math.sqrt(d * log_term(n, eta)), math.sqrt(log_term(n, eta))
    for trial in range(40):
        i = rs.integers(n)
        A2, y2 = A.copy(), y.copy()
        A2[i] = rs.choice([-1, 1]) * 1e3 * np.eye(d)[rs.integers(d)] if trial % 2 else 1e3 * rs.standard_normal(d)
        y2[i] = rs.choice([-1e3, 1e3])
        t1, _, _, _ = pmt_transform(A, moment, eta)
        t2, _, _, _ = pmt_transform(A2, moment, eta)
        y1t, y2t = clip_rows(y, y_radius)[0], clip_rows(y2, y_radius)[0]
        assert np.linalg.norm(t1.T @ t1 - t2.T @ t2) / n <= 2 * radius**2 / n * (1 + 1e-9)
        assert np.linalg.norm(t1.T @ y1t - t2.T @ y2t) / n <= 2 * radius * y_radius / n * (1 + 1e-9)
        beta = rs.standard_normal(d) * 0.3
        y01, y01b = (y > 0).astype(float), (y2 > 0).astype(float)
        p1, p2 = sigmoid(t1 @ beta), sigmoid(t2 @ beta)
        grad_change = (t1.T @ (y01 - p1) - t2.T @ (y01b - p2)) / n
        hess_change = ((t1 * (p1 * (1 - p1))[:, None]).T @ t1 - (t2 * (p2 * (1 - p2))[:, None]).T @ t2) / n
        assert np.linalg.norm(grad_change) <= 2 * radius / n * (1 + 1e-9)
        assert np.linalg.norm(hess_change) <= radius**2 / (2 * n) * (1 + 1e-9)


def test_symmetric_gaussian_noise():
    rng = quiet_rng(7)
    draws = np.stack([symmetric_gaussian(4, 0.3, rng) for _ in range(4000)])
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    var = draws.var(axis=0)
    assert np.all(np.abs(var / 0.09 - 1) < 0.15)  # diagonal and off-diagonal entries alike


def test_transform_conditions_the_gram_matrix():
    A, _, moment, _, _ = ill_conditioned(10_000, 200, seed=8)
    transformed, _, _, root = pmt_transform(A, moment, 0.05)
    assert np.linalg.cond(A.T @ A / len(A)) > 1e3
    assert np.linalg.cond(transformed.T @ transformed / len(A)) < 3
    assert np.allclose(root @ moment @ root, np.eye(len(moment)), atol=1e-8)
    with pytest.raises(ValueError, match="positive definite"):
        inverse_sqrt_psd(np.diag([1.0, 0.0]))


@pytest.mark.slow
def test_pmt_ridge_beats_dp_rr_on_an_ill_conditioned_design():
    """Reference reproduction (median ||beta_DP - beta||): mu 1: PMT 2.08 vs DP-RR 5.16; mu 3: 0.70 vs 4.99."""
    for mu in (1.0, 3.0):
        pmt_err, rr_err = [], []
        for rep in range(40):
            A, y, moment, y_moment, beta = ill_conditioned(10_000, 200, seed=100 + rep)
            rng = quiet_rng(rep)
            pmt_err.append(np.linalg.norm(pmt_ridge(A, y, moment, y_moment, mu, 0.0, 0.05, rng).coef - beta))
            radius, y_radius = private_only_radii(float(np.trace(moment)), y_moment, len(A), A.shape[1], 0.05)
            rr_err.append(np.linalg.norm(dp_ridge(A, y, radius, y_radius, mu, 0.0, rng).coef - beta))
        assert np.median(pmt_err) < 0.7 * np.median(rr_err), mu
    # and more budget helps PMT
    assert np.median(pmt_err) < 2.0


DEMO = demo_dataset(20_000, seed=11)
PUBLIC = demo_dataset(2_000, seed=12)
CAT = ["sector", "region"]


class ReleaseLike:
    """A marginal source that is not a Dataset (as an AIM release is): .domain and .marginals."""

    def __init__(self, data):
        self.domain, self._data, self.total = data.domain, data, data.total

    def marginals(self, cliques):
        return self._data.marginals(cliques)


def test_public_moment_sources_agree_and_are_recorded():
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, source in (("rows", PUBLIC), ("release", ReleaseLike(PUBLIC)), ("frame", PUBLIC.to_df())):
            fits[name] = PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment=source, insecure_seed=3).fit(DEMO)
        enc = fits["rows"].encoding_
        stats = sufficient_statistics(PUBLIC, enc)
        p = enc.n_features
        Z = np.zeros((p + 1, p + 1))
        Z[:p, :p], Z[:p, p], Z[p, :p], Z[p, p] = stats.XtX, stats.Xty, stats.Xty, stats.yty
        fits["matrix"] = PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment=Z / stats.n, insecure_seed=3).fit(DEMO)
        fits["uniform"] = PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment="uniform", insecure_seed=3).fit(DEMO)
    for name in ("release", "frame", "matrix"):
        assert np.allclose(fits[name].coef_, fits["rows"].coef_, rtol=1e-9, atol=1e-12), name
    assert fits["rows"].public_moment_source_ == "public rows (n = 2000)"
    assert fits["release"].public_moment_source_ == "DP release (post-processing)"
    assert fits["uniform"].public_moment_source_ == "uniform over the domain"
    assert not np.allclose(fits["uniform"].coef_, fits["rows"].coef_)


def test_estimators_accounting_and_errors():
    with pytest.warns(UserWarning, match="seeded noise source"):
        model = PMTLinearRegression(0.5, 1e-5, "hours", CAT, public_moment=PUBLIC, insecure_seed=1).fit(DEMO)
    priv = model.privacy_
    # exact discrete noise is accounted in zCDP (issue 23): mu = sqrt(2 rho), rho-zCDP implies (0.5, 1e-5)-DP
    assert priv["mu"] == pytest.approx(math.sqrt(2 * cdp_rho(0.5, 1e-5))) and priv["rho"] == cdp_rho(0.5, 1e-5)
    assert cdp_eps(priv["mu"] ** 2 / 2, 1e-5) <= 0.5 * (1 + 1e-9) and priv["mu"] < gdp_mu(0.5, 1e-5)
    assert model.mu_release_ * math.sqrt(2) == pytest.approx(priv["mu"])
    assert priv["private"] is False and priv["neighbours"] == "replace one row (n public)"
    assert priv["mechanism"].startswith("DP-PMT ridge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logit = PMTLogisticRegression(0.5, 1e-5, "income", CAT, public_moment=PUBLIC, newton_steps=4,
                                      insecure_seed=1).fit(DEMO)  # fmt: skip
        baseline = PMTLogisticRegression(0.5, 1e-5, "income", CAT, public_moment=PUBLIC, moment_transform=False,
                                         insecure_seed=1).fit(DEMO)  # fmt: skip
    assert logit.mu_release_ * math.sqrt(2 * 4) == pytest.approx(logit.privacy_["mu"])
    assert baseline.privacy_["mechanism"].startswith("DP-LR")
    assert logit.predict_proba(DEMO.to_df()).shape == (len(DEMO), 2)
    with pytest.raises(ValueError, match="needs a public second moment"):
        PMTLinearRegression(1.0, 1e-5, "hours", CAT).fit(DEMO)
    with pytest.raises(ValueError, match="accountant=None"):
        PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment=PUBLIC, accountant=object()).fit(DEMO)
    with pytest.raises(ValueError, match="only named source"):
        PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment="normal").fit(DEMO)
    with pytest.raises(ValueError, match="expected a finite"):
        PMTLinearRegression(1.0, 1e-5, "hours", CAT, public_moment=np.eye(3)).fit(DEMO)


@pytest.mark.slow
def test_estimators_approach_the_non_private_fit_at_large_epsilon():
    test = demo_dataset(4000, seed=13).to_df()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin = PMTLinearRegression(50.0, 1e-5, "hours", CAT, public_moment=PUBLIC, insecure_seed=2).fit(DEMO)
        logit = PMTLogisticRegression(50.0, 1e-5, "income", CAT, public_moment=PUBLIC, insecure_seed=2).fit(DEMO)
    X, y = lin.encoding_.encode(DEMO.to_df())
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    y_test = lin.encoding_.encode_target(test)
    ols_mse = mean_squared_error(y_test, lin.encoding_.encode_features(test) @ ols)
    assert mean_squared_error(y_test, lin.predict_encoded(test)) < ols_mse * 1.02
    mle = fit_logistic(*logit.encoding_.encode(DEMO.to_df()))
    auc_mle = roc_auc(test["income"].to_numpy(), logit.encoding_.encode_features(test) @ mle)
    assert roc_auc(test["income"].to_numpy(), logit.decision_function(test)) > auc_mle - 0.01
