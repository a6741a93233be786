"""Discretizer: public spec -> domain, exact codes, clipping report, unseen/missing options, aliases,
spec validation, JSON round trip, inverse transform, and the raw UCI Adult files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marginals import DataError, Dataset, Discretizer, Domain
from benchmarks.data import ADULT_RAW_COLUMNS, data_dir, load_adult_raw
from marginals.spec.discretize import SpecError

ROOT = Path(__file__).resolve().parent.parent
ADULT_SPEC = ROOT / "examples" / "adult-raw-spec.json"
RAW = None if data_dir() is None else data_dir() / "adult-raw"
HAVE_RAW = RAW is not None and (RAW / "adult.data").is_file() and (RAW / "adult.test").is_file()
needs_raw = pytest.mark.skipif(not HAVE_RAW, reason="the raw adult folder (../shared/data/adult-raw) is absent")


def spec(**columns) -> dict:
    return {"columns": columns}


def cat(categories, **kw) -> dict:
    return {"type": "categorical", "categories": categories, **kw}


def num(**kw) -> dict:
    return {"type": "numeric", **kw}


def codes(d: Discretizer, df: pd.DataFrame, column: str) -> list[int]:
    return d.transform_df(df)[column].tolist()


# --- domain and exact codes ---------------------------------------------------------------------


def test_domain_comes_from_the_spec_alone():
    d = Discretizer.from_spec(
        {"unseen": "other", "missing": "level", "columns": {
            "c": cat(["a", "b", "c"]),
            "n": num(lo=0, hi=10, bins=5),
            "e": num(edges=[0, 1, 10], missing="error"),
            "k": cat(["x", "y"], unseen="error", missing="error"),
        }}
    )
    assert d.domain == Domain(("c", "n", "e", "k"), (5, 6, 2, 2))  # c: 3 + other + missing; n: 5 + missing
    assert d.labels("c") == ["a", "b", "c", "<other>", "<missing>"]
    assert d.labels("n") == ["[0, 2)", "[2, 4)", "[4, 6)", "[6, 8)", "[8, 10]", "<missing>"]
    assert d.labels("e") == ["[0, 1)", "[1, 10]"]
    assert repr(d) == f"Discretizer({d.domain!r})"


def test_categorical_codes_are_list_positions_with_whitespace_stripped():
    d = Discretizer.from_spec(spec(c=cat(["b", "a", "c"])))
    df = pd.DataFrame({"c": ["a", " b", "c ", "  a  ", "b"]})
    assert codes(d, df, "c") == [1, 0, 2, 1, 0]
    ds = d.transform(df)
    assert isinstance(ds, Dataset) and ds.column("c").dtype == np.uint8


def test_integer_categories_match_integer_float_and_text_columns():
    d = Discretizer.from_spec(spec(k=cat([1, 2, 16])))
    for raw in ([16, 1, 2], [16.0, 1.0, 2.0], ["16", " 1", "2 "], pd.Series([16, " 1.0", 2.0], dtype=object)):
        assert codes(d, pd.DataFrame({"k": raw}), "k") == [2, 0, 1]


def test_equal_width_bins_and_their_boundaries():
    d = Discretizer.from_spec(spec(x=num(lo=0, hi=10, bins=5)))
    df = pd.DataFrame({"x": [0, 1.99, 2, 3.5, 7.999, 8, 10]})
    assert codes(d, df, "x") == [0, 0, 1, 1, 3, 4, 4]  # [a, b) bins, the last one closed
    assert d.last_report["clipped"] == 0


def test_explicit_edges_give_zeros_their_own_bin():
    d = Discretizer.from_spec(spec(g=num(edges=[0, 1, 1000, 99999], integer=True)))
    df = pd.DataFrame({"g": [0, 0, 1, 999, 1000, 99999, 5000]})
    assert codes(d, df, "g") == [0, 0, 1, 1, 2, 2, 2]


def test_numeric_values_given_as_text_are_parsed():
    d = Discretizer.from_spec(spec(x=num(lo=0, hi=10, bins=2)))
    assert codes(d, pd.DataFrame({"x": [" 1", "7.5 ", "5"]}), "x") == [0, 1, 1]


def test_clipping_is_counted_not_hidden():
    d = Discretizer.from_spec(spec(x=num(lo=0, hi=10, bins=2), y=num(edges=[5, 6, 7])))
    df = pd.DataFrame({"x": [-3, 0, 11, 25, 4, np.inf], "y": [5, 6, 7, 8, 2, 6]})
    out = d.transform_df(df)
    assert out["x"].tolist() == [0, 0, 1, 1, 0, 1]
    assert out["y"].tolist() == [0, 1, 1, 1, 0, 1]
    report = d.last_report
    assert report["columns"]["x"] == {"clipped_low": 1, "clipped_high": 3, "missing": 0}
    assert report["columns"]["y"] == {"clipped_low": 1, "clipped_high": 1, "missing": 0}
    assert (report["rows"], report["clipped"], report["other"], report["missing"]) == (6, 6, 0, 0)


# --- unseen, missing, aliases ------------------------------------------------------------------


def test_unseen_values_raise_naming_column_and_rule_not_the_value():
    """Issue 23: the message names the column and the rule; the private value and count only on request."""
    d = Discretizer.from_spec(spec(c=cat(["a", "b"])))
    df = pd.DataFrame({"c": ["a", "zz", "b", "q"]})
    with pytest.raises(DataError, match=r"column 'c': value\(s\) outside the 2 public categories, under the rule "
                                        r"\"unseen\": \"error\"; add them") as err:
        d.transform(df)
    assert "zz" not in str(err.value) and "2 row" not in str(err.value)
    assert err.value.detail.endswith(": 2 row(s), e.g. 'zz' at row 1")  # for --show-private-values
    with pytest.raises(DataError, match=r"\[private, shown on request: 2 row\(s\), e\.g\. 'zz' at row 1\]"):
        d.transform(df, show_private_values=True)


def test_unseen_values_go_to_the_other_level_globally_or_per_column():
    df = pd.DataFrame({"c": ["a", "zz", "b", "q"], "k": ["x", "x", "y", "x"]})
    for s in (
        {"unseen": "other", "columns": {"c": cat(["a", "b"]), "k": cat(["x", "y"])}},
        {"columns": {"c": cat(["a", "b"], unseen="other"), "k": cat(["x", "y"])}},
    ):
        d = Discretizer.from_spec(s)
        assert codes(d, df, "c") == [0, 2, 1, 2]
        assert d.last_report["columns"]["c"]["other"] == 2
    d = Discretizer.from_spec({"unseen": "other", "columns": {"c": cat(["a", "b"], unseen="error"), "k": cat(["x", "y"])}})
    with pytest.raises(DataError, match="column 'c'"):
        d.transform(df)


def test_missing_values_raise_by_default_naming_column_and_rule():
    d = Discretizer.from_spec({"missing_markers": ["?"], "columns": {"c": cat(["a", "b"])}})
    df = pd.DataFrame({"c": ["a", " ?", None, np.nan]})
    with pytest.raises(DataError, match=r"column 'c': missing value\(s\) \(blank, NA/NaN/None or markers \['\?'\]\), "
                                        r"under the rule \"missing\": \"error\"; set \"missing\": \"level\"") as err:
        d.transform(df)
    assert "3" not in str(err.value) and "at row" not in str(err.value)
    with pytest.raises(DataError, match=r"shown on request: 3 row\(s\), e\.g\. ' \?' at row 1\]"):
        d.transform(df, show_private_values=True)
    d = Discretizer.from_spec(spec(x=num(lo=0, hi=1, bins=2)))
    with pytest.raises(DataError, match=r"column 'x': missing value\(s\)"):
        d.transform(pd.DataFrame({"x": [0.5, np.nan]}))


def test_missing_level_comes_after_the_other_level():
    d = Discretizer.from_spec(
        {"missing_markers": ["?", -1], "columns": {
            "c": cat(["a", "b"], unseen="other", missing="level"),
            "x": num(lo=0, hi=10, bins=2, missing="level"),
            "t": num(lo=0, hi=10, bins=2, missing="level", missing_markers=["NA"]),
        }}
    )
    df = pd.DataFrame({"c": ["?", "zz", None, "b"], "x": [-1, 3, np.nan, 7], "t": ["NA", "3", None, "?"]})
    with pytest.raises(DataError, match=r"column 't': non-numeric text, under the rule \"non_numeric\": \"error\""):
        d.transform_df(df)  # the column's own markers replace the global ones
    with pytest.raises(DataError, match=r"shown on request: 1 row\(s\), e\.g\. '\?' at row 3\]"):
        d.transform_df(df, show_private_values=True)
    out = d.transform_df(df.assign(t=["NA", "3", None, "9"]))
    assert out["c"].tolist() == [3, 2, 3, 1]
    assert out["x"].tolist() == [2, 0, 2, 1]  # -1 is a numeric missing marker, not a clipped value
    assert out["t"].tolist() == [2, 0, 2, 1]
    assert d.last_report["columns"]["x"] == {"clipped_low": 0, "clipped_high": 0, "missing": 2}
    assert d.last_report["missing"] == 6 and d.last_report["other"] == 1


def test_aliases_map_public_spellings_before_lookup():
    d = Discretizer.from_spec(spec(y=cat(["<=50K", ">50K"], aliases={"<=50K.": "<=50K", ">50K.": ">50K"})))
    df = pd.DataFrame({"y": ["<=50K", " >50K.", "<=50K.", ">50K"]})
    assert codes(d, df, "y") == [0, 1, 0, 1]
    assert d.domain["y"] == 2


def test_table_columns_must_match_the_spec():
    d = Discretizer.from_spec(spec(a=cat(["x"]), b=cat(["y"])))
    with pytest.raises(DataError, match=r"1 spec column\(s\) missing from the table: \['b'\]"):
        d.transform(pd.DataFrame({"a": ["x"]}))
    with pytest.raises(DataError, match=r"1 column\(s\) not in the spec: \['z'\]"):
        d.transform(pd.DataFrame({"a": ["x"], "b": ["y"], "z": [1]}))
    ds = d.transform(pd.DataFrame({"z": [1], "b": ["y"], "a": ["x"]}), extra="drop")
    assert ds.domain.attrs == ("a", "b")
    with pytest.raises(DataError, match="non-numeric"):
        Discretizer.from_spec(spec(x=num(lo=0, hi=1, bins=1))).transform(pd.DataFrame({"x": ["1", "abc"]}))


# --- spec validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, message",
    [
        (num(lo=0, hi=10, bins=0), r"column 'x': 'bins' must be an integer >= 1, got 0"),
        (num(lo=0, hi=10, bins=2.5), r"'bins' must be an integer >= 1, got 2.5"),
        (num(lo=5, hi=5, bins=2), r"column 'x': 'lo' \(5\) must be below 'hi' \(5\)"),
        (num(lo=0, hi=float("nan"), bins=2), r"'hi' must be a finite number"),
        (num(lo=0, bins=2), r"needs 'edges' or all of 'lo', 'hi', 'bins' \(missing \['hi'\]\)"),
        (num(edges=[0, 2, 1]), r"'edges' must be sorted and distinct, got 2 before 1"),
        (num(edges=[0, 1, 1, 2]), r"'edges' must be sorted and distinct, got duplicate edge 1"),
        (num(edges=[0]), r"'edges' must be a list of at least 2 numbers"),
        (num(edges=[0, 1], lo=0), r"either 'edges' or 'lo'/'hi'/'bins', not both"),
        (num(edges=[0, 0.2, 0.6, 1], integer=True), r"bin \[0.2, 0.6\) holds no integer"),
        (num(edges=[0, 1], integer="yes"), r"'integer' must be true or false"),
        (num(edges=[0, 1], unseen="other"), r"unknown key\(s\) \['unseen'\] for a numeric column"),
        (cat(["a", "b", " a"]), r"column 'x': 1 duplicate categor\(ies\) \['a'\]"),
        (cat([1, "1"]), r"duplicate categor\(ies\) \['1'\]"),
        (cat([]), r"'categories' must be a non-empty list"),
        (cat(["a", True]), r"categories must be non-empty strings or integers \(not text read as missing: blank, NA, null, \.\.\.\), e.g. not True"),
        (cat(["a"], unseen="skip"), r"column 'x': 'unseen' must be one of \['error', 'other', 'drop'\], got 'skip'"),
        (cat(["a"], missing="skip"), r"'missing' must be one of \['error', 'level', 'drop'\], got 'skip'"),
        (cat(["a", "?"], missing_markers=["?"]), r"category '\?' is also a missing marker"),
        (cat(["a"], aliases={"A": "b"}), r"alias 'A' -> 'b': the target is not one of the categories"),
        (cat(["a", "b"], aliases={"a": "b"}), r"alias 'a' is already a category"),
        (cat(["a"], typo=1), r"unknown key\(s\) \['typo'\] for a categorical column"),
        ({"type": "ordinal"}, r"'type' must be one of \['categorical', 'numeric'\], got 'ordinal'"),
    ],
)
def test_invalid_column_specs_are_rejected_with_a_clear_message(column, message):
    with pytest.raises(SpecError, match=message):
        Discretizer.from_spec(spec(x=column))


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"columns": {}}, r"non-empty 'columns' object"),
        ({"columns": {"x": cat(["a"])}, "unseen": "maybe"}, r"spec: 'unseen' must be one of"),
        ({"columns": {"x": cat(["a"])}, "colums": {}}, r"unknown top-level key\(s\) \['colums'\]"),
        ({"columns": {"x": cat(["a"])}, "version": 2}, r"unsupported spec 'version' 2"),
        ({"columns": {"x": cat(["a"])}, "missing_markers": "?"}, r"'missing_markers' must be a list"),
    ],
)
def test_invalid_top_level_specs_are_rejected(bad, message):
    with pytest.raises(SpecError, match=message):
        Discretizer.from_spec(bad)


def test_spec_json_round_trip(tmp_path):
    s = {"unseen": "other", "missing_markers": ["?"], "note": "public", "columns": {
        "c": cat(["a", "b"], aliases={"A": "a"}, missing="level"),
        "x": num(lo=0, hi=10, bins=3, integer=True),
        "e": num(edges=[0, 0.5, 2.25]),
    }}
    d = Discretizer.from_spec(s)
    assert d.to_spec() == s
    assert Discretizer.from_spec(json.loads(json.dumps(d.to_spec()))) == d
    d.save(tmp_path / "spec.json")
    loaded = Discretizer.load(tmp_path / "spec.json")
    assert loaded == d and loaded.domain == d.domain
    assert [p.name for p in tmp_path.iterdir()] == ["spec.json"]  # no temporary file left behind
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SpecError, match="not valid JSON"):
        Discretizer.load(tmp_path / "bad.json")


def test_write_gives_a_domain_and_a_coded_csv_the_engine_reads(tmp_path):
    d = Discretizer.from_spec(spec(c=cat(["a", "b"]), x=num(lo=0, hi=4, bins=2)))
    report = d.write(pd.DataFrame({"x": [1, 3, 9], "c": ["b", "a", "a"]}), tmp_path, name="train.csv")
    assert report["clipped"] == 1
    assert Domain.load(tmp_path / "domain.json") == d.domain
    ds = Dataset.from_csv(tmp_path / "train.csv", d.domain)
    assert ds.to_df().to_dict("list") == {"c": [1, 0, 0], "x": [0, 1, 1]}
    assert Discretizer.load(tmp_path / "discretizer.json") == d


# --- inverse transform --------------------------------------------------------------------------

MIXED = {"missing_markers": ["?"], "columns": {
    "c": cat(["a", "b"], unseen="other", missing="level"),
    "age": num(edges=[17, 25, 40, 90], integer=True, missing="level"),
    "w": num(lo=0, hi=1, bins=4),
}}


def test_inverse_transform_gives_names_markers_and_intervals(raises_private):
    d = Discretizer.from_spec(MIXED)
    coded = pd.DataFrame({"c": [0, 1, 2, 3], "age": [0, 2, 3, 1], "w": [0, 3, 1, 2]})
    out = d.inverse_transform(coded)
    assert out["c"].tolist()[:3] == ["a", "b", "<other>"] and pd.isna(out["c"].iloc[3])
    assert out["age"].tolist()[:2] == ["[17, 25)", "[40, 90]"] and pd.isna(out["age"].iloc[2])
    assert out["w"].tolist() == ["[0, 0.25)", "[0.75, 1]", "[0.25, 0.5)", "[0.5, 0.75)"]
    labelled = d.inverse_transform(coded, other_label="OTHER", missing_label="?")
    assert labelled["c"].tolist() == ["a", "b", "OTHER", "?"]
    with raises_private(r"column 'c': 1 value\(s\) outside the codes 0..3", DataError):
        d.inverse_transform(coded.assign(c=[0, 1, 2, 4]))


def test_inverse_transform_uniform_needs_a_generator():
    d = Discretizer.from_spec(MIXED)
    coded = pd.DataFrame({"c": [0], "age": [0], "w": [0]})
    with pytest.raises(TypeError, match="explicit numpy.random.Generator"):
        d.inverse_transform(coded, numeric="uniform")
    with pytest.raises(ValueError, match="'interval' or 'uniform'"):
        d.inverse_transform(coded, numeric="mean")


def test_uniform_samples_fall_inside_their_bins_reproducibly_and_round_trip():
    d = Discretizer.from_spec(MIXED)
    rng = np.random.default_rng(7)
    n = 5000
    coded = pd.DataFrame({"c": rng.integers(0, 4, n), "age": rng.integers(0, 4, n), "w": rng.integers(0, 4, n)})
    a = d.inverse_transform(coded, rng=np.random.default_rng(1), numeric="uniform")
    b = d.inverse_transform(coded, rng=np.random.default_rng(1), numeric="uniform")
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(d.inverse_transform(coded, rng=np.random.default_rng(2), numeric="uniform"))
    assert a["age"].dtype == "Int64" and a["w"].dtype == np.float64
    age_edges, w_edges = [17, 25, 40, 90], [0, 0.25, 0.5, 0.75, 1]
    for k in range(3):
        vals = a["age"][coded["age"] == k].astype(int)
        assert vals.min() >= age_edges[k] and (vals.max() < age_edges[k + 1] or (k == 2 and vals.max() <= 90))
    assert a["age"][coded["age"] == 3].isna().all() and a["age"].notna().sum() == (coded["age"] < 3).sum()
    assert {17, 24, 25, 39, 40, 90} <= set(a["age"].dropna().astype(int))  # every integer reachable
    for k in range(4):
        vals = a["w"][coded["w"] == k]
        assert vals.min() >= w_edges[k] and vals.max() < w_edges[k + 1] + (k == 3) * 1e-12
    again = d.transform_df(a)
    pd.testing.assert_frame_equal(again, coded.astype(np.uint8))


def test_inverse_transform_accepts_a_dataset():
    d = Discretizer.from_spec(spec(c=cat(["a", "b"])))
    ds = d.transform(pd.DataFrame({"c": ["b", "a"]}))
    assert d.inverse_transform(ds)["c"].tolist() == ["b", "a"]
    with pytest.raises(DataError, match="differs from the discretizer's"):
        Discretizer.from_spec(spec(c=cat(["a", "b", "c"]))).inverse_transform(ds)


# --- the raw UCI Adult files --------------------------------------------------------------------


def test_the_adult_example_spec_is_valid_and_public():
    d = Discretizer.load(ADULT_SPEC)
    assert d.domain.attrs == ADULT_RAW_COLUMNS
    assert d.domain["income"] == 2
    assert d.domain["workclass"] == 9 and d.domain["occupation"] == 15 and d.domain["native-country"] == 42
    assert d.labels("capital-gain")[0] == "[0, 1)" and d.labels("age")[0] == "[17, 20)"


@needs_raw
def test_adult_column_names_follow_adult_names():
    text = (RAW / "adult.names").read_text(encoding="utf-8")
    names = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith("|") and ":" in line]
    assert tuple(names) + ("income",) == ADULT_RAW_COLUMNS
    d = Discretizer.load(ADULT_SPEC)
    for line in text.splitlines():
        name, _, values = line.partition(":")
        if name in d.domain and "continuous" not in values and values.strip():
            listed = [v.strip() for v in values.strip().rstrip(".").split(",")]
            assert d.labels(name)[: len(listed)] == listed


@needs_raw
@pytest.mark.parametrize("split, rows", [("train", 32561), ("test", 16281)])
def test_adult_raw_files_transform_with_the_example_spec(split, rows):
    d = Discretizer.load(ADULT_SPEC)
    raw = load_adult_raw(split)
    assert raw.shape == (rows, 15) and list(raw.columns) == list(ADULT_RAW_COLUMNS)
    ds = d.transform(raw)
    assert len(ds) == rows and ds.domain == d.domain
    income = ds.marginal(("income",))
    assert income.shape == (2,) and income.sum() == rows and income.min() > 0.15 * rows
    report = d.last_report
    assert report["other"] == 0
    assert set(k for k, v in report["columns"].items() if v["missing"]) == {"workclass", "occupation", "native-country"}
    assert report["missing"] == int(raw.isna().sum().sum())
    # the same counts whether '?' arrives as NaN or as the marker itself
    marked = d.transform(load_adult_raw(split, keep_markers=True))
    assert all(np.array_equal(marked.column(a), ds.column(a)) for a in d.domain)
    # missing '?' as its own level, or an error when the spec says so
    assert ds.marginal(("workclass",))[-1] == report["columns"]["workclass"]["missing"] > 0
    strict = d.to_spec()
    strict["columns"]["workclass"]["missing"] = "error"
    with pytest.raises(DataError, match=r"column 'workclass': missing value\(s\)"):
        Discretizer.from_spec(strict).transform(raw)
    # marginals of the coded table are consistent
    two = ds.marginals([("sex", "income"), ("age", "hours-per-week")])
    assert two[0].shape == (2, 2) and two[1].shape == (d.domain["age"], d.domain["hours-per-week"])
    assert all(t.sum() == rows for t in two)
    np.testing.assert_array_equal(two[0].sum(axis=0), income)


@needs_raw
def test_adult_test_labels_go_through_the_aliases():
    d = Discretizer.load(ADULT_SPEC)
    raw = load_adult_raw("test")
    assert set(raw["income"]) == {"<=50K.", ">50K."}
    coded = d.transform_df(raw)["income"]
    assert coded.tolist() == (raw["income"] == ">50K.").astype(int).tolist()
    no_alias = d.to_spec()
    del no_alias["columns"]["income"]["aliases"]
    with pytest.raises(DataError, match=r"column 'income': value\(s\) outside the 2 public categories"):
        Discretizer.from_spec(no_alias).transform(raw)


def test_load_adult_raw_rejects_an_unknown_split():
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        load_adult_raw("validation")


def test_load_adult_raw_says_when_the_data_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MARGINALS_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cannot load the raw adult data"):
        load_adult_raw("train")


def test_drop_options_leave_rows_out_and_count_them():
    d = Discretizer.from_spec(spec(c=cat(["a", "b"], unseen="drop", missing="drop"), n=num(lo=0, hi=10, bins=2)))
    df = pd.DataFrame({"c": ["a", "zz", "b", None, "a"], "n": [1, 2, 3, 4, 9]}, index=[10, 11, 12, 13, 14])
    out = d.transform_df(df)
    assert out.index.tolist() == [10, 12, 14] and out["c"].tolist() == [0, 1, 0] and out["n"].tolist() == [0, 0, 1]
    assert d.last_report["dropped"] == 2 and d.last_report["other"] == 1 and d.last_report["missing"] == 1
    assert d.domain.to_dict() == {"c": 2, "n": 2}
