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
from marginals.data import demo_dataset

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
