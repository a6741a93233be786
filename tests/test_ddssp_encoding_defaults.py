"""``categorical=None`` (issue 27, item 4): the domain's public order metadata (`marginals.Domain.ordinal`)
decides the encoding (ordinal attributes scaled, nominal one-hot, a spec's extra levels after the bins as
indicators); it travels through datasets, releases (save / load) and specs; a domain without it is
one-hot everywhere with one `EncodingDefaultWarning`; an explicit ``categorical`` is unchanged."""

from __future__ import annotations

import itertools
import json
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release, synthesize
from aim.release_checks import ReleaseFormatError
from ddssp import (
    CATEGORICAL_PRESETS,
    AdaSSP,
    DDSSPLinearRegression,
    DDSSPLogisticRegression,
    EncodingDefaultWarning,
    EncodingOptions,
    build_encoding,
)
from ddssp.cli import main
from ddssp.cli.predict import refit
from marginals import Dataset, Discretizer, Domain
from marginals.datasets import load_adult

pytestmark = [pytest.mark.filterwarnings("ignore::ddssp.statistics.InferredPairsWarning")]

DOM = Domain(("age", "job", "hours", "y"), (5, 3, 6, 4), ordinal={"age": 5, "hours": 4, "y": 4})
SPEC = {"columns": {
    "age": {"type": "numeric", "edges": [17, 30, 40, 50, 60, 80], "integer": True, "missing": "level"},
    "hours": {"type": "numeric", "edges": [0, 20, 35, 45, 60, 99], "integer": True},
    "job": {"type": "categorical", "categories": ["clerk", "nurse", "teacher"], "unseen": "other"},
    "income": {"type": "categorical", "categories": ["<=50K", ">50K"]},
}}
AIM_OPTIONS = dict(max_iters=30, final_iters=30)


def raw_rows(n: int, seed: int) -> pd.DataFrame:
    """Raw rows of `SPEC` (a few ages missing, a few unseen jobs), income tied to age and hours."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n).astype(float)
    hours = np.clip(rng.normal(40, 8, n).round(), 1, 98).astype(int)
    income = np.where(age + (hours - 40) + rng.normal(0, 10, n) > 50, ">50K", "<=50K")
    age[rng.random(n) < 0.05] = np.nan
    job = rng.choice(["clerk", "nurse", "teacher", "pilot"], n, p=[0.4, 0.3, 0.25, 0.05])
    return pd.DataFrame({"age": age, "hours": hours, "job": job, "income": income})


def codes(n: int, domain: Domain, seed: int) -> Dataset:
    """``n`` uniform rows of codes over ``domain``, the last column tied to the first."""
    rng = np.random.default_rng(seed)
    cols = {a: rng.integers(0, m, n) for a, m in zip(domain.attrs, domain.shape)}
    last = domain.attrs[-1]
    cols[last] = np.minimum(cols[domain.attrs[0]] * domain[last] // domain[domain.attrs[0]] + rng.integers(0, 2, n),
                            domain[last] - 1)
    return Dataset(pd.DataFrame(cols), domain)


def caught(fn, *args, **kwargs):
    """(fn's result, the EncodingDefaultWarnings it raised), every warning recorded."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [w for w in record if issubclass(w.category, EncodingDefaultWarning)]


# --- the encoding --------------------------------------------------------------------------------


def test_ordinal_attributes_are_scaled_nominal_one_hot_and_extra_levels_indicators():
    enc, warned = caught(build_encoding, DOM, "y")
    assert not warned
    kinds = {f.attr: f.kind for f in enc.features}
    assert kinds == {"age": "numeric", "job": "onehot", "hours": "mixed"}
    assert enc.feature_names == ("age", "job=1", "job=2", "hours", "hours=4", "hours=5")
    age, job, hours = enc.features
    np.testing.assert_allclose(age.matrix, [[-1, -0.5, 0, 0.5, 1]])
    np.testing.assert_allclose(job.matrix, [[0, 1, 0], [0, 0, 1]])
    # hours: 4 ordered bins scaled over themselves (0 at the extras), one indicator per extra level
    np.testing.assert_allclose(hours.matrix, [[-1, -1 / 3, 1 / 3, 1, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]])
    assert hours.labelled(["a", "b", "c", "d", "<other>", "<missing>"]) == ("hours", "hours=<other>", "hours=<missing>")
    # the Prop. 3.1 bound is the largest encoded row norm (brute force over every level combination)
    rows = pd.DataFrame(list(itertools.product(*(range(m) for m in DOM.shape))), columns=list(DOM.attrs))
    norms = np.linalg.norm(enc.encode_features(rows), axis=1)
    assert enc.norm_bounds()[0] == pytest.approx(norms.max()) == pytest.approx(np.sqrt(3))
    raw = build_encoding(DOM, "y", options=EncodingOptions(numeric="raw"))
    np.testing.assert_allclose(raw.features[2].matrix[0], [0, 1, 2, 3, 0, 0])


def test_one_ordered_level_and_extras_is_indicators_only():
    enc = build_encoding(Domain(("a", "y"), (3, 2), ordinal={"a": 1}), "y")
    assert enc.feature_names == ("a=1", "a=2") and enc.features[0].kind == "mixed"
    np.testing.assert_allclose(enc.features[0].matrix, [[0, 1, 0], [0, 0, 1]])


def test_explicit_categorical_is_unchanged_by_the_metadata_and_never_warns():
    plain = DOM.with_ordinal(None)
    for categorical in ([], ["job"], ["job", "hours"], ["age", "job", "hours"]):
        (new, old), warned = caught(lambda c: (build_encoding(DOM, "y", categorical=c),
                                               build_encoding(plain, "y", categorical=c)), categorical)
        assert not warned and new.feature_names == old.feature_names
        for a, b in zip(new.features, old.features):
            assert a.kind == b.kind and np.array_equal(a.matrix, b.matrix)
    assert build_encoding(DOM, "y", categorical=["job"]).features[2].kind == "numeric"  # all 6 levels, as before


def test_without_order_metadata_every_feature_is_one_hot_with_one_warning():
    plain = DOM.with_ordinal(None)
    enc, warned = caught(build_encoding, plain, "y")
    assert len(warned) == 1 and all(f.kind == "onehot" for f in enc.features)
    assert enc.feature_names == build_encoding(plain, "y", categorical=["age", "job", "hours"]).feature_names
    text = str(warned[0].message)
    assert "ordinal=[" in text and '"ordinal": [' in text and "categorical=[" in text
    declared, warned = caught(build_encoding, plain.with_ordinal([]), "y")  # declared: nothing is ordered
    assert not warned and declared.feature_names == enc.feature_names


def test_a_fit_warns_once_and_only_without_knowledge():
    data = codes(2000, DOM, 1)
    model, warned = caught(DDSSPLinearRegression("y").fit, Dataset(data.to_df(), DOM.with_ordinal(None)))
    assert len(warned) == 1 and len(model.coef_) == 4 + 2 + 5
    for cls in (DDSSPLinearRegression, AdaSSP):
        kwargs = {"epsilon": 1.0, "delta": 1e-6, "insecure_seed": 0} if cls is AdaSSP else {}
        model, warned = caught(cls(target="y", **kwargs).fit, data)
        assert not warned and list(model.encoded_feature_names_) == ["age", "job=1", "job=2", "hours", "hours=4", "hours=5"]


def test_ddssp_with_mixed_blocks_is_least_squares_on_the_encoded_rows():
    data = codes(3000, DOM, 2)
    model = DDSSPLinearRegression("y").fit(data)  # exact marginals: DD-SSP is OLS
    X, y = model.encoding_.encode(data.to_df())
    np.testing.assert_allclose(model.coef_, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-8, atol=1e-10)


# --- where the metadata comes from and how it travels ---------------------------------------------


def test_a_spec_declares_its_numeric_columns_ordered():
    disc = Discretizer(SPEC)
    assert disc.domain.ordinal == (("age", 5), ("hours", 5))  # age: 5 bins, then <missing>
    enc = build_encoding(disc.domain, "income", "logistic")
    assert [f.kind for f in enc.features] == ["mixed", "numeric", "onehot"]
    assert enc.features[0].labelled(disc.labels("age"))[1] == "age=<missing>"


def test_release_save_and_load_keep_the_metadata(tmp_path):
    data = codes(2000, DOM, 3)
    release = AIM(1.0, insecure_seed=0, **AIM_OPTIONS).run(data)
    assert release.domain.ordinal == DOM.ordinal
    release.save(tmp_path / "r.npz")
    loaded = Release.load(tmp_path / "r.npz")
    assert loaded.domain.ordinal == DOM.ordinal
    model, warned = caught(DDSSPLinearRegression("y").fit, loaded)
    assert not warned and model.encoding_.features[2].kind == "mixed"
    # a release without metadata (as every older file) is written and read without the key
    plain = AIM(1.0, insecure_seed=0, **AIM_OPTIONS).run(Dataset(data.to_df(), DOM.with_ordinal(None)))
    plain.save(tmp_path / "old.npz")
    with zipfile.ZipFile(tmp_path / "old.npz") as zf:
        header = json.loads(np.load(zf.open("header.npy")).item())
    assert "ordinal" not in header and Release.load(tmp_path / "old.npz").domain.ordinal is None
    _, warned = caught(DDSSPLinearRegression("y").fit, Release.load(tmp_path / "old.npz"))
    assert len(warned) == 1


def test_a_crafted_release_with_bad_metadata_is_refused(tmp_path):
    release = AIM(1.0, insecure_seed=0, **AIM_OPTIONS).run(codes(500, DOM, 4))
    release.save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays["header"].item())
    header["ordinal"] = {"hours": 9}
    arrays["header"] = np.array(json.dumps(header))
    np.savez_compressed(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ReleaseFormatError, match=r"bad\.npz: release domain: .*ordinal attribute 'hours'"):
        Release.load(tmp_path / "bad.npz")


@pytest.fixture(scope="module")
def spec_releases(tmp_path_factory) -> dict[str, Release]:
    """coded (AIM on the spec's codes), raw_spec (synthesize with the spec), raw_inferred (spec under DP),
    each saved and loaded back."""
    folder = tmp_path_factory.mktemp("encoding-kinds")
    df = raw_rows(3000, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = {
            "coded": AIM(1.0, insecure_seed=1, **AIM_OPTIONS).run(Discretizer(SPEC).transform(df)),
            "raw_spec": synthesize(df, 1.0, spec=SPEC, insecure_seed=2, **AIM_OPTIONS)[0],
            "raw_inferred": synthesize(df, 1.0, insecure_seed=3, **AIM_OPTIONS)[0],
        }
    for kind, release in made.items():
        release.save(folder / f"{kind}.npz")
    return {kind: Release.load(folder / f"{kind}.npz") for kind in made}


@pytest.mark.parametrize("kind", ["coded", "raw_spec", "raw_inferred"])
def test_spec_based_releases_encode_numeric_columns_as_ordinal(spec_releases, kind):
    release = spec_releases[kind]
    for cls, target in ((DDSSPLinearRegression, "hours"), (DDSSPLogisticRegression, "income")):
        model, warned = caught(cls(target).fit, release)
        assert not warned
        kinds = {f.attr: f.kind for f in model.encoding_.features}
        assert kinds["job"] == "onehot"
        for attr in ("age", "hours"):
            if attr != target:  # numeric: scaled over its bins (with indicators for <missing> where it has one)
                assert kinds[attr] in ("numeric", "mixed") and attr in model.encoded_feature_names_
        if kind != "coded":
            assert "age=<missing>" in model.encoded_feature_names_  # named by label


def test_an_older_release_with_a_spec_reads_the_order_from_it(spec_releases):
    release = spec_releases["raw_spec"]
    old = Release(release.domain.with_ordinal(None), release.measurements, release.model, release.ledger,
                  release.rounds, release.config, release.private, release.spec)  # as read from an older file
    assert old.domain.ordinal == Discretizer(release.spec).domain.ordinal


def test_cli_fit_follows_the_default_and_predict_reads_older_coefficient_files(spec_releases, tmp_path, capsys):
    spec_releases["coded"].save(tmp_path / "coded.npz")
    assert main(["fit", "--release", str(tmp_path / "coded.npz"), "--target", "income", "--model", "logistic",
                 "--json", str(tmp_path / "c.json")]) == 0  # fmt: skip
    captured = capsys.readouterr()
    saved = json.loads((tmp_path / "c.json").read_text())
    assert saved["categorical"] is None and "age" in saved["features"] and "EncodingDefault" not in captured.err
    assert "categorical=None" not in captured.err
    # a coefficient file written before the metadata was read (every feature one-hot) still predicts
    everything = ["age", "hours", "job"]
    old = DDSSPLogisticRegression("income", categorical=everything).fit(spec_releases["coded"])
    settings = {**saved, "features": list(old.encoded_feature_names_), "coef": list(old.coef_)}
    np.testing.assert_allclose(refit(spec_releases["coded"], settings, "c.json").coef_, old.coef_, rtol=1e-12)


def test_cli_fit_warns_on_a_release_without_order_metadata(tmp_path, capsys):
    release = AIM(1.0, insecure_seed=0, **AIM_OPTIONS).run(Dataset(codes(1000, DOM, 5).to_df(), DOM.with_ordinal(None)))
    release.save(tmp_path / "plain.npz")
    assert main(["fit", "--release", str(tmp_path / "plain.npz"), "--target", "y"]) == 0
    err = capsys.readouterr().err
    assert err.count("every feature is one-hot encoded") == 1 and "--categorical" in err


# --- the shipped and development data sets ------------------------------------------------------


def test_the_shipped_adult_declares_the_attributes_the_paper_keeps_numeric():
    domain = load_adult("test").domain
    assert {a for a, _ in domain.ordinal} == set(domain.attrs) - set(CATEGORICAL_PRESETS["adult"])
    assert all(k == domain[a] for a, k in domain.ordinal)  # no extra levels
    enc = build_encoding(domain, "income>50K", "logistic")
    preset = build_encoding(domain, "income>50K", "logistic", categorical=CATEGORICAL_PRESETS["adult"])
    assert enc.feature_names == preset.feature_names and enc.n_features == 100


def test_the_development_sets_declare_their_ordinal_attributes():
    from benchmarks.data import ORDINAL, data_dir, load_bundled

    if data_dir() is None:
        pytest.skip("development data absent")
    nominal = {"acs-employment": {"ESP", "MIG"}}  # nominal ACS codes the paper's preset leaves numeric
    for name, ordinal in ORDINAL.items():
        domain = load_bundled(name, "test").domain
        assert {a for a, _ in domain.ordinal} == set(ordinal)
        assert set(ordinal) == set(domain.attrs) - set(CATEGORICAL_PRESETS[name]) - nominal.get(name, set())


# --- hinge columns (EncodingOptions(knots=K)) ------------------------------------------------------


def test_hinge_columns_are_the_piecewise_linear_basis_at_public_knots():
    dom = Domain(("a", "b", "y"), (7, 3, 2), ordinal={"a": 5})  # a: 5 ordered levels + 2 extra
    enc = build_encoding(dom, "y", "logistic", options=EncodingOptions(knots=2))
    a = enc.features[0]
    assert a.names == ("a", "a>knot1", "a>knot2", "a=5", "a=6") and a.kind == "mixed"
    s = np.array([-1, -0.5, 0, 0.5, 1])
    expected = np.zeros((5, 7))
    expected[0, :5] = s
    for row, t in ((1, -1 / 3), (2, 1 / 3)):
        expected[row, :5] = np.maximum(0, s - t) / (1 - t)
    expected[3, 5] = expected[4, 6] = 1
    np.testing.assert_allclose(a.matrix, expected)
    assert a.max_sq_norm == pytest.approx(3.0)  # 1 + knots at the top level
    assert enc.features[1].kind == "onehot"  # nominal attributes are unchanged


@pytest.mark.parametrize("ordered", [2, 3, 4, 5, 8, 30])
@pytest.mark.parametrize("knots", [1, 2, 3, 5])
def test_a_hinge_block_has_full_column_rank_and_no_constant(ordered, knots):
    from ddssp.ordinal import ordinal_matrix, usable_knots

    matrix = ordinal_matrix(ordered, ordered, knots, raw=False)
    assert matrix.shape[0] == 1 + usable_knots(ordered, knots) <= ordered - 1 + (ordered == 1)
    assert np.linalg.matrix_rank(matrix) == matrix.shape[0]
    with_constant = np.vstack([matrix, np.ones(ordered)])  # the constant is not in the rows' span
    assert np.linalg.matrix_rank(with_constant) == matrix.shape[0] + 1


def test_ddssp_with_hinges_is_least_squares_and_knots_are_checked():
    data = codes(3000, DOM, 6)
    model = DDSSPLinearRegression("y", encoding=EncodingOptions(knots=2)).fit(data)
    assert "age>knot2" in model.encoded_feature_names_ and "hours>knot1" in model.encoded_feature_names_
    X, y = model.encoding_.encode(data.to_df())
    np.testing.assert_allclose(model.coef_, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-8, atol=1e-10)
    explicit = build_encoding(DOM, "y", categorical=["job"], options=EncodingOptions(knots=1))
    assert explicit.feature_names == ("age", "age>knot1", "job=1", "job=2", "hours", "hours>knot1")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="knots must be an integer >= 0"):
            build_encoding(DOM, "y", options=EncodingOptions(knots=bad))
