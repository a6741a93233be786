"""What the command line writes and says about private data: every CSV it writes has spreadsheet
formulas escaped (synthetic rows from a spec or from raw values alone, decoded codes, predictions),
numbers never; no message quotes an exact private count unless --show-private-values."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.cli.common import csv_text, escape_formula, escape_formulas

pytestmark = pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning")

#: released categories a spreadsheet would run as formulas (OWASP's list of first characters).
FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1;2)", "-x", "@y", "\tz", "\rw"]
SPEC = {"version": 1, "columns": {
    "delta": {"type": "numeric", "lo": -10, "hi": 10, "bins": 4, "integer": True},
    "tag": {"type": "categorical", "categories": FORMULAS + ["plain"]},
}}
#: with a column whose categories are plain numbers written as text (not formulas: never escaped).
SIGNED = {"version": 1, "columns": {**SPEC["columns"], "sign": {"type": "categorical", "categories": ["-1", "+1"]}}}


def _cells(path: Path) -> list[dict[str, str]]:
    """The CSV's cells exactly as written (no type inference, no NA parsing)."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formulas")
    rng = np.random.default_rng(5)
    n = 1500
    tags = FORMULAS[:4] + ["plain"]  # (the spec strips a category's leading tab or CR: tested on its own)
    df = pd.DataFrame({"delta": rng.integers(-10, 11, n), "tag": rng.choice(tags, n)})
    df.to_csv(folder / "raw.csv", index=False)
    (folder / "spec.json").write_text(json.dumps(SPEC))
    (folder / "signed.json").write_text(json.dumps(SIGNED))
    return folder


def _synth(raw: Path, out: Path, *extra: str) -> list[str]:
    return ["synth", "--data", str(raw / "raw.csv"), "--spec", str(raw / "spec.json"), "--epsilon", "4", "--rows", "600", "--quiet",
            "--insecure-seed", "2", "--sample-seed", "3", "--out", str(out / "s.csv"), "--release",
            str(out / "r.npz"), *extra]


def test_escape_formula_cell_rules():
    assert [escape_formula(c) for c in FORMULAS] == ["'" + c for c in FORMULAS]
    for kept in ("plain", "a=b", " =x", "'=x", "", "-3", "+1.5e3", ".5", -3, 2.5, None):
        assert escape_formula(kept) == kept or (kept != kept)
    assert escape_formula("-3x") == "'-3x" and escape_formula("-") == "'-" and escape_formula("1+1") == "1+1"


def test_a_carriage_return_in_a_cell_is_quoted():
    table = pd.DataFrame({"a": ["x\ry", "\rz", "w"], "n": [1, 2, 3]})
    back = pd.read_csv(io.StringIO(csv_text(table)), keep_default_na=False)
    assert back["a"].tolist() == ["x\ry", "'\rz", "w"] and back["n"].tolist() == [1, 2, 3]
    assert csv_text(table.iloc[2:]) == "a,n\nw,3\n"  # plain tables keep \n line ends


def test_escape_formulas_leaves_numeric_columns_and_missing_values():
    table = pd.DataFrame({
        "n": [-3, 4, -5], "f": [-1.5, np.nan, 2.0], "b": [True, False, True],
        "cat": pd.Categorical(["=a", None, "ok"], categories=["=a", "ok", "'=a"]),
        "obj": ["@x", np.nan, "-2"], "=head": ["x", "y", "z"],
    })
    text = csv_text(table)
    assert text.splitlines()[0] == "n,f,b,cat,obj,'=head"
    assert text.splitlines()[1:] == ["-3,-1.5,True,'=a,'@x,x", "4,,False,,,y", "-5,2.0,True,ok,-2,z"]
    assert csv_text(table, escape=False).splitlines()[1].startswith("-3,-1.5,True,=a,@x")
    escaped = escape_formulas(table)
    assert escaped["n"].dtype == table["n"].dtype and table["cat"].iloc[0] == "=a"  # a copy; numbers untouched


def test_synthetic_csv_from_a_spec_is_escaped_numbers_are_not(raw, tmp_path):
    assert main(_synth(raw, tmp_path)) == 0
    rows = _cells(tmp_path / "s.csv")
    tags = {r["tag"] for r in rows}
    escaped = {"'" + c for c in FORMULAS}
    assert tags <= escaped | {"plain"} and len(tags & escaped) >= 4  # every formula-like category escaped
    deltas = [r["delta"] for r in rows]
    assert any(d.startswith("-") for d in deltas) and all(-10 <= float(d) <= 10 for d in deltas)  # -3 stays -3
    assert main(_synth(raw, tmp_path, "--no-escape-formulas")) == 0
    tags = {r["tag"] for r in _cells(tmp_path / "s.csv")}
    assert tags <= set(FORMULAS) | {"plain"} and len(tags & set(FORMULAS)) >= 4  # the flag turns it off


def test_synthetic_csv_of_the_raw_path_is_escaped(raw, tmp_path):
    argv = ["synth", "--data", str(raw / "raw.csv"), "--epsilon", "4", "--quiet", "--insecure-seed", "2",
            "--sample-seed", "3", "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]
    assert main(argv) == 0
    tags = {r["tag"] for r in _cells(tmp_path / "s.csv")}
    assert tags and not any(t[:1] and t[:1] in "=+-@\t\r" for t in tags)  # "": the missing level
    assert any(t.startswith("'") for t in tags)


def test_decoded_codes_are_escaped(raw, tmp_path):
    codes = pd.DataFrame({"delta": [0, 3, 1], "tag": [0, 1, 6], "sign": [0, 1, 0]})
    codes.to_csv(tmp_path / "codes.csv", index=False)
    argv = ["discretize", "--spec", str(raw / "signed.json"), "--decode", str(tmp_path / "codes.csv"), "--out",
            str(tmp_path / "d.csv")]
    assert main(argv) == 0
    rows = _cells(tmp_path / "d.csv")
    assert [r["tag"] for r in rows] == ["'" + FORMULAS[0], "'" + FORMULAS[1], "plain"]
    assert rows[0]["delta"].startswith("[-10") and [r["sign"] for r in rows] == ["-1", "+1", "-1"]  # plain numbers
    assert main(argv + ["--no-escape-formulas"]) == 0
    assert [r["tag"] for r in _cells(tmp_path / "d.csv")][:2] == FORMULAS[:2]


def test_predictions_are_escaped(tmp_path):
    rng = np.random.default_rng(1)
    n = 2000
    x = rng.integers(0, 10, n)
    df = pd.DataFrame({"x": x, "label": np.where(x + rng.integers(-2, 3, n) > 4, "=yes()", "@no")})
    df.to_csv(tmp_path / "raw.csv", index=False)
    spec = {"version": 1, "columns": {"x": {"type": "numeric", "lo": 0, "hi": 10, "bins": 5, "integer": True},
                                      "label": {"type": "categorical", "categories": ["@no", "=yes()"]}}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["synth", "--data", str(tmp_path / "raw.csv"), "--spec", str(tmp_path / "spec.json"), "--epsilon",
                 "4", "--quiet", "--insecure-seed", "1", "--out", str(tmp_path / "s.csv"), "--release",
                 str(tmp_path / "r.npz")]) == 0
    coef = tmp_path / "coef.json"
    assert main(["fit", "--release", str(tmp_path / "r.npz"), "--target", "label", "--model", "logistic",
                 "--json", str(coef), "--quiet"]) == 0
    df.drop(columns=["label"]).head(50).to_csv(tmp_path / "rows.csv", index=False)
    argv = ["predict", "--release", str(tmp_path / "r.npz"), "--coef", str(coef), "--data",
            str(tmp_path / "rows.csv"), "--out", str(tmp_path / "p.csv")]
    assert main(argv) == 0
    rows = _cells(tmp_path / "p.csv")
    assert len(rows) == 50 and {r["prediction"] for r in rows} <= {"'@no", "'=yes()"}
    assert all(0 <= float(r["probability"]) <= 1 for r in rows)


def test_predict_prints_no_exact_row_count(tmp_path, capsys):
    spec = {"version": 1, "columns": {
        "x": {"type": "numeric", "lo": 0, "hi": 10, "bins": 5, "integer": True, "missing": "drop"},
        "y": {"type": "numeric", "lo": 0, "hi": 10, "bins": 5, "integer": True}}}
    rng = np.random.default_rng(2)
    pd.DataFrame({"x": rng.integers(0, 11, 800), "y": rng.integers(0, 11, 800)}).to_csv(tmp_path / "raw.csv",
                                                                                        index=False)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["synth", "--data", str(tmp_path / "raw.csv"), "--spec", str(tmp_path / "spec.json"), "--quiet",
                 "--insecure-seed", "1", "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]) == 0
    assert main(["fit", "--release", str(tmp_path / "r.npz"), "--target", "y", "--json", str(tmp_path / "c.json"),
                 "--quiet"]) == 0
    capsys.readouterr()
    pd.DataFrame({"x": [1.0] * 217 + [np.nan] * 224}).to_csv(tmp_path / "rows.csv", index=False)
    argv = ["predict", "--release", str(tmp_path / "r.npz"), "--coef", str(tmp_path / "c.json"), "--data",
            str(tmp_path / "rows.csv"), "--out", str(tmp_path / "p.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "column 'x': a missing value, and the column has no missing level (rule \"missing\": \"drop\")" in err
    assert "224" not in err and not (tmp_path / "p.csv").exists()
    pd.DataFrame({"x": [1.0] * 217}).to_csv(tmp_path / "rows.csv", index=False)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "217" not in out + err
    assert main(argv + ["--show-private-values"]) == 0
    assert "217 rows" in capsys.readouterr().err


def test_codes_errors_quote_no_private_value_unless_asked(tmp_path, capsys):
    from marginals import Domain

    Domain(("a", "b"), (3, 2)).save(tmp_path / "domain.json")
    rows = ["a,b"] + ["0,1"] * 50 + ["7777,0"] + ["1,0"] * 50  # one code outside 0..2, at row 50
    (tmp_path / "codes.csv").write_text("\n".join(rows) + "\n")
    argv = ["synth", "--data", str(tmp_path / "codes.csv"), "--domain", str(tmp_path / "domain.json"), "--quiet",
            "--insecure-seed", "1", "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'codes.csv'}: column 'a': value(s) outside the codes 0..2" in err  # file, column, rule
    assert "7777" not in err and "row 50" not in err and "1 value" not in err
    assert main(argv + ["--show-private-values"]) == 2
    err = capsys.readouterr().err
    assert "private (do not publish): column 'a': 1 value(s) outside the codes 0..2, e.g. 7777 at row 50" in err
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "r.npz").exists()
