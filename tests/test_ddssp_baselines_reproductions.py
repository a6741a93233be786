"""Issue 24's reproductions for the DP baselines, one test each: "the estimators do not work as the README
implies". Each is now refused with a message that says what to pass, warned about, or fixed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from ddssp import (
    AdaSSP,
    ModelSelectionBudgetWarning,
    ObjPert,
    PMTLinearRegression,
    PMTLogisticRegression,
    PTRFailedWarning,
    PublicMomentWarning,
    TukeyEM,
    categorical_preset,
)
from marginals import Dataset
from marginals.datasets import demo_dataset, load_adult

ADULT_CAT = categorical_preset("adult")
DEMO = demo_dataset(n=3000, seed=5)
DEMO_X, DEMO_Y = DEMO.to_df().drop(columns=["hours"]), DEMO.to_df()["hours"]
BASELINES = {  # each baseline with a budget and a target of its kind
    "AdaSSP": lambda **kw: AdaSSP(1.0, 1e-6, **kw),
    "ObjPert": lambda **kw: ObjPert(1.0, 1e-6, **kw),
    "TukeyEM": lambda **kw: TukeyEM(1.0, 1e-6, **kw),
    "PMTLinearRegression": lambda **kw: PMTLinearRegression(1.0, 1e-6, public_moment="uniform", **kw),
    "PMTLogisticRegression": lambda **kw: PMTLogisticRegression(1.0, 1e-6, public_moment="uniform", **kw),
}
LOGISTIC = {"ObjPert", "PMTLogisticRegression"}


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_objpert_with_epsilon_only_is_refused_naming_delta():
    # "ObjPert(epsilon=1.0) needs delta": its guarantee is (epsilon, delta)-DP; delta has no safe default
    # (it must be well below 1/n, and n is private), so the constructor refuses and names it
    with pytest.raises(TypeError, match="delta"):
        ObjPert(epsilon=1.0)
    assert ObjPert(epsilon=1.0, delta=1e-6).get_params()["delta"] == 1e-6


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_without_target_says_to_pass_target(name, adult):
    # "every baseline needs target= with domain= (undocumented)": the error says what to pass
    with pytest.raises(ValueError, match=r"construct the estimator with target='<column>'.*domain="):
        BASELINES[name]().fit(adult)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_on_codes_without_domain_says_to_pass_domain(name, adult):
    target = "income>50K" if name in LOGISTIC else "education-num"
    df = adult.to_df()
    with pytest.raises(ValueError, match=r"construct the estimator with domain=\.\.\."):
        BASELINES[name](target=target).fit(df)
    with pytest.raises(ValueError, match=r"construct the estimator with domain=\.\.\."):
        BASELINES[name]().fit(df.drop(columns=[target]), df[target])


def test_tukeyem_with_default_models_on_adult_is_refused_with_the_rule(adult):
    # "TukeyEM() with defaults fails on adult ('47 rows per subset, fewer than the 250 features')": m = 1000
    # subsets need 250 rows each; the refusal gives the rule for m and never quotes n (a private count)
    with pytest.raises(ValueError, match=r"choose n_models <= n_samples / 250") as refused:
        every = [a for a in adult.domain.attrs if a != "education-num"]  # all one-hot (the old default): p = 250
        TukeyEM(1.0, 1e-6, target="education-num", categorical=every).fit(adult)
    assert "47" not in str(refused.value) and "rows per subset" not in str(refused.value)


def test_tukeyem_failed_ptr_predicts_the_zero_model_and_cross_val_score_runs():
    # "a TukeyEM fit whose PTR check fails returns normally and then predict/score raise, which breaks
    # cross_val_score": it warns, holds the zero model (ptr_passed_ False), and predicts with it
    model = TukeyEM(0.5, 1e-5, target="hours", n_models=40, domain=DEMO.domain, insecure_seed=3)
    with pytest.warns(PTRFailedWarning, match="zero model"):
        fitted = model.fit(DEMO_X, DEMO_Y)
    assert not fitted.ptr_passed_ and np.all(fitted.coef_ == 0)
    mid = (DEMO.domain["hours"] - 1) / 2  # the zero model predicts the centre of the target's code range
    np.testing.assert_allclose(fitted.predict(DEMO_X), mid)
    assert np.isfinite(fitted.score(DEMO_X, DEMO_Y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_val_score(model, DEMO_X, DEMO_Y, cv=KFold(3), error_score="raise")
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_pmt_uniform_moment_far_from_adult_warns(adult):
    # "public_moment='uniform' gives R^2 = -3401 on adult with no warning": the fit's own release (the
    # whitened Gram) shows the uniform moment is far from the rows, and the fit says so
    with pytest.warns(PublicMomentWarning, match=r"'uniform' assumes independent uniform attributes"):
        model = PMTLinearRegression(1.0, 1e-6, "education-num", ADULT_CAT, public_moment="uniform",
                                    insecure_seed=0).fit(adult)  # fmt: skip
    assert model.moment_mismatch_ > 10
    public = Dataset(adult.to_df().sample(2000, random_state=0), adult.domain)  # a public sample: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", PublicMomentWarning)
        matched = PMTLinearRegression(1.0, 1e-6, "education-num", ADULT_CAT, public_moment=public,
                                      insecure_seed=0).fit(adult)  # fmt: skip
    assert matched.moment_mismatch_ < 10


def test_cross_val_score_and_grid_search_warn_that_each_fit_spends_the_budget():
    # "GridSearchCV / cross_val_score spend the budget once per fit with no word about it"
    model = AdaSSP(1.0, 1e-6, target="hours", domain=DEMO.domain, insecure_seed=1)
    with pytest.warns(ModelSelectionBudgetWarning, match=r"every fit is its own \(epsilon=1, delta=1e-06\)"):
        cross_val_score(model, DEMO_X, DEMO_Y, cv=KFold(3))
    with pytest.warns(ModelSelectionBudgetWarning, match="the fits compose"):
        GridSearchCV(model, {"failure_prob": [0.01, 0.1]}, cv=KFold(2)).fit(DEMO_X, DEMO_Y)
    with warnings.catch_warnings():  # one fit of one's own: no warning
        warnings.simplefilter("error", ModelSelectionBudgetWarning)
        model.fit(DEMO_X, DEMO_Y)
