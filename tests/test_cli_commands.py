"""The ``dp-marginals`` command line: synth / fit / inspect end to end (synth's default input is the
Adult table shipped in the package), exit codes, and every bad-input case exiting 2 with one line on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aim import Release
from ddssp import DDSSPLinearRegression
from ddssp.cli import main
from marginals import Dataset, Domain, cdp_rho
from marginals.datasets import demo_dataset
from marginals.datasets import adult_codebook, adult_domain

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def coded(tmp_path_factory):
    """A small coded table with its domain on disk."""
    folder = tmp_path_factory.mktemp("coded")
    data = demo_dataset(n=800, seed=2)
    data.to_df().to_csv(folder / "mine.csv", index=False)
    data.domain.save(folder / "domain.json")
    return folder, data


@pytest.fixture(scope="module")
def release_file(coded, tmp_path_factory):
    folder, _ = coded
    out = tmp_path_factory.mktemp("release")
    argv = ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"), "--epsilon", "2",
            "--insecure-seed", "5", "--out", str(out / "s.csv"), "--release", str(out / "r.npz"), "--quiet"]
    assert main(argv) == 0
    return out / "r.npz"


def _one_line_error(capsys, code_expected: int, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == code_expected, err
    # the fixture's release is seeded (a test), so loading it may first warn that it is not private
    lines = [line for line in err.strip().splitlines() if "NOT differentially private" not in line]
    assert len(lines) == 1 and lines[0].startswith("dp-marginals: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- synth ---------------------------------------------------------------------------------------


def test_synth_on_a_coded_csv(coded, release_file, capsys):
    _, data = coded
    release = Release.load(release_file)
    assert release.domain == data.domain and release.private is False
    assert cdp_rho(2.0, 1e-9) * (1 - 2**-19) <= release.ledger.spent <= cdp_rho(2.0, 1e-9) * (1 + 1e-9)
    synth = pd.read_csv(release_file.parent / "s.csv")
    assert list(synth.columns) == list(data.domain.attrs) and len(synth) == int(round(release.total))
    Dataset(synth, data.domain)  # valid codes


def test_synth_progress_rows_and_evaluate(coded, tmp_path, capsys):
    folder, data = coded
    argv = ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"), "--epsilon", "1",
            "--rows", "123", "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz"), "--evaluate"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    release = Release.load(tmp_path / "r.npz")
    assert sum(ln.startswith("round") for ln in err.splitlines()) == len(release.rounds)  # progress on stderr
    assert "mine: 8 attributes" in err and "800" not in err  # the exact private row count stays out
    assert "NOT private" in out and "privacy ledger" in out
    assert len(pd.read_csv(tmp_path / "s.csv")) == 123
    assert "(123 synthetic rows)" in out  # public: the number asked for
    assert main(argv + ["--quiet", "--show-private-values"]) == 0
    assert "private (do not publish): mine: 800 rows" in capsys.readouterr().err


def test_synth_workload_file(coded, tmp_path):
    folder, _ = coded
    (tmp_path / "w.json").write_text(json.dumps([["age", "income"], [["sector", "region"], 2.0]]))
    argv = ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"), "--quiet",
            "--workload", str(tmp_path / "w.json"), "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]
    assert main(argv) == 0
    workload = Release.load(tmp_path / "r.npz").config["mechanism"]["workload"]
    assert sorted((tuple(c), w) for c, w in workload) == [(("age", "income"), 1.0), (("sector", "region"), 2.0)]


@pytest.mark.slow
def test_synth_runs_on_the_shipped_adult_without_the_shared_data(tmp_path):
    env = {**os.environ, "DP_MARGINALS_DATA": str(tmp_path / "absent"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "ddssp.cli", "synth", "--epsilon", "0.1", "--max-model-size", "2", "--rows", "500",
         "--show-private-values"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "adult: 15 attributes" in proc.stderr and "private (do not publish): adult: 47,842 rows" in proc.stderr
    release = Release.load(tmp_path / "results" / "adult-eps0.1-release.npz")  # the default output paths
    assert release.domain == adult_domain()
    adult_codebook().transform(pd.read_csv(tmp_path / "results" / "adult-eps0.1-synthetic.csv"))  # labelled rows


@pytest.mark.slow
def test_synth_then_fit_on_the_shipped_adult(tmp_path, capsys):
    assert main(["synth", "--epsilon", "0.5", "--quiet", "--out", str(tmp_path / "s.csv"),
                 "--release", str(tmp_path / "r.npz")]) == 0
    domain = adult_domain()
    assert Release.load(tmp_path / "r.npz").domain == domain
    adult_codebook().transform(pd.read_csv(tmp_path / "s.csv"))  # labelled rows, through the shipped codebook
    argv = ["fit", "--release", str(tmp_path / "r.npz"), "--target", "education-num", "--exclude", "education",
            "--preset", "adult", "--json", str(tmp_path / "f.json"), "--quiet"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "f.json").read_text())
    assert "education" not in " ".join(result["features"]) and np.all(np.isfinite(result["coef"]))
    assert any(f.startswith("workclass=") for f in result["features"]) and "age" in result["features"]


# --- fit and inspect -----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::ddssp.InferredPairsWarning")
def test_fit_matches_the_library(release_file, tmp_path, capsys):
    argv = ["fit", "--release", str(release_file), "--target", "income", "--exclude", "region",
            "--categorical", "sector,education", "--json", str(tmp_path / "f.json"), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "f.json").read_text())
    release = Release.load(release_file)
    model = DDSSPLinearRegression("income", categorical=["sector", "education"]).fit(release.without(["region"]))
    assert result["features"] == list(model.encoded_feature_names_)
    np.testing.assert_allclose(result["coef"], model.coef_, rtol=0, atol=0)
    assert result["release_epsilon"] == 2.0 and "spends no further privacy" in out
    for name in result["features"]:
        assert name in out


def test_fit_logistic(release_file, tmp_path, capsys):
    domain = Release.load(release_file).domain
    binary = next(a for a in domain.attrs if domain[a] == 2)
    assert main(["fit", "--release", str(release_file), "--target", binary, "--model", "logistic",
                 "--json", str(tmp_path / "f.json"), "--quiet"]) == 0
    result = json.loads((tmp_path / "f.json").read_text())
    np.testing.assert_allclose(result["chebyshev_monomial_coefficients"], [-0.693147, 0.5, -0.0707575], atol=1e-6)


def test_inspect(release_file, capsys):
    assert main(["inspect", str(release_file), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    release = Release.load(release_file)
    assert report["privacy"]["rho_spent"] == release.ledger.spent <= report["privacy"]["rho_budget"]
    assert report["privacy"]["epsilon"] == 2.0 and report["rounds"] == len(release.rounds)
    assert [m["clique"] for m in report["measurements"]] == [list(m.clique) for m in release.measurements]
    assert main(["inspect", str(release_file)]) == 0
    text = capsys.readouterr().out
    assert "privacy ledger" in text and "sigma=" in text and "selection rounds" in text


# --- discretize ----------------------------------------------------------------------------------

RAW_SPEC = {
    "version": 1, "missing_markers": ["?"],
    "columns": {
        "age": {"type": "numeric", "lo": 0, "hi": 100, "bins": 4, "integer": True},
        "job": {"type": "categorical", "categories": ["a", "b", "c"], "missing": "level"},
        "paid": {"type": "categorical", "categories": ["no", "yes"], "aliases": {"yes.": "yes"}},
    },
}


@pytest.fixture()
def raw(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({
        "age": rng.integers(0, 101, n),
        "job": rng.choice(["a", "b", "c", "?"], n),
        "paid": rng.choice(["no", "yes", "yes."], n),
    })
    df.to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "spec.json").write_text(json.dumps(RAW_SPEC))
    return tmp_path, df


def test_discretize_and_decode(raw, capsys):
    folder, df = raw
    assert main(["discretize", "--spec", str(folder / "spec.json"), "--data", str(folder / "raw.csv"),
                 "--out-dir", str(folder / "coded")]) == 0
    domain = Domain.load(folder / "coded" / "domain.json")
    assert domain.to_dict() == {"age": 4, "job": 4, "paid": 2}
    codes = pd.read_csv(folder / "coded" / "data.csv")
    np.testing.assert_array_equal(codes["age"], np.minimum(df["age"] // 25, 3))
    np.testing.assert_array_equal(codes["paid"], (df["paid"] != "no").astype(int))
    assert (codes["job"] == 3).sum() == (df["job"] == "?").sum()
    out, err = capsys.readouterr()
    assert "600" not in out + err and "clipped" not in err  # exact private counts only on request
    assert main(["discretize", "--spec", str(folder / "spec.json"), "--data", str(folder / "raw.csv"),
                 "--out-dir", str(folder / "coded2"), "--show-private-values"]) == 0
    err = capsys.readouterr().err
    assert "do not publish" in err and "600 rows" in err and '"clipped"' in err
    assert main(["discretize", "--spec", str(folder / "coded" / "discretizer.json"), "--decode",
                 str(folder / "coded" / "data.csv"), "--numeric", "uniform", "--sample-seed", "1",
                 "--out", str(folder / "back.csv")]) == 0
    back = pd.read_csv(folder / "back.csv")
    assert ((back["age"] // 25).clip(upper=3) == codes["age"]).all()  # uniform draws stay in their bin
    assert set(back["paid"]) == {"no", "yes"} and back["job"].isna().sum() == (df["job"] == "?").sum()


def test_synth_from_raw_with_a_spec(raw, capsys):
    folder, _ = raw
    assert main(["synth", "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"), "--quiet",
                 "--out", str(folder / "s.csv"), "--release", str(folder / "r.npz")]) == 0
    synth = pd.read_csv(folder / "s.csv")
    assert set(synth["paid"]) <= {"no", "yes"} and set(synth["job"].dropna()) <= {"a", "b", "c"}
    assert synth["age"].between(0, 100).all() and (synth["age"] == synth["age"].round()).all()  # values in units


def test_discretize_bad_input(raw, capsys):
    folder, df = raw
    bad = df.copy()
    bad.loc[5, "paid"] = "maybe"
    bad.to_csv(folder / "bad.csv", index=False)
    line = _one_line_error(capsys, 2, ["discretize", "--spec", str(folder / "spec.json"), "--data",
                                       str(folder / "bad.csv"), "--out-dir", str(folder / "o")])
    assert "bad.csv: column 'paid'" in line and '"unseen": "error"' in line
    assert "maybe" not in line  # issue 23: the file, the column and the rule; never the private value
    assert not (folder / "o").exists() or not any((folder / "o").iterdir())  # nothing half-written
    (folder / "badspec.json").write_text(json.dumps({**RAW_SPEC, "columns": {"age": {"type": "numeric", "lo": 5, "hi": 1, "bins": 2}}}))
    line = _one_line_error(capsys, 2, ["discretize", "--spec", str(folder / "badspec.json"), "--data",
                                       str(folder / "raw.csv"), "--out-dir", str(folder / "o")])
    assert "age" in line
    line = _one_line_error(capsys, 2, ["discretize", "--spec", str(folder / "spec.json")])
    assert "--data and --out-dir" in line


# --- bad input: exit 2, one line -----------------------------------------------------------------


def test_missing_data_file(coded, capsys, tmp_path):
    folder, _ = coded
    line = _one_line_error(capsys, 2, ["synth", "--data", str(tmp_path / "nope.csv"), "--domain", str(folder / "domain.json")])
    assert "nope.csv" in line and "No such file" in line


def test_malformed_domain_json(coded, capsys, tmp_path):
    folder, _ = coded
    (tmp_path / "bad.json").write_text('{"age": 5,')
    line = _one_line_error(capsys, 2, ["synth", "--data", str(folder / "mine.csv"), "--domain", str(tmp_path / "bad.json")])
    assert "bad.json: not valid JSON" in line


def test_out_of_domain_values(coded, capsys, tmp_path):
    folder, data = coded
    df = data.to_df()
    df.loc[3, "age"] = data.domain["age"] + 4
    df.to_csv(tmp_path / "bad.csv", index=False)
    line = _one_line_error(capsys, 2, ["synth", "--data", str(tmp_path / "bad.csv"), "--domain", str(folder / "domain.json")])
    assert "age" in line and "outside" in line


@pytest.mark.parametrize("eps", ["0", "-1"])
def test_bad_epsilon(coded, capsys, eps):
    folder, _ = coded
    line = _one_line_error(capsys, 2, ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"),
                                       f"--epsilon={eps}"])
    assert "epsilon" in line


@pytest.mark.parametrize("delta", ["0", "1", "1.5", "-1e-9"])
def test_bad_delta(coded, capsys, delta):
    folder, _ = coded
    line = _one_line_error(capsys, 2, ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"),
                                       f"--delta={delta}"])
    assert "delta" in line


def test_unknown_target(release_file, capsys):
    line = _one_line_error(capsys, 2, ["fit", "--release", str(release_file), "--target", "salary"])
    assert "'salary'" in line and "not in the release's domain" in line


def test_truncated_release(release_file, capsys, tmp_path):
    bad = tmp_path / "cut.npz"
    bad.write_bytes(release_file.read_bytes()[:200])
    for argv in (["inspect", str(bad)], ["fit", "--release", str(bad), "--target", "income"]):
        line = _one_line_error(capsys, 2, argv)
        assert "cut.npz: not a readable release file" in line


def test_release_of_another_version(release_file, capsys, tmp_path):
    with np.load(release_file) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(str(arrays["header"]))
    arrays["header"] = np.array(json.dumps({**header, "version": 99}))
    np.savez(tmp_path / "future.npz", **arrays)
    line = _one_line_error(capsys, 2, ["inspect", str(tmp_path / "future.npz")])
    assert "version 99 is not supported" in line


def test_usage_errors_are_one_line(capsys, release_file):
    line = _one_line_error(capsys, 2, ["fit", "--release", str(release_file)])  # --target missing
    assert "--target" in line
    line = _one_line_error(capsys, 2, ["synth", "--epsilon", "abc"])
    assert "invalid float value" in line
    _one_line_error(capsys, 2, [])  # no subcommand


def test_internal_error_exits_1_and_debug_shows_traceback(release_file, capsys, monkeypatch):
    import ddssp.cli.inspect as cli_inspect

    def broken(release):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli_inspect, "release_report", broken)
    line = _one_line_error(capsys, 1, ["inspect", str(release_file)])
    assert "internal error: RuntimeError: boom" in line and "--debug" in line
    with pytest.raises(RuntimeError, match="boom"):
        main(["inspect", str(release_file), "--debug"])


def test_installed_console_script(release_file):
    script = Path(sys.executable).parent / "dp-marginals"
    if not script.exists():
        pytest.skip("the project is not installed in this interpreter's environment")
    proc = subprocess.run([str(script), "inspect", str(release_file)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "privacy ledger" in proc.stdout
    proc = subprocess.run([str(script), "inspect", str(release_file) + ".missing"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
