"""Dataset: construction, compact storage, validation messages, rows kept exactly as given."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from marginals import DataError, Dataset, Domain
from benchmarks.data import data_dir, load_bundled

DOM = Domain(("a", "b", "c"), (2, 3, 300))


def frame(**overrides) -> pd.DataFrame:
    cols = {"a": [0, 1, 1, 0], "b": [2, 0, 1, 2], "c": [0, 299, 17, 5]}
    cols.update(overrides)
    return pd.DataFrame(cols)


# --- construction -----------------------------------------------------------------------------


def test_columns_in_any_order_are_stored_in_domain_order():
    df = frame()[["c", "a", "b"]]
    ds = Dataset(df, DOM)
    out = ds.to_df()
    assert list(out.columns) == ["a", "b", "c"]
    for a in DOM.attrs:
        np.testing.assert_array_equal(out[a].to_numpy(), df[a].to_numpy())
    assert len(ds) == ds.records == 4
    assert repr(ds) == "Dataset(4 rows, 3 attributes)"


@pytest.mark.parametrize(
    "levels, dtype", [(1, np.uint8), (2, np.uint8), (256, np.uint8), (257, np.uint16), (65536, np.uint16), (65537, np.uint32)]
)
def test_compact_dtype(levels, dtype):
    ds = Dataset(pd.DataFrame({"x": [0, levels - 1, 0]}), Domain(("x",), (levels,)))
    col = ds.column("x")
    assert col.dtype == dtype
    np.testing.assert_array_equal(col, [0, levels - 1, 0])


def test_compact_dtypes_of_a_mixed_table():
    ds = Dataset(frame(), DOM)
    assert [ds.column(a).dtype for a in DOM] == [np.uint8, np.uint8, np.uint16]
    assert [ds.to_df()[a].dtype for a in DOM] == [np.uint8, np.uint8, np.uint16]


def test_column_is_read_only_and_unknown_column_rejected():
    ds = Dataset(frame(), DOM)
    col = ds.column("b")
    with pytest.raises(ValueError):
        col[0] = 1
    with pytest.raises(ValueError, match=r"unknown attribute\(s\) \['zz'\]"):
        ds.column("zz")


def test_accepted_input_dtypes():
    # floats holding integers, numeric strings, booleans, nullable Int64 without NA, unsigned ints
    df = pd.DataFrame(
        {
            "a": pd.Series([True, False, True, False]),
            "b": pd.Series([2.0, 0.0, 1.0, 2.0]),
            "c": pd.Series(["0", "299", "17", "5"], dtype=object),
        }
    )
    ds = Dataset(df, DOM)
    np.testing.assert_array_equal(ds.to_df().to_numpy(), [[1, 2, 0], [0, 0, 299], [1, 1, 17], [0, 2, 5]])
    df2 = frame(a=pd.Series([0, 1, 1, 0], dtype="Int64"), b=np.array([2, 0, 1, 2], dtype=np.uint64))
    np.testing.assert_array_equal(Dataset(df2, DOM).to_df().to_numpy(), frame().to_numpy())


def test_input_frame_is_not_modified():
    df = frame()[["b", "c", "a"]]
    before = df.copy()
    Dataset(df, DOM)
    pd.testing.assert_frame_equal(df, before)


def test_not_a_dataframe():
    with pytest.raises(TypeError, match="expects a pandas DataFrame, got dict"):
        Dataset({"a": [0]}, DOM)


def test_from_csv(tmp_path):
    p = tmp_path / "t.csv"
    frame()[["b", "c", "a"]].to_csv(p, index=False)
    ds = Dataset.from_csv(p, DOM)
    pd.testing.assert_frame_equal(ds.to_df().astype(np.int64), frame())


def test_from_csv_reports_empty_cells(tmp_path, raises_private):
    p = tmp_path / "t.csv"
    p.write_text("a,b,c\n0,1,2\n1,,3\n0,2,4\n")
    with raises_private(r"column 'b': 1 missing value\(s\) \(NaN/None\), e.g. nan at row 1"):
        Dataset.from_csv(p, DOM)


def test_from_codes(raises_private):
    codes = [np.array([0, 1]), np.array([2, 2]), np.array([299, 0])]
    ds = Dataset.from_codes(codes, DOM)
    np.testing.assert_array_equal(ds.to_df().to_numpy(), [[0, 2, 299], [1, 2, 0]])
    with raises_private(r"column 'b': 1 value\(s\) outside the codes 0..2, e.g. 3 at row 1"):
        Dataset.from_codes([np.array([0, 1]), np.array([2, 3]), np.array([0, 0])], DOM)


@pytest.mark.skipif(data_dir() is None, reason="bundled data absent")
def test_bundled_adult_follows_domain_order():
    ds = load_bundled("adult", limit=500)
    csv = pd.read_csv(data_dir() / "adult" / "train.csv", nrows=500)
    assert list(csv.columns) != list(ds.domain.attrs)  # the file order differs from the domain order
    out = ds.to_df()
    assert list(out.columns) == list(ds.domain.attrs)
    for a in ds.domain:
        np.testing.assert_array_equal(out[a].to_numpy(), csv[a].to_numpy())


# --- validation: columns ---------------------------------------------------------------------


def test_unknown_columns():
    with pytest.raises(DataError, match=r"2 unknown column\(s\) not in the domain: \['x', 'y'\]") as e:
        Dataset(frame(x=[0] * 4, y=[1] * 4), DOM)
    assert "missing" not in str(e.value)


def test_missing_columns():
    with pytest.raises(DataError, match=r"1 domain attribute\(s\) missing from the table: \['b'\]"):
        Dataset(frame().drop(columns="b"), DOM)


def test_unknown_and_missing_reported_together():
    df = frame().rename(columns={"c": "cc"})
    with pytest.raises(DataError, match=r"unknown column\(s\) not in the domain: \['cc'\]; 1 domain attribute\(s\) missing from the table: \['c'\]"):
        Dataset(df, DOM)


def test_duplicate_columns():
    df = pd.concat([frame(), frame()[["a"]]], axis=1)
    assert list(df.columns) == ["a", "b", "c", "a"]
    with pytest.raises(DataError, match=r"duplicate column\(s\) \['a'\]"):
        Dataset(df, DOM)


def test_empty_table():
    with pytest.raises(DataError, match=r"empty table: 0 rows"):
        Dataset(frame().iloc[:0], DOM)


# --- validation: values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, expected",
    [
        ([0.0, 1.0, np.nan, np.nan], r"column 'b': 2 missing value\(s\) \(NaN/None\), e.g. nan at row 2"),
        (pd.Series([0, None, 1, 2], dtype=object), r"column 'b': 1 missing value\(s\) \(NaN/None\), e.g. None at row 1"),
        (pd.Series([0, 1, pd.NA, 2], dtype="Int64"), r"column 'b': 1 missing value\(s\) \(NaN/None\), e.g. .* at row 2"),
        ([0, 1.5, 1, 2.25], r"column 'b': 2 non-integer or infinite value\(s\), e.g. 1.5 at row 1"),
        (pd.Series([0, 1, "abc", 2], dtype=object), r"column 'b': 1 non-integer or infinite value\(s\), e.g. 'abc' at row 2"),
        (["0", "1", "abc", "2"], r"column 'b': 1 non-integer or infinite value\(s\), e.g. 'abc' at row 2"),
        ([0, np.inf, 1, -np.inf], r"column 'b': 2 non-integer or infinite value\(s\), e.g. inf at row 1"),
        ([0, 1, -1, 2], r"column 'b': 1 value\(s\) outside the codes 0..2, e.g. -1 at row 2"),
        ([0, 3, 1, 7], r"column 'b': 2 value\(s\) outside the codes 0..2, e.g. 3 at row 1"),
        ([0.0, 1.0, 2.0, 3.0], r"column 'b': 1 value\(s\) outside the codes 0..2, e.g. 3.0 at row 3"),
        ([0.0, -2.0, 1.0, 2.0], r"column 'b': 1 value\(s\) outside the codes 0..2, e.g. -2.0 at row 1"),
    ],
    ids=["nan", "none", "pd-NA", "fraction", "abc-object", "abc-str", "inf", "negative", "too-large", "float-too-large", "float-negative"],
)
def test_bad_values_named_with_count_and_example(column, expected, raises_private):
    with raises_private(expected, DataError):  # the count and the example only in .detail
        Dataset(frame(b=column), DOM)


def test_example_row_uses_the_frame_index(raises_private):
    df = frame(b=[0, 1, 9, 2])
    df.index = [10, 20, 30, 40]
    with raises_private(r"e.g. 9 at row 30"):
        Dataset(df, DOM)


def test_large_code_column_out_of_range(raises_private):
    with raises_private(r"column 'c': 1 value\(s\) outside the codes 0..299, e.g. 300 at row 0"):
        Dataset(frame(c=[300, 0, 1, 2]), DOM)


# --- weights ---------------------------------------------------------------------------------------


def test_weights_kept():
    ds = Dataset(frame(), DOM, weights=[1, 0.5, 2, 0])
    assert ds.weights.dtype == np.float64
    np.testing.assert_array_equal(ds.weights, [1, 0.5, 2, 0])
    np.testing.assert_array_equal(ds.project(("b",)).weights, ds.weights)


@pytest.mark.parametrize(
    "weights, expected",
    [
        ([1.0, 1.0, 1.0], r"weights: expected one value per row, got shape \(3,\)"),
        ([[1.0, 1.0, 1.0, 1.0]], r"weights: expected one value per row, got shape \(1, 4\)"),
        ([1.0, -1.0, 1.0, 1.0], r"weights: 1 negative or non-finite value\(s\), e.g. -1.0 at row 1"),
        ([1.0, np.nan, np.inf, 1.0], r"weights: 2 negative or non-finite value\(s\), e.g. nan at row 1"),
    ],
)
def test_bad_weights(weights, expected):
    for call in (lambda: Dataset(frame(), DOM, weights=weights),  # the same check for per-call weights
                 lambda: Dataset(frame(), DOM).marginal(("a",), weights=weights)):
        with pytest.raises(DataError) as info:
            call()
        assert re.search(expected, info.value.detail or str(info.value))
        assert "e.g." not in str(info.value) and " at row " not in str(info.value)


# --- rows are kept exactly -------------------------------------------------------------------------


def test_rows_never_dropped_clipped_or_reordered():
    rng = np.random.default_rng(5)
    n = 5000
    dom = Domain(("u", "v", "w"), (4, 1000, 3))
    df = pd.DataFrame({"w": rng.integers(0, 3, n), "u": rng.integers(0, 4, n), "v": rng.integers(0, 1000, n)})
    df.index = rng.permutation(n) * 7  # a shuffled, non-default index must not reorder rows
    ds = Dataset(df, dom)
    assert len(ds) == n
    back = ds.to_df()
    assert list(back.columns) == ["u", "v", "w"]
    expected = df[["u", "v", "w"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(back.astype(np.int64), expected.astype(np.int64))
    # round trip: a dataset rebuilt from to_df is identical
    pd.testing.assert_frame_equal(Dataset(back, dom).to_df(), back)


def test_one_bad_row_among_many_is_an_error_not_a_drop(raises_private):
    df = frame(a=[0, 1, 2, 0])  # 2 is outside 0..1 for 'a'
    with raises_private(r"column 'a': 1 value\(s\) outside the codes 0..1, e.g. 2 at row 2"):
        Dataset(df, DOM)


def test_project_keeps_rows_and_order():
    ds = Dataset(frame(), DOM)
    p = ds.project(("c", "a"))
    assert p.domain.attrs == ("c", "a") and len(p) == 4
    np.testing.assert_array_equal(p.to_df().to_numpy(), frame()[["c", "a"]].to_numpy())
