"""Consistency of the ``dp-marginals`` flags: every flag has help text, the renamed ``synth --decode``
(now ``--numeric``, as in ``discretize``) fails with a message naming the new spelling, errors name flags
rather than Python arguments, numeric flags are checked by the parser, and the coverage warning of
DD-SSP has its own class."""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from aim import Release
from ddssp import DDSSPLinearRegression, InferredPairsWarning
from ddssp.cli.app import build_parser, main
from marginals.datasets import demo_dataset

SPEC = {
    "version": 1,
    "columns": {
        "age": {"type": "numeric", "lo": 0, "hi": 100, "bins": 4, "integer": True},
        "job": {"type": "categorical", "categories": ["a", "b", "c"]},
    },
}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _error_line(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dp-marginals: error: "), err
    return lines[0]


@pytest.fixture()
def raw(tmp_path):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.integers(0, 101, 300), "job": rng.choice(["a", "b", "c"], 300)})
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    return tmp_path, df


def test_every_flag_of_every_subcommand_has_help():
    subs = _subparsers(build_parser())
    assert {"synth", "discretize", "fit", "inspect"} <= set(subs)
    for name, sub in subs.items():
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:  # renamed flags, hidden on purpose
                continue
            assert action.help and len(action.help) > 10, (name, action.option_strings or action.dest)


def test_help_speaks_to_users_not_developers(capsys):
    commands = sorted(_subparsers(build_parser()))
    assert commands == ["discretize", "fit", "inspect", "predict", "query", "report", "spec", "synth"]
    for argv in ([], *([c] for c in commands)):
        assert main([*argv, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: dp-marginals") and "--quiet" in out if argv else "COMMAND" in out
        for note in ("ddssp", "import chain", "``", "marginals.spec"):  # module paths and reST belong in docstrings
            assert note not in out, (argv, note)


def test_budget_and_target_flags_say_what_they_are(capsys):
    subs = _subparsers(build_parser())
    helps = {(n, o): a.help for n, s in subs.items() for a in s._actions for o in a.option_strings}
    assert "epsilon" in helps["synth", "--epsilon"] and "delta" in helps["synth", "--delta"]
    assert "predict" in helps["fit", "--target"]
    assert main(["synth", "--help"]) == 0
    assert "--decode" not in capsys.readouterr().out  # the old spelling is not advertised


@pytest.mark.parametrize("argv", [["synth", "--decode", "uniform"], ["synth", "--decode"]])
def test_the_old_synth_decode_names_its_new_spelling(capsys, argv):
    line = _error_line(capsys, argv)
    assert "--decode was renamed" in line and "--numeric uniform|midpoint|interval" in line


def test_synth_numeric_uniform_decodes_into_values(raw):
    folder, df = raw
    df.to_csv(folder / "raw.csv", index=False)
    argv = ["synth", "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"), "--quiet",
            "--numeric", "uniform", "--sample-seed", "2", "--out", str(folder / "s.csv"),
            "--release", str(folder / "r.npz")]
    assert main(argv) == 0
    ages = pd.read_csv(folder / "s.csv")["age"]
    assert ages.dtype.kind == "i" and ages.between(0, 100).all()  # numbers, not interval labels


def test_discretize_seed_is_sample_seed(raw):
    folder, df = raw
    df.to_csv(folder / "raw.csv", index=False)
    assert main(["discretize", "--spec", str(folder / "spec.json"), "--data", str(folder / "raw.csv"), "--quiet",
                 "--out-dir", str(folder / "coded")]) == 0
    outs = []
    for flag in ("--sample-seed", "--seed"):  # --seed stays an alias
        out = folder / f"back{flag}.csv"
        assert main(["discretize", "--spec", str(folder / "coded" / "discretizer.json"), "--decode",
                     str(folder / "coded" / "data.csv"), "--numeric", "uniform", flag, "4", "--out", str(out)]) == 0
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(*outs)


def test_uniform_without_a_seed_names_the_flag(raw, capsys):
    folder, df = raw
    df.to_csv(folder / "codes.csv", index=False)
    line = _error_line(capsys, ["discretize", "--spec", str(folder / "spec.json"), "--decode",
                                str(folder / "codes.csv"), "--numeric", "uniform"])
    assert "--sample-seed" in line


@pytest.mark.parametrize("command", ["synth", "discretize"])
def test_an_extra_column_hint_names_the_flag(raw, capsys, command):
    folder, df = raw
    df.assign(extra=1).to_csv(folder / "raw.csv", index=False)
    argv = [command, "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"), "--quiet"]
    argv += ["--out-dir", str(folder / "o")] if command == "discretize" else ["--release", str(folder / "r.npz")]
    line = _error_line(capsys, argv)
    assert "raw.csv" in line and "'extra'" in line and "--drop-extra ignores them" in line
    assert "extra='drop'" not in line  # the Python argument
    assert main(argv + ["--drop-extra"]) == 0


def test_a_headerless_csv_hint_names_no_header(raw, capsys):
    folder, df = raw
    df.to_csv(folder / "raw.csv", index=False, header=False)
    argv = ["discretize", "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"), "--quiet",
            "--out-dir", str(folder / "o")]
    line = _error_line(capsys, argv)
    assert "missing from the table" in line and "--no-header" in line
    assert main(argv + ["--no-header"]) == 0
    codes = pd.read_csv(folder / "o" / "data.csv")
    np.testing.assert_array_equal(codes["age"], np.minimum(df["age"] // 25, 3))


def test_a_title_line_hint_names_skip_rows(raw, capsys):
    folder, df = raw
    (folder / "raw.csv").write_text("|a title line\n" + df.to_csv(index=False, header=False))
    argv = ["discretize", "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"), "--quiet",
            "--out-dir", str(folder / "o"), "--no-header"]
    assert "--skip-rows N" in _error_line(capsys, argv)
    assert main(argv + ["--skip-rows", "1"]) == 0
    assert len(pd.read_csv(folder / "o" / "data.csv")) == len(df)


def test_no_header_refuses_a_different_number_of_columns(raw, capsys):
    folder, df = raw
    df.assign(extra=7).to_csv(folder / "raw.csv", index=False, header=False)  # pandas would shift the columns
    line = _error_line(capsys, ["discretize", "--data", str(folder / "raw.csv"), "--spec", str(folder / "spec.json"),
                                "--out-dir", str(folder / "o"), "--no-header"])
    assert "3 columns per row but the spec names 2" in line


@pytest.mark.parametrize("flag, value", [("--max-model-size", "0"), ("--max-model-size", "nan"), ("--rows", "0"),
                                         ("--max-cells", "-3"), ("--skip-rows", "-1"), ("--sample-seed", "-1")])
def test_numeric_flags_are_checked_by_the_parser(capsys, flag, value):
    line = _error_line(capsys, ["synth", f"{flag}={value}"])
    assert f"argument {flag}" in line


@pytest.mark.filterwarnings("ignore::ddssp.CollinearityWarning")
def test_the_inferred_pairs_warning_has_its_own_class(tmp_path):
    assert issubclass(InferredPairsWarning, UserWarning)
    data = demo_dataset(n=600, seed=3)
    data.to_df().to_csv(tmp_path / "d.csv", index=False)
    data.domain.save(tmp_path / "domain.json")
    assert main(["synth", "--data", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "domain.json"), "--quiet",
                 "--epsilon", "0.2", "--insecure-seed", "1", "--out", str(tmp_path / "s.csv"),
                 "--release", str(tmp_path / "r.npz")]) == 0
    release = Release.load(tmp_path / "r.npz")
    with pytest.warns(InferredPairsWarning, match="inferred by the model"):
        DDSSPLinearRegression("income").fit(release)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", InferredPairsWarning)  # users can filter exactly this one
        DDSSPLinearRegression("income").fit(release)
    assert not any(issubclass(w.category, InferredPairsWarning) for w in caught)
