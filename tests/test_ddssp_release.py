"""DD-SSP and AIM-Synth on a real AIM release of adult (eps = 1): they run, predict, give sane metrics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aim import AIM, Release
from ddssp import AIMSynth, DDSSPLinearRegression, DDSSPLogisticRegression, categorical_preset, roc_auc
from ddssp.metrics import mean_squared_error
from benchmarks.data import data_dir, load_bundled

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(data_dir() is None, reason="the bundled data folder ../shared/data is absent"),
]


@pytest.fixture(scope="module")
def adult_release(tmp_path_factory):
    train = load_bundled("adult")
    release = AIM(1.0, 1e-5, insecure_seed=3).run(train)
    path = tmp_path_factory.mktemp("release") / "adult.npz"
    release.save(path)
    return train, load_bundled("adult", "test").to_df(), Release.load(path)


def test_linear_from_release_is_finite_and_beats_the_mean(adult_release):
    train, test, release = adult_release
    cat = categorical_preset("adult")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ddssp = DDSSPLinearRegression(target="education-num", categorical=cat).fit(release)
    assert any("inferred by the model" in str(w.message) for w in caught)  # AIM measured only some pairs
    synth = AIMSynth(target="education-num", categorical=cat, task="linear", random_state=0).fit(release)
    y_test = ddssp.encoding_.encode(test)[1]
    baseline = mean_squared_error(y_test, np.full_like(y_test, y_test.mean()))
    for model in (ddssp, synth):
        pred = model.predict_encoded(test)  # the encoded target scale, as y_test
        assert pred.shape == (len(test),) and np.all(np.isfinite(pred))
        assert mean_squared_error(y_test, pred) < 0.5 * baseline  # education is in the features: easy task
    assert list(ddssp.encoded_feature_names_) == list(synth.encoded_feature_names_)


def test_logistic_from_release_has_useful_auc(adult_release):
    train, test, release = adult_release
    cat = categorical_preset("adult")
    ddssp = DDSSPLogisticRegression(target="income>50K", categorical=cat).fit(release)
    synth = AIMSynth(target="income>50K", categorical=cat, task="logistic", random_state=0).fit(release)
    labels = test["income>50K"].to_numpy()
    for model in (ddssp, synth):
        proba = model.predict_proba(test)
        assert proba.shape == (len(test), 2) and np.allclose(proba.sum(axis=1), 1.0)
        assert roc_auc(labels, proba[:, 1]) > 0.8  # public logistic regression: about 0.904


def test_release_statistics_come_from_the_model_not_the_rows(adult_release):
    train, _, release = adult_release
    cat = categorical_preset("adult")
    from_release = DDSSPLinearRegression(target="education-num", categorical=cat).fit(release)
    from_data = DDSSPLinearRegression(target="education-num", categorical=cat).fit(train)
    assert from_release.statistics_.n == pytest.approx(release.model.total)
    assert from_data.statistics_.n == len(train)
    assert not np.allclose(from_release.statistics_.XtX, from_data.statistics_.XtX)
