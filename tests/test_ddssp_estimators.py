"""DD-SSP linear/logistic and AIM-Synth: agreement with OLS and with the approximate objective, adult AUCs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import rankdata

from ddssp import (
    AIMSynth,
    CollinearityWarning,
    DDSSPLinearRegression,
    DDSSPLogisticRegression,
    EncodingOptions,
    PublicLinearRegression,
    PublicLogisticRegression,
    categorical_preset,
    roc_auc,
)
from ddssp.solvers import approx_log_likelihood, sigmoid
from marginals import Dataset
from marginals.datasets import demo_dataset
from benchmarks.data import data_dir, load_bundled

HAVE_DATA = data_dir() is not None


@pytest.fixture
def random_dataset(random_table):
    """random_dataset(seed, n=600): a 1-level attribute, a never-occurring level ("gap" = 3), a
    5-level target t5 and a binary target t2, both depending on other columns."""
    sizes = {"one": 1, "bin": 2, "tri": 3, "gap": 4, "num": 6, "t5": 5, "t2": 2}

    def make(seed: int, n: int = 600) -> Dataset:
        targets = {
            "t5": lambda c, rng: np.clip(c["tri"] + c["num"] // 2 + rng.integers(-1, 2, n), 0, 4),
            "t2": lambda c, rng: (c["num"] + rng.integers(0, 3, n) > 4).astype(int),
        }
        return random_table(seed, sizes, n, targets)

    return make


ENCODINGS = [
    (["tri", "gap"], EncodingOptions()),
    (["tri", "gap"], EncodingOptions(intercept=True)),
    (None, EncodingOptions(numeric="raw")),
    (["gap"], EncodingOptions(drop=None)),
    (["tri", "gap", "one"], EncodingOptions(drop=None, intercept=True)),  # collinear: min-norm
]


@pytest.mark.parametrize("categorical,options", ENCODINGS)
def test_ddssp_linear_on_exact_marginals_equals_ols(categorical, options, random_dataset):
    data = random_dataset(0).project(("one", "bin", "tri", "gap", "num", "t5"))
    public = PublicLinearRegression("t5", categorical, options).fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollinearityWarning)
        model = DDSSPLinearRegression("t5", categorical, options).fit(data)
    assert list(model.feature_names_in_) == list(public.feature_names_in_)
    scale = max(1.0, np.max(np.abs(public.coef_)))
    assert np.max(np.abs(model.coef_ - public.coef_)) <= 1e-8 * scale
    assert abs(model.intercept_ - public.intercept_) <= 1e-8 * scale
    df = data.to_df()
    assert np.allclose(model.predict(df), public.predict(df), atol=1e-9)


def test_collinear_encoding_warns_and_returns_min_norm(random_dataset):
    data = random_dataset(1)
    with pytest.warns(CollinearityWarning, match="minimum-norm"):
        DDSSPLinearRegression("t5", ["tri"], EncodingOptions(drop=None, intercept=True)).fit(data)


def test_never_occurring_level_gets_zero_coefficient(random_dataset):
    model = DDSSPLinearRegression("t5", ["gap"]).fit(random_dataset(2))
    names = list(model.encoded_feature_names_)
    assert model.coef_[names.index("gap=3")] == 0.0
    assert model.coef_[names.index("one")] == 0.0  # a 1-level numeric attribute encodes as 0


@pytest.mark.parametrize("alpha", [0.0, 5.0])
@pytest.mark.parametrize("method", ["interpolation", "projection"])
def test_logistic_closed_form_maximises_the_approximate_likelihood(alpha, method, random_dataset):
    data = random_dataset(3).project(("bin", "tri", "num", "t2"))
    options = EncodingOptions(intercept=True)
    model = DDSSPLogisticRegression("t2", ["tri"], options, method=method, alpha=alpha).fit(data)
    stats, b = model.statistics_, model.monomial_coef_

    def negative(theta):
        return -approx_log_likelihood(theta, stats.XtX, stats.Xty, stats.n, b) + 0.5 * alpha * theta @ theta

    def gradient(theta):
        return -b[1] * stats.Xty - 2 * b[2] * stats.XtX @ theta + alpha * theta

    theta = np.concatenate([[model.intercept_], model.coef_])
    # the objective is a convex quadratic: theta is its minimiser iff the gradient vanishes there
    scale = abs(b[1]) * np.linalg.norm(stats.Xty) + 2 * abs(b[2]) * np.linalg.norm(stats.XtX) * np.linalg.norm(theta)
    assert np.linalg.norm(gradient(theta)) <= 1e-9 * scale
    # and no optimizer does better (objective values only: no dependence on where BFGS stops)
    found = minimize(negative, np.zeros(len(stats.Xty)), jac=gradient, method="BFGS", options={"gtol": 1e-12}).x
    assert negative(theta) <= negative(found) + 1e-9 * max(1.0, abs(negative(found)))
    rng = np.random.default_rng(0)
    for step in rng.normal(size=(20, len(theta))) * 1e-3:
        assert negative(theta) <= negative(theta + step) + 1e-12 * max(1.0, abs(negative(theta)))


def test_logistic_closed_form_is_scaled_ols_on_pm1_labels(random_dataset):
    data = random_dataset(4)
    model = DDSSPLogisticRegression("t2", ["tri", "gap"]).fit(data)
    b = model.monomial_coef_
    assert np.allclose(b, [np.log(0.5), 0.5, -0.0707575], atol=1e-6)
    X, y = model.encoding_.encode(data.to_df())
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    assert np.allclose(model.coef_, -b[1] / (2 * b[2]) * ols, rtol=1e-7, atol=1e-9)


def test_predict_api_logistic_and_intercept():
    data = demo_dataset(3000, seed=1)
    df = data.to_df()
    model = DDSSPLogisticRegression("income", ["sector", "region"], EncodingOptions(intercept=True)).fit(data)
    assert model.intercept_ != 0.0 and "(intercept)" not in model.encoded_feature_names_
    assert len(model.coef_) == len(model.encoded_feature_names_) and model.n_features_in_ == len(df.columns) - 1
    proba = model.predict_proba(df[df.columns[::-1]])  # column order does not matter
    assert proba.shape == (3000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.allclose(proba[:, 1], sigmoid(model.decision_function(df)))
    assert set(np.unique(model.predict(df))) <= {0, 1}
    assert np.array_equal(model.predict(df), (proba[:, 1] > 0.5).astype(int))
    assert list(model.classes_) == [0, 1]


def test_linear_predictions_and_inverse_transform():
    data = demo_dataset(3000, seed=2)
    df = data.to_df()
    model = DDSSPLinearRegression("hours", ["sector", "region"]).fit(data)
    assert model.intercept_ == 0.0
    scores = model.predict_encoded(df.drop(columns=["hours"]))  # the target column is not needed
    assert scores.shape == (3000,)
    codes = model.inverse_transform_target(scores)
    assert np.allclose(codes, (scores + 1) * (5 - 1) / 2)
    assert np.allclose(model.predict(df), codes)  # predictions on the target's code scale
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'"):
        model.predict_proba(df)


def test_dataframe_path_equals_dataset_path():
    data = demo_dataset(2000, seed=3)
    a = DDSSPLinearRegression("education").fit(data)
    b = DDSSPLinearRegression("education", domain=data.domain).fit(data.to_df().assign(extra=1))
    assert np.array_equal(a.coef_, b.coef_)


class FakeRelease:
    """Stands in for an AIM release: exact marginals, model cliques and bootstrap synthetic rows."""

    def __init__(self, data: Dataset, cliques=None):
        self.data, self.domain, self.total = data, data.domain, data.total
        self.cliques = tuple(cliques) if cliques is not None else (data.domain.attrs,)

    def marginals(self, cliques):
        return [t.astype(float) for t in self.data.marginals(cliques)]

    def synthetic_data(self, n=None, rng=None):
        n = len(self.data) if n is None else n
        return self.data.to_df().iloc[rng.integers(0, len(self.data), n)].reset_index(drop=True)


def test_fit_from_release_and_aimsynth():
    data = demo_dataset(3000, seed=4)
    release = FakeRelease(data)
    ddssp = DDSSPLinearRegression("hours").fit(release)
    assert np.allclose(ddssp.coef_, DDSSPLinearRegression("hours").fit(data).coef_)
    synth = AIMSynth("hours", random_state=7).fit(release)
    again = AIMSynth("hours", random_state=7).fit(release)
    assert np.array_equal(synth.coef_, again.coef_) and synth.n_synthetic_ == 3000
    assert not np.array_equal(synth.coef_, AIMSynth("hours", random_state=8).fit(release).coef_)
    small = AIMSynth("income", task="logistic", n_synthetic=500, random_state=1).fit(release)
    assert small.n_synthetic_ == 500 and small.predict_proba(data.to_df()).shape == (3000, 2)


def test_aimsynth_on_a_table_equals_public_fits():
    data = demo_dataset(2000, seed=5)
    lin = AIMSynth("hours", categorical=["sector"]).fit(data)
    assert np.allclose(lin.coef_, PublicLinearRegression("hours", ["sector"]).fit(data).coef_)
    log = AIMSynth("income", task="logistic", categorical=["sector"], domain=data.domain).fit(data.to_df())
    assert np.allclose(log.coef_, PublicLogisticRegression("income", ["sector"]).fit(data).coef_)


def test_aimsynth_survives_zero_variance_synthetic_columns():
    data = demo_dataset(1500, seed=6)
    df = data.to_df().assign(sector=2, married=0)  # constant columns in the synthetic table
    for task, target in (("linear", "hours"), ("logistic", "income")):
        model = AIMSynth(target, task=task, categorical=["sector", "region"], domain=data.domain).fit(df)
        names = list(model.encoded_feature_names_)
        assert np.all(np.isfinite(model.coef_))
        assert model.coef_[names.index("sector=1")] == 0.0 and model.coef_[names.index("sector=3")] == 0.0


def rank_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """AUC as the Mann-Whitney statistic: P(score of a positive > score of a negative), ties count 1/2."""
    positive = np.asarray(labels) == 1
    ranks = rankdata(scores)  # average ranks for ties
    n_pos, n_neg = positive.sum(), (~positive).sum()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def logistic_mle(X: np.ndarray, y01: np.ndarray) -> np.ndarray:
    """Unpenalised logistic regression by Newton's method with minimum-norm steps (the predictions
    are unique even where collinear columns leave the coefficients free)."""
    theta = np.zeros(X.shape[1])
    for _ in range(100):
        p = expit(X @ theta)
        hessian = X.T @ (X * (p * (1.0 - p))[:, None])
        step = np.linalg.lstsq(hessian, X.T @ (p - y01), rcond=None)[0]
        theta -= step
        if np.max(np.abs(step)) < 1e-10:
            return theta
    raise AssertionError("Newton's method did not converge")


@pytest.fixture(scope="module")
def adult_split():
    if not HAVE_DATA:
        pytest.skip("bundled data folder absent")
    return load_bundled("adult", "train", 50_000), load_bundled("adult", "test").to_df()


@pytest.mark.slow
def test_adult_auc_ddssp_exact_and_public_logistic_match_independent_fits(adult_split):
    """DD-SSP on exact marginals scores as OLS on the +-1 labels (its degree-2 maximiser is a positive
    multiple of it, and AUC ignores scale); the public fit scores as an independent logistic MLE."""
    train, test = adult_split
    cat = categorical_preset("adult")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollinearityWarning)  # adult: workclass 7 + 8 == occupation 14
        ddssp = DDSSPLogisticRegression("income>50K", cat).fit(train)
    public = PublicLogisticRegression("income>50K", cat).fit(train)
    X, y = ddssp.encoding_.encode(train.to_df())  # y in {-1, +1}
    X_test, labels = ddssp.encoding_.encode_features(test), test["income>50K"].to_numpy()
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    auc_ddssp = roc_auc(labels, ddssp.decision_function(test))
    assert auc_ddssp == pytest.approx(rank_auc(labels, X_test @ ols), abs=1e-6)
    mle = logistic_mle(X, (y + 1) / 2)
    auc_public = roc_auc(labels, public.decision_function(test))
    assert auc_public == pytest.approx(rank_auc(labels, X_test @ mle), abs=1e-4)
    assert 0.5 < auc_ddssp < auc_public  # informative, and below the exact likelihood's fit here


def test_adult_ddssp_linear_equals_ols(adult_split):
    train, test = adult_split
    cat = categorical_preset("adult")
    with pytest.warns(CollinearityWarning):
        ddssp = DDSSPLinearRegression("education-num", cat).fit(train)
    public = PublicLinearRegression("education-num", cat).fit(train)
    assert np.max(np.abs(ddssp.coef_ - public.coef_)) <= 1e-8 * max(1.0, np.max(np.abs(public.coef_)))
    # the test MSE of least squares on the encoded rows, solved here (minimum-norm, as the design is collinear)
    X, y = ddssp.encoding_.encode(train.to_df())
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    y_test = ddssp.encoding_.encode_target(test)
    mse_ols = np.mean((ddssp.encoding_.encode_features(test) @ ols - y_test) ** 2)
    assert np.mean((ddssp.predict_encoded(test) - y_test) ** 2) == pytest.approx(mse_ols, rel=1e-6)
