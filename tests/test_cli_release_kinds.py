"""Every consumer on a release of each kind (issue 24, item 3): ``coded`` (AIM on a coded Dataset, with
the secure default noise source), ``raw_spec`` (`aim.synthesize` with a public spec), ``raw_inferred``
(`aim.synthesize` with the spec inferred under DP) and ``seeded`` (AIM with an insecure seed). Each is
saved and reloaded, then fitted (Python API and ``dp-marginals fit``), given intervals (both methods),
reported, inspected, used by ``predict`` and sampled."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release, synthesize
from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.cli import main
from marginals import Discretizer

pytestmark = [pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning"),
              pytest.mark.filterwarnings("ignore::ddssp.statistics.InferredPairsWarning")]  # a small release's model

KINDS = ("coded", "raw_spec", "raw_inferred", "seeded")
RAW_KINDS = ("raw_spec", "raw_inferred")
CATEGORICAL = ["job", "sex"]  # one-hot features of every fit (age and hours numeric)
AIM_OPTIONS = dict(max_iters=30, final_iters=30)
SPEC = {"columns": {
    "age": {"type": "numeric", "edges": [17, 30, 40, 50, 60, 80], "integer": True},
    "hours": {"type": "numeric", "edges": [0, 20, 35, 45, 60, 99], "integer": True},
    "job": {"type": "categorical", "categories": ["clerk", "nurse", "teacher", "driver"]},
    "sex": {"type": "categorical", "categories": ["F", "M"]},
    "income": {"type": "categorical", "categories": ["<=50K", ">50K"]},
}}


def raw_rows(n: int, seed: int) -> pd.DataFrame:
    """``n`` raw rows: integer age and hours, two categorical columns and a binary income tied to age and hours."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    hours = np.clip(rng.normal(40, 8, n).round(), 1, 98).astype(int)
    income = np.where(age + (hours - 40) + rng.normal(0, 10, n) > 50, ">50K", "<=50K")
    return pd.DataFrame({"age": age, "hours": hours, "job": rng.choice(["clerk", "nurse", "teacher", "driver"], n,
                                                                        p=[0.4, 0.3, 0.2, 0.1]),
                         "sex": rng.choice(["F", "M"], n), "income": income})  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """The four releases, each saved to its own file (kind -> path)."""
    folder = tmp_path_factory.mktemp("kinds")
    df = raw_rows(3000, 0)
    coded = Discretizer(SPEC).transform(df)
    releases = {
        "coded": AIM(1.0, **AIM_OPTIONS).run(coded),  # the secure default source
        "raw_spec": synthesize(df, 1.0, spec=SPEC, insecure_seed=1, **AIM_OPTIONS)[0],
        "raw_inferred": synthesize(df, 1.0, insecure_seed=2, **AIM_OPTIONS)[0],  # income: 2 classes + <other>/<missing>
        "seeded": AIM(1.0, insecure_seed=3, **AIM_OPTIONS).run(coded),
    }
    paths = {}
    for kind, release in releases.items():
        paths[kind] = folder / f"{kind}.npz"
        release.save(paths[kind])
    return paths


@pytest.fixture(scope="module")
def loaded(made) -> dict[str, Release]:
    """The releases as read back from their files."""
    return {kind: Release.load(path) for kind, path in made.items()}


def covered_rows(release: Release, n: int = 40) -> pd.DataFrame:
    """Fresh rows inside the release's spec (raw values), or their codes for a release without one."""
    df = raw_rows(400, 7)
    if release.spec is None:
        return Discretizer(SPEC).transform_df(df).head(n)
    spec, keep = Discretizer(release.spec), np.ones(len(df), dtype=bool)
    for name, col in release.spec["columns"].items():
        if col["type"] == "numeric":
            keep &= (df[name] >= col["edges"][0]) & (df[name] <= col["edges"][-1])
        elif "<other>" not in spec.labels(name):
            keep &= df[name].astype(str).isin([str(c) for c in col["categories"]])
    return df[keep].head(n).reset_index(drop=True)


def expected_names(release: Release, model) -> list[str]:
    """The encoded feature names the release's labels (or codes) give the fitted ``model``'s features."""
    labels = (lambda a: Discretizer(release.spec).labels(a)) if release.spec else (lambda a: list(range(release.domain[a])))
    names = []
    for attr in model.encoding_.feature_attrs:
        names += [f"{attr}={v}" for v in labels(attr)[1:]] if attr in CATEGORICAL or attr == "income" else [attr]
    return names


# --- the releases and their files ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_survives_its_file(made, loaded, kind):
    release = loaded[kind]
    assert release.private is (kind == "coded")  # only the secure default source makes a private release
    assert (release.spec is not None) is (kind in RAW_KINDS)
    assert set(release.config) == ({"mechanism", "spec"} if kind == "raw_inferred" else {"mechanism"})
    config = release.mechanism_config()
    assert config.epsilon <= 1.0 and release.epsilon == 1.0 and release.ledger.spent <= release.ledger.rho * (1 + 1e-9)
    again = Release.load(made[kind])
    assert again.config == release.config and again.spec == release.spec


# --- fit: Python API and the command line ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_fit_names_coefficients_by_the_release_labels(loaded, kind):
    release = loaded[kind]
    linear = DDSSPLinearRegression("hours", categorical=CATEGORICAL + ["income"]).fit(release)
    logistic = DDSSPLogisticRegression("income", categorical=CATEGORICAL).fit(release)
    expected = DDSSPLogisticRegression("income", categorical=CATEGORICAL, objective="expected", n_samples=20_000,
                                       random_state=0).fit(release)  # fmt: skip
    assert list(expected.classes_) == list(logistic.classes_)
    for model in (linear, logistic, expected):
        assert np.all(np.isfinite(model.coef_)) and len(model.coef_) == len(model.encoded_feature_names_)
        assert list(model.encoded_feature_names_) == expected_names(release, model)
    if kind in RAW_KINDS:
        assert "sex=M" in linear.encoded_feature_names_ and list(logistic.classes_) == ["<=50K", ">50K"]
    else:
        assert "sex=1" in linear.encoded_feature_names_ and list(logistic.classes_) == [0, 1]


@pytest.mark.parametrize("kind", KINDS)
def test_cli_fit_and_predict(made, loaded, kind, tmp_path, capsys):
    release, rows = loaded[kind], covered_rows(loaded[kind])
    rows.to_csv(tmp_path / "rows.csv", index=False)
    fits = (("linear", "hours", DDSSPLinearRegression, {}), ("logistic", "income", DDSSPLogisticRegression, {}),
            ("logistic", "income", DDSSPLogisticRegression, {"objective": "expected", "random_state": 4}))  # fmt: skip
    for model, target, cls, options in fits:
        coef = tmp_path / f"{model}.json"
        argv = ["fit", "--release", str(made[kind]), "--target", target, "--model", model, "--json", str(coef)]
        if options:
            argv += ["--objective", options["objective"], "--sample-seed", str(options["random_state"])]
        assert main(argv + ["--categorical", ",".join(CATEGORICAL)]) == 0
        out = capsys.readouterr().out
        saved = json.loads(coef.read_text())
        python = cls(target, categorical=CATEGORICAL, **options).fit(release)
        assert saved["features"] == list(python.encoded_feature_names_) and all(f in out for f in saved["features"])
        np.testing.assert_allclose(saved["coef"], python.coef_, rtol=1e-12)
        pred = tmp_path / f"{model}-pred.csv"
        assert main(["predict", "--release", str(made[kind]), "--coef", str(coef), "--data", str(tmp_path / "rows.csv"),
                     "--out", str(pred)]) == 0  # fmt: skip
        table = pd.read_csv(pred, keep_default_na=False)
        assert len(table) == len(rows) > 10  # one prediction per row, none dropped
        if model == "logistic":
            assert set(table["prediction"].astype(str)) <= {str(c) for c in python.classes_}
            assert table["probability"].between(0, 1).all()
        else:
            np.testing.assert_allclose(table["prediction"], python.predict(rows), rtol=1e-9)


# --- intervals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["measurements", "mechanism"])
@pytest.mark.parametrize("kind", KINDS)
def test_intervals_hold_the_point_estimate(loaded, kind, method):
    release = loaded[kind]
    for cls, target in ((DDSSPLinearRegression, "hours"), (DDSSPLogisticRegression, "income")):
        model = cls(target, categorical=CATEGORICAL, interval=method, n_boot=3, random_state=0, progress=False)
        model.fit(release)
        ci = model.conf_int()
        assert list(ci.columns) == ["lower", "upper"] and list(ci.index) == list(model.encoded_feature_names_)
        assert np.all(np.isfinite(ci.to_numpy())) and model.bootstrap_.errors.shape[0] == 3
        assert np.all(ci["lower"] <= model.coef_) and np.all(model.coef_ <= ci["upper"])
        np.testing.assert_array_equal(model.coef_interval_, ci.to_numpy())
        np.testing.assert_allclose(model.coef_, cls(target, categorical=CATEGORICAL).fit(release).coef_)


# --- inspect, report, synthetic rows -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_shows_the_config_parts_and_privacy(made, loaded, kind, capsys):
    release = loaded[kind]
    assert main(["inspect", str(made[kind])]) == 0
    text = capsys.readouterr().out
    assert ("NOT PRIVATE" in text) is (kind != "coded") and "privacy ledger" in text
    assert ("thresholded histograms" in text) is (kind == "raw_inferred")
    assert main(["inspect", str(made[kind]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["config"]) == list(release.config) and report["config"]["mechanism"]["name"] == "AIM"
    assert report["private"] is release.private and report["privacy"]["epsilon"] == release.epsilon == 1.0
    assert report["privacy"]["rho_spent"] == pytest.approx(release.ledger.spent)
    assert report["domain"] == release.domain.to_dict()


@pytest.mark.parametrize("kind", KINDS)
def test_report_holds_the_ledger(made, loaded, kind, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the report needs the 'report' extra (matplotlib)")
    from aim.report import write_report

    release = loaded[kind]
    write_report(release, tmp_path / "api.html", png_dir=False)
    assert main(["report", "--release", str(made[kind]), "--out", str(tmp_path / "cli.html"), "--no-png"]) == 0
    for page in (tmp_path / "api.html", tmp_path / "cli.html"):
        text = page.read_text()
        assert 'id="ledger"' in text
        assert all(html.escape(c.label) in text for c in release.ledger.charges)
        assert ("NOT PRIVATE" in text) is (kind != "coded")


@pytest.mark.parametrize("kind", KINDS)
def test_synthetic_data_is_readable_and_inside_the_domain(loaded, kind):
    release = loaded[kind]
    rows = release.synthetic_data(n=300, rng=0)
    assert list(rows.columns) == list(release.domain.attrs) and len(rows) == 300
    if kind not in RAW_KINDS:
        for attr in release.domain.attrs:
            assert rows[attr].between(0, release.domain[attr] - 1).all()
        return
    for name, col in release.spec["columns"].items():
        if col["type"] == "numeric":
            values = rows[name].dropna()
            assert values.between(col["edges"][0], col["edges"][-1]).all() and (values == values.round()).all()
        else:
            assert set(rows[name].dropna().astype(str)) <= set(col["categories"]) | {"<other>"}
