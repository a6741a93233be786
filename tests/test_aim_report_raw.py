"""The report of a release that stores its spec (issue 24, item 4): labels in its plots, raw
``--data`` read through the spec's discretizer, the spec section (categories, bounds, <other>,
rules, rows excluded), the privacy unit and guarantee in words with one delta everywhere, ML
efficacy for a target (non-private), log scales, and one self-contained file by default."""

from __future__ import annotations

import re
import types
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from aim import AIM, synthesize  # noqa: E402
from aim.report import build, plots as report_plots, write_report  # noqa: E402
from aim.report.spec_section import NO_SPEC, excluded_text  # noqa: E402
from ddssp.cli import main  # noqa: E402
from marginals import Discretizer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning")

OPTIONS = dict(max_iters=20, final_iters=20)
SPEC = {"missing_markers": ["?"], "columns": {
    "age": {"type": "numeric", "edges": [17, 30, 45, 60, 90], "integer": True},
    "job": {"type": "categorical", "categories": ["clerk", "nurse", "teacher"], "unseen": "other", "missing": "level"},
    "sex": {"type": "categorical", "categories": ["F", "M"]},
    "income": {"type": "categorical", "categories": ["<=50K", ">50K"]},
}}
PILOTS = 37  # rows whose job is not a released category: they become <other>


def raw_table(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Raw rows: income tied to age and job; ``PILOTS`` unseen jobs and 20 missing ones ("?")."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 89, n)
    job = rng.choice(["clerk", "nurse", "teacher"], n, p=[0.5, 0.3, 0.2]).astype(object)
    job[:PILOTS], job[PILOTS:PILOTS + 20] = "pilot", "?"
    income = np.where(age + 15 * (job == "teacher") + rng.normal(0, 8, n) > 55, ">50K", "<=50K")
    return pd.DataFrame({"age": age, "job": job, "sex": rng.choice(["F", "M"], n), "income": income})


@pytest.fixture(scope="module")
def raw():
    return raw_table()


@pytest.fixture(scope="module")
def given(raw):
    """A release of the raw rows with the public SPEC."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return synthesize(raw, 1.0, spec=SPEC, insecure_seed=1, **OPTIONS)[0]


@pytest.fixture(scope="module")
def inferred(raw):
    """A release of the raw rows whose spec was inferred under DP."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return synthesize(raw, 1.0, insecure_seed=2, **OPTIONS)[0]


@pytest.fixture(scope="module")
def diagnosed(given, raw, tmp_path_factory):
    """The report of ``given`` with the raw private rows and a target, and the labels its plots got."""
    seen: dict[str, list[str]] = {}
    original = report_plots.oneway_figure
    report_plots.oneway_figure = lambda attr, labels, *rest: seen.setdefault(attr, list(labels)) and original(
        attr, labels, *rest)
    try:
        path = write_report(given, tmp_path_factory.mktemp("raw") / "raw.html", raw, target="income")
    finally:
        report_plots.oneway_figure = original
    return path.read_text(encoding="utf-8"), seen


def _text(page: str) -> str:
    """The page's text, tags dropped and entities decoded (enough for these checks)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_plots_get_the_spec_labels(given, diagnosed):
    _, seen = diagnosed
    disc = given.discretizer
    assert seen == {a: disc.labels(a) for a in given.domain.attrs}
    assert seen["job"] == ["clerk", "nurse", "teacher", "<other>", "<missing>"] and seen["age"][0] == "[17, 30)"
    assert build.label_function(given)("sex") == ["F", "M"]


def test_raw_data_is_encoded_by_the_spec(given, raw, diagnosed):
    page, _ = diagnosed
    codes = Discretizer(SPEC).transform(raw)
    errors = build.marginal_errors(given, codes)
    text = _text(page)
    worst = f"{errors[0].tv:.4g}"
    assert worst in text and "all 1,500 rows kept" in text
    row = re.search(r"job\s+0\s+0\s+(\d+)\s+(\d+)\s+pilot \((\d+)\)", text)
    assert row and [int(g) for g in row.groups()] == [PILOTS, 20, PILOTS]


def test_ml_efficacy_is_shown_as_non_private(diagnosed):
    text = _text(diagnosed[0])
    assert "ML efficacy for income: train on synthetic, test on real (non-private)" in text
    accuracy = re.search(r"accuracy\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text)
    synthetic, real, baseline = (float(g) for g in accuracy.groups())
    assert real > baseline + 0.05 and 0 < synthetic <= 1
    assert "ROC AUC (>50K vs <=50K)" in text
    section = diagnosed[0].split('id="diagnostic"')[1]
    assert "ML efficacy" in section  # inside the dashed, bannered section


def test_a_binary_target_with_spec_levels_is_still_scored_as_binary(inferred, raw, tmp_path):
    labels = Discretizer.from_spec(inferred.spec).labels("income")
    assert labels[:2] == ["<=50K", ">50K"] and len(labels) > 2  # <other> / <missing> added by the inference
    text = _text(write_report(inferred, tmp_path / "inc.html", raw, target="income", worst=0).read_text(encoding="utf-8"))
    assert "ROC AUC (>50K vs <=50K)" in text


def test_a_numeric_target_is_a_regression(given, raw, tmp_path):
    text = _text(write_report(given, tmp_path / "age.html", raw, target="age", worst=0).read_text(encoding="utf-8"))
    assert "A linear regression" in text and "R^2" in text and "RMSE" in text and "bin midpoints" in text


def test_spec_section_of_a_given_spec(given, diagnosed):
    text = _text(diagnosed[0])
    assert "The spec was given by the user" in text
    assert re.search(r"job\s+categorical\s+5\s+clerk, nurse, teacher\s+<other>\s+own level <missing>", text)
    assert re.search(r"age\s+numeric\s+4\s+integers in \[17, 90\]", text) and "edges 17, 30, 45, 60, 90" in text
    assert "markers '?'" in text
    assert re.search(r"job\s+<other>\s+\d+\.\d\d%\s+job\s+<missing>\s+\d+\.\d\d%", text)  # released shares
    assert re.search(r"age\s+\[60, 90\]\s+\d+\.\d\d%", text)
    # the sex column refuses unseen values and no rule drops rows
    assert "No rows excluded by the spec's rules: no rule leaves a row out" in text


def test_spec_section_of_an_inferred_spec_and_of_codes(inferred, given, tmp_path):
    text = _text(write_report(inferred, tmp_path / "inferred.html").read_text(encoding="utf-8"))
    assert "inferred from the private rows under differential privacy" in text
    for name, column in inferred.spec["columns"].items():
        if column["type"] == "categorical":
            assert ", ".join(column["categories"]) in text
    coded = AIM(1.0, insecure_seed=0, **OPTIONS).run(Discretizer(SPEC).transform(raw_table(300, 1)))
    text = _text(write_report(coded, tmp_path / "coded.html").read_text(encoding="utf-8"))
    assert NO_SPEC in text


def test_excluded_rows_are_shown():
    spec = {"columns": {"job": {"type": "categorical", "categories": ["a"], "unseen": "drop"}}}
    holder = types.SimpleNamespace(spec=spec)
    assert "does not record how many" in excluded_text(holder) and "job" in excluded_text(holder)
    holder.spec = {**spec, "excluded": []}
    assert "No rows excluded by the spec's rules." in excluded_text(holder)
    holder.spec = {**spec, "excluded": [{"column": "job", "rule": "unseen", "statement": "about 40 rows <b>",
                                         "bound": 61, "noisy_count": 40.5}]}
    shown = excluded_text(holder)
    assert "about 40 rows &lt;b&gt;" in shown and "40.5" in shown and "61" in shown and "<b>" not in shown


def test_privacy_unit_and_one_delta(inferred, tmp_path):
    page = write_report(inferred, tmp_path / "p.html").read_text(encoding="utf-8")
    text = _text(page)
    assert "Privacy unit: one row" in text and "add/remove" in text
    tile = re.search(r'<div class="v">([^<]+)</div><div class="k">delta \(whole run\)', page).group(1)
    run, ledger = inferred.delta, inferred.ledger.delta
    assert run != ledger and tile == f"{run:.4g}"
    assert f"(epsilon = 1, delta = {run:.4g})-differentially private" in text
    words = f"Of the run's delta = {run:.4g}, {ledger:.4g} covers the ledger's measurements"
    assert text.count(words) == 2  # the guarantee and the ledger say the same
    assert f"delta = {ledger:.4g})" not in text  # the ledger's delta is never given as the run's


def test_cli_reads_the_raw_csv(given, raw, tmp_path, capsys):
    given.save(tmp_path / "r.npz")
    raw.to_csv(tmp_path / "raw.csv", index=False)
    raw.to_csv(tmp_path / "bare.csv", index=False, header=False)
    Discretizer(SPEC).transform_df(raw).to_csv(tmp_path / "codes.csv", index=False)
    base = ["report", "--release", str(tmp_path / "r.npz"), "--quiet", "--worst", "0"]
    assert main([*base, "--data", str(tmp_path / "raw.csv"), "--out", str(tmp_path / "a.html"), "--target", "job"]) == 0
    assert main([*base, "--data", str(tmp_path / "bare.csv"), "--no-header", "--out", str(tmp_path / "b.html")]) == 0
    assert main([*base, "--data", str(tmp_path / "codes.csv"), "--coded", "--out", str(tmp_path / "c.html")]) == 0
    capsys.readouterr()
    texts = [_text((tmp_path / f"{n}.html").read_text(encoding="utf-8")) for n in "abc"]
    assert "pilot (37)" in texts[0] and "pilot (37)" in texts[1] and "pilot" not in texts[2]
    assert "ML efficacy for job" in texts[0]
    tables = [t.split("marginals, worst first")[1].split("1-way marginals")[0] for t in texts]
    assert "age x income" in tables[0] and tables[0] == tables[1] == tables[2]  # the same rows, however read
    assert main([*base, "--data", str(tmp_path / "codes.csv"), "--out", str(tmp_path / "d.html")]) == 2
    assert "'sex'" in capsys.readouterr().err  # codes read as raw values: the sex rule refuses 0 and 1
    assert main([*base, "--target", "job", "--out", str(tmp_path / "e.html")]) == 2
    assert "--target goes with --data" in capsys.readouterr().err


def test_target_errors(given, raw, tmp_path):
    with pytest.raises(ValueError, match="give data too"):
        write_report(given, tmp_path / "r.html", target="income")
    with pytest.raises(ValueError, match="'salary' is not an attribute"):
        write_report(given, tmp_path / "r.html", raw, target="salary")
    assert not list(tmp_path.iterdir())


def test_log_scale_when_bars_span_orders_of_magnitude():
    assert report_plots.spans_orders(np.array([0.9, 0.0005, 0.0]))
    assert not report_plots.spans_orders(np.array([0.9, 0.02, 0.0]))
    assert not report_plots.spans_orders(np.array([0.0, 0.5]))


def test_one_file_by_default(given, tmp_path):
    write_report(given, tmp_path / "only.html")
    assert [p.name for p in tmp_path.iterdir()] == ["only.html"]


@pytest.mark.slow
def test_adult_raw_report(tmp_path):
    """The raw UCI Adult file through an inferred spec: the report reads the raw rows, shows the
    released categories and bin labels, and the synthetic rows predict income better than chance."""
    from benchmarks.data import data_dir, load_adult_raw

    if data_dir() is None:
        pytest.skip("the development data folder ../shared/data is absent (or set DP_MARGINALS_DATA)")
    adult = load_adult_raw()
    release = synthesize(adult, 1.0, 1e-9, insecure_seed=0)[0]
    page = write_report(release, tmp_path / "adult.html", adult, target="income", worst=2).read_text(encoding="utf-8")
    text = _text(page)
    assert "Bachelors" in text and "United-States" in text and "Married-civ-spouse" in text
    assert f"{len(adult):,}" in text and "most frequent values outside the categories" in text
    accuracy = re.search(r"accuracy\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text)
    synthetic, real, baseline = (float(g) for g in accuracy.groups())
    assert synthetic > baseline + 0.03 and real > baseline + 0.03
