"""DD-SSP coefficient intervals from a release: shapes, noise propagation, and calibration (slow)."""

import itertools
import warnings

import numpy as np
import pytest

from aim import Release
from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.bayes.intervals import NoisyModelSource, bootstrap_coefficients, bootstrap_interval, measured_pair_estimand
from marginals import Accountant, Dataset
from marginals.data import demo_dataset
from marginals.mechanisms import measure_counts
from marginals.randomness import InsecureRandom
from pgm.estimation import estimate

ATTRS = ("age", "education", "hours", "married", "income")


def all_pairs_release(data: Dataset, sigma: float, seed: int) -> Release:
    """A release measuring every 1- and 2-way marginal with Gaussian noise (no model bias)."""
    rng = InsecureRandom(seed, warn=False)
    acct = Accountant(1e6)
    cliques = [(a,) for a in ATTRS] + list(itertools.combinations(ATTRS, 2))
    ms = [measure_counts(data.marginal(c), c, sigma, rng, acct, exact=False) for c in cliques]
    model = estimate(data.domain, ms, iters=500, tol=1e-7)
    return Release(data.domain, ms, model, acct, private=False)


@pytest.fixture(scope="module")
def data():
    full = demo_dataset(20_000, seed=1)
    return Dataset(full.to_df()[list(ATTRS)], full.domain.project(ATTRS))


def test_bootstrap_interval_math():
    est = np.array([1.0, -2.0])
    reps = np.column_stack([np.linspace(0.0, 4.0, 101), np.linspace(-3.0, -2.0, 101)])
    basic = bootstrap_interval(est, reps, 0.1, "basic")
    pct = bootstrap_interval(est, reps, 0.1, "percentile")
    np.testing.assert_allclose(pct[0], [0.2, 3.8])
    np.testing.assert_allclose(basic[0], [2 * 1.0 - 3.8, 2 * 1.0 - 0.2])
    with pytest.raises(ValueError):
        bootstrap_interval(est, reps, 1.2)
    with pytest.raises(ValueError):
        bootstrap_interval(est, reps, 0.1, "bca")


def test_estimator_intervals_on_a_release(data):
    release = all_pairs_release(data, 30.0, 0)
    model = DDSSPLinearRegression("education", categorical=["married"], interval="measurements", n_boot=100, random_state=0)
    model.fit(release)
    ci = model.coef_interval_
    assert ci.shape == (len(model.coef_), 2)
    assert np.all(ci[:, 0] <= model.coef_) and np.all(model.coef_ <= ci[:, 1])
    wide, narrow = model.conf_int(0.05), model.conf_int(0.5)
    assert np.all(wide[:, 1] - wide[:, 0] >= narrow[:, 1] - narrow[:, 0])
    plain = DDSSPLinearRegression("education", categorical=["married"]).fit(release)
    np.testing.assert_allclose(plain.coef_, model.coef_)  # intervals do not change the point estimate
    with pytest.raises(RuntimeError):
        plain.conf_int()
    with pytest.raises(TypeError):
        DDSSPLinearRegression("education", interval="measurements").fit(data)  # exact marginals: no noise model
    with pytest.raises(ValueError):
        DDSSPLinearRegression("education", interval="jackknife").fit(release)
    clf = DDSSPLogisticRegression("income", categorical=["married"], interval="refit", n_boot=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(release)
    assert clf.conf_int().shape == (len(clf.coef_), 2) and np.all(np.isfinite(clf.conf_int()))


def test_noise_on_a_measured_pair_has_the_measurement_variance(data):
    release = all_pairs_release(data, 30.0, 1)
    source = NoisyModelSource(release.domain, release.model, release.measurements, np.random.default_rng(0))
    base = release.model.marginals([("age", "hours"), ("age",)])
    draws = np.array([[t - b for t, b in zip(source.marginals([("age", "hours"), ("age",)]), base)][0] for _ in range(400)])
    assert draws.std() == pytest.approx(30.0, rel=0.05)  # one measurement covers the pair
    one_way = np.array([source.marginals([("age",)])[0] - base[1] for _ in range(400)])
    # the 1-way marginal of age is covered by its own measurement and 4 pairs (x5 and x4 cells summed)
    expected_var = 1 / (1 / 900 + 1 / (900 * 6) + 1 / (900 * 5) + 1 / (900 * 2) + 1 / (900 * 2))
    assert one_way.var() == pytest.approx(expected_var, rel=0.1)


def test_measured_pair_estimand_is_the_ols_when_everything_is_measured(data):
    release = all_pairs_release(data, 30.0, 2)
    est = DDSSPLinearRegression("education", categorical=["married"])
    ols = est.fit(data).coef_
    np.testing.assert_allclose(measured_pair_estimand(est, release, data), ols, atol=1e-12)


@pytest.mark.slow
def test_interval_coverage_when_every_pair_is_measured(data):
    est = DDSSPLinearRegression("education", categorical=["married"])
    ols = est.fit(data).coef_
    covered = []
    for seed in range(30):
        release = all_pairs_release(data, 40.0, 100 + seed)
        boot = bootstrap_coefficients(est, release, n_boot=100, random_state=seed)
        ci = boot.interval(0.1)
        covered.append((ci[:, 0] <= ols) & (ols <= ci[:, 1]))
    coverage = np.mean(covered)
    assert 0.8 <= coverage <= 0.99, coverage
