"""ddssp.encoding: the A_j matrices, feature names, row encoding, norm bounds and input checks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ddssp.encoding import (
    CATEGORICAL_PRESETS,
    INTERCEPT,
    EncodingOptions,
    build_encoding,
    categorical_preset,
    scaled_values,
)
from marginals import Domain
from benchmarks.data import data_dir

DOM = Domain(("a", "b", "c", "d", "y"), (3, 1, 4, 2, 5))


def all_rows(domain: Domain) -> pd.DataFrame:
    return pd.DataFrame(list(itertools.product(*[range(m) for m in domain.shape])), columns=list(domain.attrs))


def test_scaled_values_endpoints_and_single_level():
    assert np.allclose(scaled_values(5), [-1, -0.5, 0, 0.5, 1])
    assert np.allclose(scaled_values(2), [-1, 1])
    assert np.array_equal(scaled_values(1), [0.0])  # no division by zero


def test_default_is_all_onehot_with_first_level_dropped():
    enc = build_encoding(DOM, "y")
    assert [f.kind for f in enc.features] == ["onehot"] * 4
    assert enc.feature_names == ("a=1", "a=2", "c=1", "c=2", "c=3", "d=1")  # b has 1 level: no column left
    assert enc.features[0].matrix.tolist() == [[0, 1, 0], [0, 0, 1]]
    assert enc.target_encoding.matrix.tolist() == [[-1, -0.5, 0, 0.5, 1]]


def test_keep_all_numeric_raw_values_and_intercept():
    opts = EncodingOptions(drop=None, numeric="raw", values={"c": [0.5, 1, 2, 4]}, intercept=True)
    enc = build_encoding(DOM, "y", categorical=["a"], options=opts)
    assert enc.feature_names == (INTERCEPT, "a=0", "a=1", "a=2", "b", "c", "d")
    assert enc.features[2].matrix.tolist() == [[0.5, 1, 2, 4]]
    assert enc.features[3].matrix.tolist() == [[0, 1]]  # raw codes
    assert enc.target_encoding.matrix.tolist() == [[0, 1, 2, 3, 4]]


def test_encoded_rows_are_concatenated_columns_of_A():
    enc = build_encoding(DOM, "y", categorical=["a", "c"], options=EncodingOptions(intercept=True))
    df = all_rows(DOM).sample(frac=1.0, random_state=0)[["y", "d", "c", "b", "a"]]  # any column order
    X, y = enc.encode(df)
    for row, (_, rec) in zip(X, df.iterrows()):
        expected = [1.0] + [v for f in enc.features for v in f.matrix[:, rec[f.attr]]]
        assert np.array_equal(row, expected)
    assert np.array_equal(y, enc.target_encoding.matrix[0, df["y"].to_numpy()])


@pytest.mark.parametrize("drop", ["first", None])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("numeric", ["scaled", "raw"])
def test_norm_bound_is_attained_max_over_the_domain(drop, intercept, numeric):
    enc = build_encoding(DOM, "y", categorical=["a", "c"], options=EncodingOptions(drop, numeric, None, intercept))
    X, y = enc.encode(all_rows(DOM))
    x_bound, y_bound = enc.norm_bounds()
    assert np.isclose(x_bound, np.max(np.linalg.norm(X, axis=1)))
    assert np.isclose(y_bound, np.max(np.abs(y)))


def test_norm_bound_matches_prop_3_1_on_adult_preset():
    dom = Domain.from_dict(
        {"age": 32, "workclass": 9, "education": 16, "education-num": 16, "marital-status": 7, "occupation": 15,
         "relationship": 6, "race": 5, "sex": 2, "native-country": 42, "income>50K": 2}
    )
    enc = build_encoding(dom, "education-num", categorical=categorical_preset("adult")[:6] + ("native-country",))
    numeric = [f for f in enc.features if f.kind == "numeric"]
    assert [f.attr for f in numeric] == ["age", "sex", "income>50K"]
    assert np.isclose(enc.norm_bounds()[0] ** 2, len(numeric) * 1.0 + 7)  # ||U||^2 + c


def test_logistic_target_is_minus_one_plus_one():
    dom = Domain(("a", "t"), (3, 2))
    enc = build_encoding(dom, "t", "logistic")
    assert enc.target_encoding.matrix.tolist() == [[-1.0, 1.0]]
    assert enc.norm_bounds()[1] == 1.0


def test_decode_target_inverts_the_encoding():
    enc = build_encoding(DOM, "y")
    codes = np.arange(5)
    assert np.allclose(enc.decode_target(enc.target_encoding.matrix[0, codes]), codes)
    assert np.allclose(enc.decode_target(np.array([1.5, -1.25])), [5.0, -0.5])  # affine beyond the ends
    raw = build_encoding(DOM, "y", options=EncodingOptions(numeric="raw"))
    assert np.allclose(raw.decode_target(np.array([2.5])), [2.5])


def test_presets_cover_the_bundled_domains():
    root = data_dir()
    if root is None:
        pytest.skip("bundled data folder absent")
    for name, cats in CATEGORICAL_PRESETS.items():
        dom = Domain.load(root / name / "domain.json")
        assert set(cats) <= set(dom.attrs)
    with pytest.raises(ValueError, match="no categorical preset 'nope'"):
        categorical_preset("nope")


# --- bad input ---------------------------------------------------------------------------


def test_bad_target_and_categorical_names():
    with pytest.raises(ValueError, match="target 'zz' is not in the domain"):
        build_encoding(DOM, "zz")
    with pytest.raises(ValueError, match=r"categorical attribute\(s\) \['nope'\] not in the domain"):
        build_encoding(DOM, "y", categorical=["a", "nope"])
    with pytest.raises(ValueError, match="logistic target 'y' must have exactly 2 levels"):
        build_encoding(DOM, "y", "logistic")
    with pytest.raises(ValueError, match="target 'y' cannot also be a categorical"):
        build_encoding(DOM, "y", categorical=["y"])
    with pytest.raises(TypeError, match="categorical_preset"):
        build_encoding(DOM, "y", categorical="adult")


def test_bad_options():
    with pytest.raises(ValueError, match="drop must be"):
        build_encoding(DOM, "y", options=EncodingOptions(drop="last"))
    with pytest.raises(ValueError, match="numeric must be"):
        build_encoding(DOM, "y", options=EncodingOptions(numeric="minmax"))
    with pytest.raises(ValueError, match="values for 'c': expected 4 numbers"):
        build_encoding(DOM, "y", categorical=[], options=EncodingOptions(values={"c": [1, 2]}))
    with pytest.raises(ValueError, match="'a', which is categorical"):
        build_encoding(DOM, "y", categorical=["a"], options=EncodingOptions(values={"a": [1, 2, 3]}))


def test_encode_rejects_missing_columns_and_out_of_domain_codes(raises_private):
    enc = build_encoding(DOM, "y")
    df = all_rows(DOM)
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['c'\]"):
        enc.encode_features(df.drop(columns=["c"]))
    enc.encode_features(df.drop(columns=["y"]))  # the target is not needed for features
    bad = df.copy()
    bad.loc[7, "c"] = 4
    with raises_private(r"column 'c': 1 value\(s\) outside the codes 0..3, e.g. 4 at row 7"):
        enc.encode_features(bad)
    bad = df.astype({"a": float})
    bad.loc[3, "a"] = np.nan
    with raises_private(r"column 'a': 1 missing value\(s\)"):
        enc.encode_features(bad)
