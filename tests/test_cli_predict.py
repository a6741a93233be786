"""``dp-marginals fit`` output (labels, the intercept actually fitted) and ``dp-marginals predict``."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release
from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression, EncodingOptions
from ddssp.cli import main
from marginals import Discretizer
from marginals.datasets import demo_dataset

DATA = demo_dataset(3000, seed=8)


@pytest.fixture(scope="module")
def release_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("predict") / "r.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        AIM(4.0, 1e-6, insecure_seed=3, max_model_size=2.0).run(DATA).save(path)
    return path


def _fit(release_file, tmp_path, *extra):
    coef = tmp_path / "coef.json"
    assert main(["fit", "--release", str(release_file), "--json", str(coef), "--quiet", *extra]) == 0
    return coef


def test_fit_prints_the_intercept_only_when_it_fits_one(release_file, tmp_path, capsys):
    coef = _fit(release_file, tmp_path, "--target", "education", "--categorical", "sector,region")
    out = capsys.readouterr().out
    result = json.loads(coef.read_text())
    assert result["intercept"] is None and not result["fit_intercept"] and "no intercept column" in out
    coef = _fit(release_file, tmp_path, "--target", "education", "--categorical", "sector,region", "--intercept")
    out = capsys.readouterr().out
    result = json.loads(coef.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DDSSPLinearRegression("education", ["sector", "region"], EncodingOptions(intercept=True))
        model.fit(Release.load(release_file))
    assert result["fit_intercept"] and result["intercept"] == model.intercept_ != 0.0
    line = next(line for line in out.splitlines() if line.split()[0] == "intercept")
    assert line.split()[1] == f"{model.intercept_:.6f}" and "no intercept column" not in out


@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_predict_matches_the_library(release_file, tmp_path, capsys, kind):
    target = "education" if kind == "linear" else "income"
    coef = _fit(release_file, tmp_path, "--target", target, "--model", kind, "--exclude", "region", "--intercept")
    rows = DATA.to_df().drop(columns=[target]).head(200)  # the target is not needed; extra columns are ignored
    rows.to_csv(tmp_path / "rows.csv", index=False)
    out = tmp_path / "pred.csv"
    argv = ["predict", "--release", str(release_file), "--coef", str(coef), "--data", str(tmp_path / "rows.csv"),
            "--out", str(out), "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err
    assert oct(os.stat(out).st_mode & 0o777) == "0o600"
    pred = pd.read_csv(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls = DDSSPLinearRegression if kind == "linear" else DDSSPLogisticRegression
        model = cls(target, encoding=EncodingOptions(intercept=True)).fit(Release.load(release_file).without(["region"]))
    assert len(pred) == 200
    np.testing.assert_allclose(pred["prediction"], model.predict(rows), rtol=1e-12)
    if kind == "logistic":
        np.testing.assert_allclose(pred["probability"], model.predict_proba(rows)[:, 1], rtol=1e-12)


def test_predict_refuses_a_coefficient_file_of_other_settings(release_file, tmp_path, capsys):
    coef = _fit(release_file, tmp_path, "--target", "education")
    result = json.loads(coef.read_text())
    result["coef"][0] += 0.5  # not what this release gives
    coef.write_text(json.dumps(result))
    DATA.to_df().head(5).to_csv(tmp_path / "rows.csv", index=False)
    argv = ["predict", "--release", str(release_file), "--coef", str(coef), "--data", str(tmp_path / "rows.csv"),
            "--out", str(tmp_path / "p.csv")]
    assert main(argv) == 2
    assert "do not match a refit on this release" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()
    DATA.to_df().drop(columns=["age"]).head(5).to_csv(tmp_path / "short.csv", index=False)
    good = _fit(release_file, tmp_path, "--target", "education")
    capsys.readouterr()
    assert main(argv[:4] + [str(good), "--data", str(tmp_path / "short.csv"), "--out", str(tmp_path / "p.csv")]) == 2
    assert "lacks the column(s) ['age']" in capsys.readouterr().err


def test_an_unseeded_expected_fit_predicts_with_its_own_coefficients(release_file, tmp_path, capsys):
    """Fresh draws cannot be replayed: predict checks the features by a refit and applies the file's coefficients."""
    coef = _fit(release_file, tmp_path, "--target", "income", "--model", "logistic", "--objective", "expected")
    result = json.loads(coef.read_text())
    assert result["objective"] == "expected" and result["sample_seed"] is None
    rows = DATA.to_df().drop(columns=["income"]).head(50)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    argv = ["predict", "--release", str(release_file), "--coef", str(coef), "--data", str(tmp_path / "rows.csv"),
            "--out", str(tmp_path / "p.csv"), "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DDSSPLogisticRegression("income").fit(Release.load(release_file))
    X = model.encoding_.encode_features(DATA.to_df().head(50))  # the probabilities from the file's coefficients
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv")["probability"], 1 / (1 + np.exp(-X @ result["coef"])),
                               rtol=1e-9)  # fmt: skip
    result["features"][0] = "no-such-feature"  # the structure is still checked
    coef.write_text(json.dumps(result))
    assert main(argv) == 2 and "do not match a refit" in capsys.readouterr().err
    assert main(["fit", "--release", str(release_file), "--target", "education", "--objective", "expected"]) == 2
    assert "--objective applies to --model logistic only" in capsys.readouterr().err


SPEC = {"columns": {
    "colour": {"type": "categorical", "categories": ["red", "green", "blue"]},
    "size": {"type": "numeric", "lo": 0, "hi": 10, "bins": 5},
    "label": {"type": "categorical", "categories": ["no", "yes"]},
}}  # fmt: skip


def raw_rows(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    colour, size = rng.choice(["red", "green", "blue"], n), rng.uniform(0, 10, n)
    yes = rng.random(n) < 1 / (1 + np.exp(-((colour == "blue") * 1.5 - 0.3 * size + 1.0)))
    return pd.DataFrame({"colour": colour, "size": size, "label": np.where(yes, "yes", "no")})


def test_fit_and_predict_speak_the_labels_of_a_release_spec(tmp_path, capsys):
    disc = Discretizer(SPEC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = AIM(4.0, 1e-6, insecure_seed=4, max_model_size=1.0).run(disc.transform(raw_rows(3000, 1)))
        release.with_spec(disc).save(tmp_path / "r.npz")
    _fit(tmp_path / "r.npz", tmp_path, "--target", "label", "--model", "logistic", "--exclude", "size")
    assert "colour=blue" in capsys.readouterr().out  # a release view keeps the labels
    coef = _fit(tmp_path / "r.npz", tmp_path, "--target", "label", "--model", "logistic", "--categorical", "colour")
    out = capsys.readouterr().out
    assert "colour=blue" in out and "positive class: label = yes" in out
    assert json.loads(coef.read_text())["features"] == ["colour=green", "colour=blue", "size"]
    rows = raw_rows(50, 2)
    rows.to_csv(tmp_path / "raw.csv", index=False)  # raw values, coded by the release's spec
    argv = ["predict", "--release", str(tmp_path / "r.npz"), "--coef", str(coef), "--data", str(tmp_path / "raw.csv"),
            "--out", str(tmp_path / "p.csv"), "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err
    pred = pd.read_csv(tmp_path / "p.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DDSSPLogisticRegression("label", ["colour"]).fit(Release.load(tmp_path / "r.npz"))
    assert list(pred["prediction"]) == list(model.predict(rows)) and set(pred["prediction"]) <= {"no", "yes"}
