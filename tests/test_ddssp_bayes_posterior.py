"""The noise-aware NUTS posterior (needs the bayes extra) and the core's independence from JAX."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from ddssp.base import released_attributes
from ddssp.bayes.release import clip_rows, exact_statistics, gaussian_ssp, local_ssp
from marginals.randomness import InsecureRandom

THETA = np.array([-0.9, -0.5, 0.3])


def test_core_imports_without_jax():
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['numpyro'] = None\n"
        "import ddssp, ddssp.bayes.posterior, ddssp.bayes.ldp, ddssp.bayes.intervals, ddssp.bayes.release\n"
        "from ddssp.bayes.posterior import NoiseAwareGLM, require_numpyro\n"
        "try:\n    require_numpyro()\nexcept ImportError as e:\n    print('clear:', 'dp-marginals[bayes]' in str(e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "clear: True" in out.stdout


def _synthetic(seed, n=1000, d=3):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = A @ A.T + 0.3 * np.eye(d)
    S *= 0.25 * d / np.trace(S)
    X = clip_rows(rng.multivariate_normal(np.zeros(d), S, size=n), 1.0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ THETA)), 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def numpyro():
    return pytest.importorskip("numpyro", reason="the bayes extra (numpyro, jax) is not installed: pip install '.[bayes]'")


@pytest.mark.slow
def test_logistic_posterior_has_the_right_signs(numpyro):
    from ddssp.bayes.posterior import NoiseAwareGLM

    X, y = _synthetic(0, n=4000)
    stats = gaussian_ssp(X, y, "logistic", 10.0, 1e-5, insecure_seed=InsecureRandom(0, warn=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = NoiseAwareGLM(num_samples=300, random_state=0).fit(stats)
    assert post.coef_samples_.shape == (4 * 300, 3)
    assert np.all(np.sign(post.coef_) == np.sign(THETA)), post.coef_  # guards the Eq. 5 sign erratum
    assert np.all(post.rhat_ < 1.1) and post.converged_
    ci = post.conf_int(0.1)
    assert np.all(ci[:, 0] < post.coef_) and np.all(post.coef_ < ci[:, 1])
    # issue 23: a fitted posterior holds only its hyperparameters and allow-listed released values
    # (tests/test_ddssp_released_attributes.py does the same for every other estimator)
    allowed = set(released_attributes(post))
    assert set(vars(post)) - allowed - set(post.get_params()) == set(), sorted(set(vars(post)) - allowed)
    assert allowed <= set(vars(post))


@pytest.mark.slow
def test_one_chain_fits_and_predicts(numpyro):
    # issue 24 leftover: num_chains=1 crashed (the chains' starting points kept their chain axis)
    from ddssp.bayes.posterior import NoiseAwareGLM

    X, y = _synthetic(2, n=2000)
    stats = gaussian_ssp(X, y, "logistic", 10.0, 1e-5, insecure_seed=InsecureRandom(2, warn=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = NoiseAwareGLM(num_samples=200, num_chains=1, random_state=2).fit(stats)
    assert post.coef_samples_.shape == (200, 3) and post.converged_ and np.all(np.isnan(post.rhat_))
    assert np.all(np.sign(post.coef_[:2]) == np.sign(THETA[:2])), post.coef_  # the two large coefficients
    assert post.predict_proba(X[:5]).shape == (5, 2) and 0.5 < post.score(X, np.where(y > 0, 1, 0)) <= 1


@pytest.mark.slow
def test_noise_widens_the_posterior_and_ldp_sum_fits(numpyro):
    from ddssp.bayes.posterior import NoiseAwareGLM

    X, y = _synthetic(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = NoiseAwareGLM(num_samples=300, random_state=1).fit(exact_statistics(X, y, "logistic"))
        noisy = NoiseAwareGLM(num_samples=300, random_state=1).fit(
            local_ssp(X, y, "logistic", 2.0, 1e-5, insecure_seed=InsecureRandom(1, warn=False))
        )
    width = lambda post: np.diff(post.conf_int(0.1), axis=1).mean()
    assert width(noisy) > 1.5 * width(exact)  # aggregate LDP noise N sigma^2 is in the likelihood


@pytest.mark.slow
def test_oue_posterior_stays_on_the_simplex(numpyro):
    from ddssp.bayes.ldp import oue_estimate, oue_perturb, oue_posterior, project_simplex

    rng = np.random.default_rng(0)
    truth = np.array([0.7, 0.2, 0.1])
    items = rng.choice(3, size=300, p=truth)
    reports = oue_perturb(items, 3, 0.5, InsecureRandom(0, warn=False))
    draws, rhat = oue_posterior(reports, 0.5, num_samples=300, random_state=0)
    flat = draws.reshape(-1, 3)
    assert np.all(flat >= 0) and np.allclose(flat.sum(axis=1), 1.0)
    assert np.all(rhat["theta"] < 1.1)
    point = project_simplex(oue_estimate(reports, 0.5))
    assert np.abs(flat.mean(axis=0) - truth).max() < 0.25 and np.abs(point - truth).max() < 0.35


@pytest.mark.slow
def test_linear_posterior_credible_intervals_are_calibrated(numpyro):
    from ddssp.bayes.posterior import NoiseAwareGLM

    theta = np.array([0.6, -0.4])
    covered = []
    for rep in range(6):
        rng = np.random.default_rng(100 + rep)
        X = clip_rows(rng.normal(0, 0.4, size=(1000, 2)), 1.0)
        y = np.clip(X @ theta + rng.normal(0, 0.2, size=1000), -1, 1)
        stats = gaussian_ssp(X, y, "linear", 1.0, 1e-5, insecure_seed=InsecureRandom(rep, warn=False))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = NoiseAwareGLM(num_samples=200, random_state=rep).fit(stats)
        ci = post.conf_int(0.1)
        covered += list((ci[:, 0] <= theta) & (theta <= ci[:, 1]))
    # 12 intervals at nominal 90%: fewer than 7 covered has probability < 0.1% if calibrated
    assert sum(covered) >= 7, np.mean(covered)


def test_nuts_starts_from_init_params_when_the_prior_median_has_no_density(numpyro):
    # numpyro checks its init strategy's point even when init_params are given: a prior median of zero
    # density used to stop the logistic posterior on adult at eps 1 ("Cannot find valid initial parameters")
    import jax.numpy as jnp
    import numpyro.distributions as dist

    from ddssp.bayes.posterior import require_numpyro, run_nuts

    require_numpyro()  # 64-bit floats before any array is made

    def model():
        x = numpyro.sample("x", dist.Normal(0.0, 1.0))
        numpyro.factor("hole", jnp.where(jnp.abs(x) < 3.0, -jnp.inf, 0.0))  # holds every median of prior draws

    samples, _ = run_nuts(
        model, {}, num_samples=30, num_chains=2, init_params={"x": jnp.array([3.5, -4.0])}, init_values={"x": jnp.asarray(3.5)}
    )
    assert samples["x"].shape == (2, 30) and np.all(np.abs(samples["x"]) >= 3.0)


def test_safe_start_has_a_finite_density_where_the_prior_median_does_not(numpyro):
    # adult-like logistic statistics: features not centred, many rows, little noise (eps 1)
    import functools

    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy, unconstrain_fn
    from scipy import stats as sps

    from ddssp.bayes.posterior import glm_model, safe_start

    rng = np.random.default_rng(3)
    X = clip_rows(0.25 + 0.2 * rng.normal(size=(5000, 4)), 1.0)
    y = np.where(rng.random(5000) < 1 / (1 + np.exp(-X @ np.array([2.0, 1.5, 0.5, 1.0]))), 1.0, -1.0)
    stats = gaussian_ssp(X, y, "logistic", 1.0, 1e-5, insecure_seed=InsecureRandom(3, warn=False), fit_intercept=False)
    model = functools.partial(glm_model, d=4, family="logistic", theta_cap=9.0, scale_sd=2.5, lkj_eta=2.0, noise_sd=1.0)
    data = {"z": jnp.asarray(stats.z), "noise_cov": jnp.asarray(stats.noise_cov), "n": jnp.asarray(float(stats.n))}

    def energy(values):
        u = unconstrain_fn(model, (), data, {k: jnp.asarray(v) for k, v in values.items()})
        return float(potential_energy(model, (), data, u))

    safe = safe_start(4, "logistic", 2.5, 1.0)
    median = dict(safe, p=np.ones(4), rho=np.asarray(sps.chi2(4).median()))  # ||theta|| = 1.83: Taylor covariance indefinite
    assert not np.isfinite(energy(median))
    assert np.isfinite(energy(safe))


def _uncentred(seed, n=2000):
    # features far from zero and an intercept that a fit without one would fold into the coefficients
    rng = np.random.default_rng(seed)
    X = clip_rows(np.column_stack([0.5 + 0.15 * rng.normal(size=n), 0.4 + 0.15 * rng.normal(size=n)]), 1.0)
    return X, rng


def test_predictions_follow_the_posterior_draws_and_sklearn_conventions():
    # issue 24: predict_proba is the posterior predictive (mean of sigmoid over draws), predict its most
    # likely class in the release's label coding, score accuracy / R^2; set from known draws (no NUTS)
    from ddssp.bayes.posterior import NoiseAwareGLM

    post = NoiseAwareGLM()
    post.coef_samples_ = np.array([[2.0, -1.0], [0.0, -3.0]])
    post.intercept_samples_ = np.array([0.5, -0.5])
    post.coef_, post.intercept_, post.n_features_in_ = post.coef_samples_.mean(axis=0), 0.0, 2
    post.classes_ = np.array([0.0, 1.0])
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.1]])
    sig = lambda u: 1 / (1 + np.exp(-u))
    p1 = 0.5 * (sig(X @ [2.0, -1.0] + 0.5) + sig(X @ [0.0, -3.0] - 0.5))
    np.testing.assert_allclose(post.predict_proba(X), np.column_stack([1 - p1, p1]))
    np.testing.assert_array_equal(post.predict(X), (p1 > 0.5).astype(float))
    assert post.score(X, np.array([1.0, 0.0, 0.0])) == pytest.approx(np.mean(post.predict(X) == [1, 0, 0]))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        post.predict(np.ones((2, 3)))
    del post.classes_  # linear: the posterior-mean prediction, R^2
    post.intercept_ = 0.25
    np.testing.assert_allclose(post.predict(X), X @ post.coef_ + 0.25)
    y = X @ post.coef_ + 0.25 + np.array([0.1, -0.1, 0.0])
    assert post.score(X, y) == pytest.approx(1 - 0.02 / np.sum((y - y.mean()) ** 2))
    with pytest.raises(AttributeError, match="logistic"):
        post.predict_proba(X)
    with pytest.raises(RuntimeError, match="not fitted"):
        NoiseAwareGLM().predict(X)


def test_fit_intercept_must_match_the_release(numpyro):
    from ddssp.bayes.posterior import NoiseAwareGLM

    X, rng = _uncentred(0, n=50)
    y = np.where(rng.random(50) < 0.5, 1.0, 0.0)
    with pytest.raises(ValueError, match="without an intercept column"):
        NoiseAwareGLM().fit(exact_statistics(X, y, "logistic", fit_intercept=False))
    with pytest.raises(ValueError, match="with an intercept column"):
        NoiseAwareGLM(fit_intercept=False).fit(exact_statistics(X, y, "logistic"))


@pytest.mark.slow
@pytest.mark.parametrize("family", ["logistic", "linear"])
def test_intercept_gives_the_mle_signs_on_uncentred_features(numpyro, family):
    # issue 24: without an intercept, uncentred features fold it into the coefficients (the first sign
    # flips); with it (default) the posterior mean at large epsilon is near the non-private MLE
    from sklearn.linear_model import LinearRegression, LogisticRegression

    from ddssp.bayes.posterior import NoiseAwareGLM

    X, rng = _uncentred(0)
    theta, b = np.array([-1.0, 2.0]), 0.8
    if family == "logistic":
        y = (rng.random(len(X)) < 1 / (1 + np.exp(-(X @ theta + b)))).astype(float)  # labels {0, 1}
        mle = LogisticRegression(C=1e6).fit(X, y)
        mle_coef, mle_b = mle.coef_[0], mle.intercept_[0]
    else:
        theta, b = theta / 4, 0.5
        y = np.clip(X @ theta + b + 0.1 * rng.normal(size=len(X)), -1, 1)
        mle = LinearRegression().fit(X, y)
        mle_coef, mle_b = mle.coef_, mle.intercept_
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fi in (False, True):
            stats = gaussian_ssp(X, y, family, 1e3, 1e-6, insecure_seed=InsecureRandom(0, warn=False), fit_intercept=fi)
            fits[fi] = NoiseAwareGLM(num_samples=150, num_warmup=150, num_chains=1, fit_intercept=fi).fit(stats)
    assert np.all(np.sign(mle_coef) == np.sign(theta))
    assert np.any(np.sign(fits[False].coef_) != np.sign(mle_coef)), fits[False].coef_  # the old failure
    post = fits[True]
    assert np.all(np.sign(post.coef_) == np.sign(mle_coef)), post.coef_
    tol = 0.35 * np.abs(mle_coef).max()
    assert np.abs(post.coef_ - mle_coef).max() < tol and abs(post.intercept_ - mle_b) < tol
    assert post.score(X, y) >= mle.score(X, y) - 0.02
    if family == "logistic":
        assert set(np.unique(post.predict(X))) <= {0.0, 1.0} and list(post.classes_) == [0.0, 1.0]


@pytest.mark.slow
def test_readme_bayes_example_runs(numpyro):
    # issue 24: the README's Bayesian GLM example runs as written (secure noise, default settings)
    import pathlib
    import re

    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "NoiseAwareGLM(" in b]
    assert len(blocks) == 1
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(blocks[0], "README.md", "exec"), namespace)
    post, X, y = namespace["post"], namespace["X"], namespace["y"]
    assert post.coef_.shape == (2,) and list(post.classes_) == [0.0, 1.0]
    assert post.predict_proba(X).shape == (2000, 2) and post.score(X, y) > 0.5
