"""DD-SSP coefficient intervals from a release: interval math, the two bootstraps, calibration (slow)."""

import io
import itertools
import re
import sys
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from aim import AIM, Release
from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.bayes.intervals import bias_aware_critical_value, bootstrap_coefficients, bootstrap_interval
from ddssp.bayes.resampling import NoisyModelMarginals, rerun_config
from marginals import Accountant, Dataset
from marginals.datasets import demo_dataset
from marginals.mechanisms import measure_counts
from marginals.randomness import InsecureRandom
from pgm.estimation import estimate

ATTRS = ("age", "education", "hours", "married", "income")
SMALL = ("education", "married", "income")  # 24 cells: AIM measures every pair


def all_pairs_release(data: Dataset, sigma: float, seed: int) -> Release:
    """A release measuring every 1- and 2-way marginal with Gaussian noise (no model bias, no AIM config)."""
    rng = InsecureRandom(seed, warn=False)
    acct = Accountant(1e6)
    cliques = [(a,) for a in ATTRS] + list(itertools.combinations(ATTRS, 2))
    ms = [measure_counts(data.marginal(c), c, sigma, rng, acct, exact=False) for c in cliques]
    model = estimate(data.domain, ms, iters=500, tol=1e-7)
    return Release(data.domain, ms, model, acct, private=False)


def subset(n: int, attrs) -> Dataset:
    full = demo_dataset(n, seed=1)
    return Dataset(full.to_df()[list(attrs)], full.domain.project(attrs))


def aim_release(data: Dataset, eps: float, seed: int) -> Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AIM(eps, 1e-5, insecure_seed=seed, exact_noise=False).run(data)


@pytest.fixture(scope="module")
def data():
    return subset(20_000, ATTRS)


def test_bias_aware_critical_value_is_the_folded_normal_quantile():
    for t in (0.0, 0.3, 1.0, 2.5):
        for alpha in (0.05, 0.1, 0.5):
            # the definition P(|N(t, 1)| <= c) = 1 - alpha, solved independently
            c = optimize.brentq(lambda c: stats.norm.cdf(c - t) - stats.norm.cdf(-c - t) - (1 - alpha), 0, 20)
            assert bias_aware_critical_value(t, alpha) == pytest.approx(c, abs=1e-8)
    assert bias_aware_critical_value(0.0, 0.1) == pytest.approx(1.6448536, abs=1e-6)  # z_0.95
    assert bias_aware_critical_value(8.0, 0.1) - 8.0 == pytest.approx(1.2815516, abs=1e-4)  # one tail: z_0.9
    draws = np.abs(np.random.default_rng(0).normal(1.2, 1.0, size=200_000))
    assert np.mean(draws <= bias_aware_critical_value(1.2, 0.1)) == pytest.approx(0.9, abs=0.003)
    with pytest.raises(ValueError):
        bias_aware_critical_value(1.0, 1.5)


def test_bootstrap_interval_math():
    est = np.array([1.0, -2.0])
    errors = np.column_stack([np.linspace(-1.0, 3.0, 101), np.linspace(-1.0, 0.0, 101)])
    basic = bootstrap_interval(est, errors, 0.1, "basic")
    pct = bootstrap_interval(est, errors, 0.1, "percentile")
    np.testing.assert_allclose(pct[0], [1.0 - 0.8, 1.0 + 2.8])  # error quantiles -0.8 and 2.8
    np.testing.assert_allclose(basic[0], [1.0 - 2.8, 1.0 + 0.8])
    centred = np.array([[-1.0, 0.0], [1.0, 0.0]])  # coefficient 1: mean 0, sd sqrt(2); coefficient 2: no spread
    ba = bootstrap_interval(np.zeros(2), centred, 0.1)
    np.testing.assert_allclose(ba[0], [-1.6448536 * np.sqrt(2), 1.6448536 * np.sqrt(2)], rtol=1e-6)
    np.testing.assert_allclose(ba[1], [0.0, 0.0])
    shifted = bootstrap_interval(np.zeros(1), np.array([[0.5], [0.5], [0.5]]), 0.1)  # a pure bias of 0.5
    np.testing.assert_allclose(shifted[0], [-0.5, 0.5])
    with pytest.raises(ValueError):
        bootstrap_interval(est, errors, 1.2)
    with pytest.raises(ValueError):
        bootstrap_interval(est, errors, 0.1, "bca")


def test_rerun_config_is_the_release_configuration_with_float_noise():
    small = subset(5_000, SMALL)
    release = aim_release(small, 1.0, 0)
    config = rerun_config(release, 7)
    assert config.to_dict() == {**release.config["mechanism"], "exact_noise": False} and config.insecure_seed == 7
    with pytest.raises(ValueError, match="AIM release"):
        rerun_config(all_pairs_release(subset(2_000, ATTRS), 30.0, 0), 7)


def test_estimator_intervals_on_an_aim_release():
    small = subset(5_000, SMALL)
    release = aim_release(small, 1.0, 1)
    model = DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=6, random_state=0)
    model.fit(release)
    ci = model.coef_interval_
    assert ci.shape == (len(model.coef_), 2) and model.bootstrap_.errors.shape == (6, len(model.coef_))
    wide, narrow = model.conf_int(0.05), model.conf_int(0.5)
    assert list(wide.columns) == ["lower", "upper"] and list(wide.index) == list(model.encoded_feature_names_)
    np.testing.assert_array_equal(model.conf_int().to_numpy(), ci)  # coef_interval_ is the array of conf_int()
    assert np.all(wide["upper"] - wide["lower"] >= narrow["upper"] - narrow["lower"])
    plain = DDSSPLinearRegression("education", categorical=["married"]).fit(release)
    np.testing.assert_allclose(plain.coef_, model.coef_)  # intervals do not change the point estimate
    again = DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=6, random_state=0)
    np.testing.assert_array_equal(again.fit(release).coef_interval_, ci)  # the seed makes them reproducible
    with pytest.raises(RuntimeError):
        plain.conf_int()
    with pytest.raises(TypeError):
        DDSSPLinearRegression("education", interval="mechanism").fit(small)  # exact marginals: nothing to bootstrap
    with pytest.raises(ValueError):
        DDSSPLinearRegression("education", interval="jackknife").fit(release)
    with pytest.raises(ValueError):
        DDSSPLinearRegression("education", interval="mechanism", interval_kind="bca").fit(release)
    clf = DDSSPLogisticRegression("income", categorical=[], interval="mechanism", n_boot=3, random_state=0)
    clf.fit(release.without(["married"]))  # a release view: the estimator sees two attributes
    assert clf.conf_int().shape == (1, 2) and np.all(np.isfinite(clf.conf_int().to_numpy()))
    assert list(clf.conf_int().index) == list(clf.encoded_feature_names_)


def test_measurements_method_on_a_release_without_aim_config(data):
    release = all_pairs_release(data, 30.0, 0)
    with pytest.raises(ValueError, match="mechanism"):
        DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=3).fit(release)
    model = DDSSPLinearRegression("education", categorical=["married"], interval="measurements", n_boot=20, random_state=0)
    assert np.all(np.isfinite(model.fit(release).coef_interval_))


def test_noise_on_a_measured_pair_has_the_measurement_variance(data):
    release = all_pairs_release(data, 30.0, 1)
    source = NoisyModelMarginals(release.domain, release.model, release.measurements, np.random.default_rng(0))
    base = release.model.marginals([("age", "hours"), ("age",)])
    draws = np.array([[t - b for t, b in zip(source.marginals([("age", "hours"), ("age",)]), base)][0] for _ in range(400)])
    assert draws.std() == pytest.approx(30.0, rel=0.05)  # one measurement covers the pair
    one_way = np.array([source.marginals([("age",)])[0] - base[1] for _ in range(400)])
    # the 1-way marginal of age is covered by its own measurement and 4 pairs (x5 and x4 cells summed)
    expected_var = 1 / (1 / 900 + 1 / (900 * 6) + 1 / (900 * 5) + 1 / (900 * 2) + 1 / (900 * 2))
    assert one_way.var() == pytest.approx(expected_var, rel=0.1)


@pytest.mark.slow
def test_mechanism_intervals_cover_the_ols_of_the_private_rows():
    small = subset(4_000, SMALL)
    est = DDSSPLinearRegression("education", categorical=["married"])
    ols = est.fit(small).coef_
    covered = {0.5: [], 0.9: []}
    for seed in range(12):
        boot = bootstrap_coefficients(est, aim_release(small, 0.5, 100 + seed), n_boot=20, random_state=seed)
        for level in covered:
            ci = boot.interval(1 - level)
            covered[level] += list((ci[:, 0] <= ols) & (ols <= ci[:, 1]))
    n = len(covered[0.9])  # 24 intervals per level
    # calibrated: Binomial(24, 0.9) >= 17 and Binomial(24, 0.5) in [5, 19] each with probability > 99.9%;
    # intervals half as wide cover about 60% at nominal 90% here (the first check fails)
    assert sum(covered[0.9]) >= 17, np.mean(covered[0.9])
    assert 5 <= sum(covered[0.5]) <= 19, np.mean(covered[0.5])
    assert n == 24


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_mechanism_intervals_report_each_rerun_without_times(monkeypatch):
    release = aim_release(subset(2_000, SMALL), 1.0, 2)
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=3, random_state=0).fit(release)
    lines = plain.getvalue().splitlines()
    assert lines[0] == "interval='mechanism': 3 AIM reruns on rows drawn from the released model"
    assert lines[1:] == [f"  AIM rerun {b}/3 done" for b in (1, 2, 3)]  # counts only: no time, no private number
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=2, random_state=0,
                          progress=False).fit(release)  # fmt: skip
    DDSSPLinearRegression("education", categorical=["married"], interval="measurements", n_boot=2).fit(release)
    assert quiet.getvalue() == ""
    pytest.importorskip("tqdm")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    DDSSPLinearRegression("education", categorical=["married"], interval="mechanism", n_boot=2, random_state=0).fit(release)
    out = terminal.getvalue()
    assert "\r" in out and "2/2 AIM reruns" in out and "AIM rerun 1/2" not in out  # a bar, not plain lines
    assert not re.search(r"\d\d:\d\d|\d\s*s\b|it/s", out), out  # no elapsed time or rate


def test_intervals_name_the_coefficients_whose_target_pair_was_inferred():
    """A release that never measured (age, income) infers that pair: its coefficients get no number on request."""
    release = aim_release(subset(5_000, ATTRS), 0.05, 3)  # a small budget: few pairs measured
    model = DDSSPLinearRegression("income", categorical=["married"], interval="measurements", n_boot=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(release)
    expected = tuple(a for a in ("age", "education", "hours", "married")
                     if not any({a, "income"} <= set(c) for c in release.cliques))  # fmt: skip
    assert model.inferred_target_pairs_ == expected and expected  # this release leaves some pair out
    kept, hidden = model.conf_int(), model.conf_int(inferred="nan")
    inferred_rows = [n.split("=")[0] in expected for n in model.encoded_feature_names_]
    assert hidden[inferred_rows].isna().all().all()
    np.testing.assert_array_equal(hidden[~np.array(inferred_rows)].to_numpy(), kept[~np.array(inferred_rows)].to_numpy())
    assert np.all(np.isfinite(kept.to_numpy()))
    with pytest.raises(ValueError, match="inferred"):
        model.conf_int(inferred="drop")
