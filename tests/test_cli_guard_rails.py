"""Guard rails of ``dp-marginals synth`` (issue 24, item 5): a ``--columns`` list that does not match
the file is refused; a header that looks like data, a first row that looks like a header, a large
``--delta`` and a release that is mostly noise warn on stderr (also under ``--quiet``), naming column
positions and public quantities, never a cell value unless ``--show-private-values``."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from aim import Release
from benchmarks.data import ADULT_RAW_COLUMNS, data_dir
from ddssp.cli import main
from ddssp.cli.guards import FEW_ROWS, check_first_row, check_header, is_number, noise_share
from ddssp.cli.raw_csv import read_raw_alone

pytestmark = pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning")
ADULT = None if data_dir() is None else data_dir() / "adult-raw" / "adult.data"
SCHEMA = {"columns": {"age": {"type": "numeric", "lo": 0, "hi": 100, "bins": 5, "integer": True},
                      "job": {"type": "categorical", "categories": ["clerk", "nurse"]},
                      "paid": {"type": "categorical", "categories": ["no", "yes"]}}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guard")
    rng = np.random.default_rng(4)
    n = 400
    age = rng.integers(18, 80, n)
    df = pd.DataFrame({"age": age, "job": rng.choice(["clerk", "nurse"], n), "paid": np.where(age > 45, "yes", "no")})
    df.loc[0, ["age", "job"]] = [77, "nurse"]  # the first data row: 77 is quoted only with --show-private-values
    df.to_csv(folder / "header.csv", index=False)
    df.to_csv(folder / "headerless.csv", index=False, header=False)
    (folder / "schema.json").write_text(json.dumps(SCHEMA))
    two = dict(SCHEMA, columns={k: SCHEMA["columns"][k] for k in ("age", "job")})
    (folder / "schema2.json").write_text(json.dumps(two))
    return folder


def _synth(data, tmp_path, *extra: str) -> list[str]:
    return ["synth", "--data", str(data), "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz"),
            "--insecure-seed", "1", "--quiet", *extra]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


# --- 1. a --columns list whose count differs from the file's --------------------------------------------


@pytest.mark.parametrize("names, source", [(["--columns", "age,job"], "--columns"),
                                           (["--columns", "age,job,paid,extra"], "--columns"),
                                           (["--schema", "schema2.json"], "the --schema")])
def test_column_count_mismatch_is_refused(files, tmp_path, capsys, names, source):
    names = [str(files / n) if n.endswith(".json") else n for n in names]
    assert main(_synth(files / "headerless.csv", tmp_path, "--no-header", *names)) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    count = len(names[1].split(",")) if source == "--columns" else 2
    assert lines == [f"dp-marginals: error: {files / 'headerless.csv'}: 3 columns per row but {source} names {count}; "
                     "with --no-header name every column of the file, in its order"]
    assert not (tmp_path / "r.npz").exists() and not (tmp_path / "s.csv").exists()


# --- 2. a header that looks like data, a first row that looks like a header -----------------------------


def test_header_that_looks_like_data_warns_without_values(files, tmp_path, capsys):
    assert main(_synth(files / "headerless.csv", tmp_path, "--schema", str(files / "schema.json"))) == 2
    err = capsys.readouterr().err  # the schema's columns are missing: an error, after the warning
    (line,) = _warnings(err)
    assert "the header row looks like data (column 1 of the header is a number)" in line and "add --no-header" in line
    assert "77" not in err and "nurse" not in err  # the header cells are private values here
    assert main(_synth(files / "headerless.csv", tmp_path, "--schema", str(files / "schema.json"),
                       "--show-private-values")) == 2
    assert "private (do not publish): header cells that are numbers: '77'" in capsys.readouterr().err


def test_header_row_of_names_does_not_warn(files, tmp_path, capsys):
    assert main(_synth(files / "header.csv", tmp_path, "--schema", str(files / "schema.json"), "--epsilon", "3")) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert list(pd.read_csv(tmp_path / "s.csv").columns) == ["age", "job", "paid"]


@pytest.mark.parametrize("names, reason", [
    ("age,job,paid", "it repeats the column names"),
    ("a,b,c", "no cell of it is a number, but column 1 below it hold mostly numbers"),
])
def test_first_row_that_looks_like_a_header_warns(files, tmp_path, capsys, names, reason):
    assert main(_synth(files / "header.csv", tmp_path, "--no-header", "--columns", names, "--epsilon", "3")) == 0
    err = capsys.readouterr().err
    (line,) = _warnings(err)  # printed although --quiet: the result is likely wrong
    assert f"the first row looks like a header ({reason})" in line and "--skip-rows 1" in line
    assert "private (do not publish)" not in err
    assert "warning" not in (tmp_path / "s.csv").read_text()  # stderr only, never into an output


def test_headerless_file_read_as_such_does_not_warn(files, tmp_path, capsys):
    argv = _synth(files / "headerless.csv", tmp_path, "--no-header", "--schema", str(files / "schema.json"),
                  "--epsilon", "3")
    assert main(argv) == 0
    assert _warnings(capsys.readouterr().err) == []


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"show_private_values": False, **kw})


def test_first_row_rule(capsys):
    text = pd.DataFrame([["a", "b"], ["x", "1"], ["y", "2"], ["z", ""]])
    check_first_row(_args(), "f.csv", text, ["p", "q"])  # column 2 holds numbers below a text cell
    assert "column 2 below it hold mostly numbers" in capsys.readouterr().err
    categorical = pd.DataFrame([["a", "b"], ["x", "y"], ["y", "z"]])
    check_first_row(_args(), "f.csv", categorical, ["p", "q"])  # text everywhere: no sign of a header
    numeric_first = pd.DataFrame([["a", "3"], ["x", "1"]])
    check_first_row(_args(), "f.csv", numeric_first, ["p", "q"])  # a number in the first row: data
    mostly_text = pd.DataFrame([["a", "b"], ["x", "1"], ["y", "?"], ["z", "?"]])
    check_first_row(_args(), "f.csv", mostly_text, ["p", "q"])  # numbers in a minority of the cells below
    assert capsys.readouterr().err == ""
    check_header(_args(show_private_values=True), "f.csv", ["age", "2024", " -3.5e2"])
    err = capsys.readouterr().err
    assert "columns 2, 3 of the header are numbers" in err and "'2024', ' -3.5e2'" in err
    assert [is_number(c) for c in ["39", " 1e3", "+2.", ".5", "1,000", "", "age", "0x1f"]] == [True] * 4 + [False] * 4


# --- 3. --delta ------------------------------------------------------------------------------------------


def test_delta_of_one_is_refused(files, tmp_path, capsys):
    assert main(_synth(files / "header.csv", tmp_path, "--delta", "1")) == 2
    assert capsys.readouterr().err.strip() == "dp-marginals: error: delta must lie in (0, 1), got 1.0"


def test_large_delta_warns_with_the_reason(files, tmp_path, capsys):
    argv = _synth(files / "header.csv", tmp_path, "--schema", str(files / "schema.json"), "--delta", "0.5")
    assert main(argv) == 0
    (line,) = _warnings(capsys.readouterr().err)
    assert line == ("warning: --delta 0.5 is large: delta should be much smaller than 1/n; values above 1e-3 allow a "
                    "per-row failure probability a release should not have (the default is 1e-9)")
    assert main(argv[:-2] + ["--delta", "1e-3"]) == 0  # the threshold itself is accepted quietly
    assert _warnings(capsys.readouterr().err) == []


# --- 4. a release that is mostly noise ---------------------------------------------------------------------


def test_tiny_epsilon_warns_that_the_release_is_noise(files, tmp_path, capsys):
    argv = _synth(files / "header.csv", tmp_path, "--schema", str(files / "schema.json"), "--epsilon", "1e-3")
    assert main(argv) == 0
    out, err = capsys.readouterr()
    (line,) = _warnings(err)
    release = Release.load(tmp_path / "r.npz")
    assert line.startswith("warning: the release is mostly noise: ") and "Use a larger --epsilon" in line
    assert "at --epsilon 0.001" in line and "400" not in line  # public quantities only, never the true count
    if release.total < FEW_ROWS:
        assert f"its noisy total is {release.total:,.0f} row" in line
    else:
        assert "the noise (standard deviation) exceeds the average count per cell" in line
    assert len(pd.read_csv(tmp_path / "s.csv")) == round(release.total)


def test_noise_share_is_computed_from_public_quantities(files, tmp_path, capsys):
    assert main(_synth(files / "header.csv", tmp_path, "--schema", str(files / "schema.json"), "--epsilon", "3")) == 0
    assert _warnings(capsys.readouterr().err) == []
    release = Release.load(tmp_path / "r.npz")
    one_way = [m for m in release.measurements if len(m.clique) == 1]
    expected = np.median([m.sigma * m.noisy_counts.size / release.total for m in one_way])
    assert one_way and noise_share(release) == pytest.approx(expected) and noise_share(release) < 1


def test_coded_path_warns_too(tmp_path, capsys):
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 2, 200)}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "domain.json").write_text('{"a": 3, "b": 2}')
    argv = _synth(tmp_path / "d.csv", tmp_path, "--domain", str(tmp_path / "domain.json"), "--epsilon", "1e-4")
    assert main(argv) == 0
    assert any("the release is mostly noise" in line for line in _warnings(capsys.readouterr().err))


# --- the raw UCI adult file ----------------------------------------------------------------------------------


@pytest.mark.skipif(ADULT is None or not ADULT.is_file(), reason="the raw adult file (../shared/data/adult-raw) is absent")
def test_raw_adult_reproductions(tmp_path, capsys):
    """Issue 24's reproductions on adult.data (15 columns, no header row)."""
    assert main(_synth(ADULT, tmp_path, "--no-header", "--columns", "age,workclass")) == 2
    assert "15 columns per row but --columns names 2" in capsys.readouterr().err
    assert not (tmp_path / "r.npz").exists()
    raw = read_raw_alone(_args(data=str(ADULT), no_header=False, columns=None, schema=None, skip_rows=0))
    (line,) = _warnings(capsys.readouterr().err)  # the first data row became the column names: warned
    assert "the header row looks like data (columns 1, 3, 5, 11, 12, 13 of the header are numbers)" in line
    assert raw.shape[1] == 15
    raw = read_raw_alone(_args(data=str(ADULT), no_header=True, columns=",".join(ADULT_RAW_COLUMNS), schema=None,
                               skip_rows=0))
    assert list(raw.columns) == list(ADULT_RAW_COLUMNS) and capsys.readouterr().err == ""
