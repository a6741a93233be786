"""`Release.synthetic_data(given=...)` on a seeded AIM release with a spec: readable evidence mapped
through the Discretizer (categories, aliases, lists, numeric ranges weighting the bins they cut,
single numbers), values kept inside the evidence, DataFrame imputation, errors; codes without a spec."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from aim import AIM
from aim.evidence import range_weights, readable_weights
from marginals.spec.discretize import Discretizer
from pgm.conditional import ZeroProbabilityError
from pgm.reference import brute_force_joint

SPEC = {"columns": {
    "age": {"type": "numeric", "edges": [0, 20, 30, 45, 65, 100], "integer": True},
    "income": {"type": "numeric", "lo": 0, "hi": 100, "bins": 4},
    "sex": {"type": "categorical", "categories": ["Female", "Male"], "aliases": {"F": "Female", "M": "Male"}},
    "job": {"type": "categorical", "categories": ["a", "b", "c"], "unseen": "other"},
}}


def raw_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    income = np.clip(age * 0.8 + rng.normal(0, 15, n), 0, 100)
    job = np.where(age > 40, rng.choice(["a", "b", "zz"], n), rng.choice(["b", "c"], n))
    return pd.DataFrame({"age": age, "income": income, "sex": rng.choice(["Female", "Male"], n), "job": job})


@pytest.fixture(scope="module")
def release():
    disc = Discretizer(SPEC)
    with pytest.warns(UserWarning):  # a seeded (test-only) noise source
        rel = AIM(1.0, 1e-9, insecure_seed=0, max_iters=10, final_iters=20).run(disc.transform(raw_table(3000, 0)))
    return rel.with_spec(disc)


def conditional_joint(release, weights: dict[str, np.ndarray]) -> np.ndarray:
    """The model's joint over codes times the evidence weights, normalised (brute force)."""
    model, domain = release.model, release.domain
    p = brute_force_joint(domain, model.cliques, [f.values for f in model.potentials.values()], 1.0)
    for attr, w in weights.items():
        p = p * w.reshape([domain[a] if a == attr else 1 for a in domain.attrs])
    return p / p.sum()


def test_ranges_weight_each_bin_by_its_share_inside():
    disc = Discretizer(SPEC)
    # integer bins [0,20) [20,30) [30,45) [45,65) [65,100]: the integers 25..50 are 5/10, 15/15 and 6/20 of theirs
    np.testing.assert_allclose(range_weights(disc.column("age"), 25, 50), [0, 0.5, 1, 6 / 20, 0])
    np.testing.assert_allclose(range_weights(disc.column("age"), 30, 40), [0, 0, 11 / 15, 0, 0])
    np.testing.assert_allclose(range_weights(disc.column("income"), 10, 30), [15 / 25, 5 / 25, 0, 0])
    np.testing.assert_allclose(readable_weights(disc, {"income": (None, 60)})[0]["income"], [1, 1, 10 / 25, 0])
    dens = Discretizer({"columns": {"h": {"type": "numeric", "edges": [0, 40, 80],
                                          "density": [[0, 10, 1], [10, 40, 3], [40, 80, 1]]}}})
    # inside [0, 40) the density puts 1 on [0, 10] and 3 on [10, 40]: [5, 20] holds 0.5 + 1 of those 4
    np.testing.assert_allclose(range_weights(dens.column("h"), 5, 20), [1.5 / 4, 0])


def test_values_in_a_cut_bin_follow_the_density_inside_the_range():
    from aim.evidence import apply_limits

    dens = Discretizer({"columns": {"h": {"type": "numeric", "edges": [0, 40, 80],
                                          "density": [[0, 10, 1], [10, 40, 3], [40, 80, 1]]}}})
    codes = pd.DataFrame({"h": np.zeros(30_000, dtype=np.uint8)})
    out = apply_limits(dens, pd.DataFrame({"h": np.zeros(30_000)}), codes, {"h": ("range", 5.0, 20.0)}, "uniform",
                       np.random.default_rng(0))
    h = out["h"].to_numpy()
    assert h.min() >= 5 and h.max() <= 20
    share = (h < 10).mean()  # [5, 10] holds 0.5 of the density's weight, [10, 20] holds 1
    assert abs(share - 1 / 3) < 4 * np.sqrt(1 / 3 * 2 / 3 / len(h))


def test_dict_evidence_in_readable_values(release):
    rows = release.synthetic_data(20_000, 1, given={"sex": "F", "age": (30, 40), "job": ["a", "<other>"]})
    assert set(rows["sex"]) == {"Female"} and set(rows["job"]) <= {"a", "<other>"}
    assert rows["age"].between(30, 40).all() and set(rows["age"]) == set(range(30, 41))
    # all in the bin [30, 45): the values are its integers inside the range, equally likely
    assert stats.chisquare(rows["age"].value_counts().reindex(range(30, 41)).to_numpy()).pvalue > 1e-3
    weights, _ = readable_weights(release.discretizer, {"sex": "F", "age": (30, 40), "job": ["a", "<other>"]})
    p = conditional_joint(release, weights)
    codes = release.discretizer.transform_df(rows)
    observed = np.bincount(np.ravel_multi_index(tuple(codes[a].to_numpy(np.int64) for a in release.domain.attrs),
                                                release.domain.shape), minlength=p.size)
    keep = p.ravel() > 0
    assert observed[~keep].sum() == 0
    assert stats.chisquare(observed[keep], p.ravel()[keep] * len(rows)).pvalue > 1e-3


def test_the_expected_count_is_the_default_n(release):
    weights, _ = readable_weights(release.discretizer, {"sex": "Male", "income": (25, 75)})
    masked = conditional_joint(release, {})
    for attr, w in weights.items():
        masked = masked * w.reshape([release.domain[a] if a == attr else 1 for a in release.domain.attrs])
    rows = release.synthetic_data(None, 2, given={"sex": "Male", "income": (25, 75)})
    assert len(rows) == round(release.total * masked.sum())
    assert rows["income"].between(25, 75).all()


def test_continuous_ranges_keep_values_inside(release):
    rows = release.synthetic_data(20_000, 5, given={"income": (10, 30)})
    income = rows["income"].to_numpy()
    assert income.min() >= 10 and income.max() <= 30
    low = income[income < 25]  # the bin [0, 25) cut to [10, 25): uniform there
    assert stats.kstest(low, stats.uniform(10, 15).cdf).pvalue > 1e-3
    high = income[income >= 25]
    assert stats.kstest(high, stats.uniform(25, 5).cdf).pvalue > 1e-3


def test_single_numbers_and_decodings(release):
    rows = release.synthetic_data(50, 3, given={"income": 12.5, "age": 33})
    assert (rows["income"] == 12.5).all() and (rows["age"] == 33).all()
    mid = release.synthetic_data(50, 3, given={"age": (25, 50)}, numeric="midpoint")
    assert set(mid["age"]) <= {27, 37, 47}  # midpoints of 25..29, 30..44, 45..50
    labels = release.synthetic_data(50, 3, given={"age": (25, 50)}, numeric="interval")
    assert set(labels["age"].astype(str)) <= {"[20, 30)", "[30, 45)", "[45, 65)"}


def test_dataframe_evidence_in_readable_values(release):
    given = pd.DataFrame({"sex": ["M", None, "Female"] * 4000, "age": [33.0, np.nan, 70.0] * 4000},
                         index=np.arange(12000) + 100)
    rows = release.synthetic_data(None, 4, given=given)
    assert rows.index.equals(given.index) and list(rows.columns) == list(release.domain.attrs)
    assert (rows["age"].to_numpy()[0::3] == 33).all() and (rows["age"].to_numpy()[2::3] == 70).all()
    assert (rows["sex"].to_numpy()[0::3] == "Male").all() and (rows["sex"].to_numpy()[2::3] == "Female").all()
    # the imputed job of the rows (sex Male, age 33: the bin [30, 45)) follows the model's conditional
    weights, _ = readable_weights(release.discretizer, {"sex": "Male", "age": 33})
    p = conditional_joint(release, weights).sum(axis=(0, 1, 2))
    job = release.discretizer.transform_df(rows.iloc[0::3])["job"].to_numpy(np.int64)
    assert stats.chisquare(np.bincount(job, minlength=4), p * 4000).pvalue > 1e-3
    assert len(release.synthetic_codes(None, 4, given=pd.DataFrame({"age": [1, np.nan]}))) == 2


def test_synthetic_rows_with_blanks_come_back_completed(release):
    rows = release.synthetic_data(300, 8)
    given = rows.copy()
    given.loc[::3, "job"] = np.nan
    given.loc[1::3, "age"] = pd.NA
    filled = release.synthetic_data(None, 9, given=given)
    assert filled.notna().all().all() and list(filled.dtypes) == list(rows.dtypes)
    for col in rows.columns:
        known = given[col].notna().to_numpy()
        np.testing.assert_array_equal(filled[col].to_numpy()[known], rows[col].to_numpy()[known])


def test_codes_without_a_spec(release):
    coded = type(release)(domain=release.domain, measurements=release.measurements, model=release.model,
                          ledger=release.ledger, rounds=release.rounds, config=release.config, private=False)
    rows = coded.synthetic_data(100, 5, given={"age": [1, 2], "sex": 0})
    assert set(rows["age"]) <= {1, 2} and set(rows["sex"]) == {0}
    pd.testing.assert_frame_equal(rows, release.synthetic_codes(100, 5, given={"age": [1, 2], "sex": 0}))


def test_without_given_nothing_changes(release):
    codes = release.model.synthetic_data(300, np.random.default_rng(6))
    pd.testing.assert_frame_equal(release.synthetic_codes(300, 6), codes)


@pytest.mark.parametrize("given, message", [
    ({"height": 1}, "unknown column 'height'"),
    ({"sex": "X"}, "'X' is not a level of 'sex'"),
    ({"sex": []}, "empty list"),
    ({"age": [30, 40]}, "not a list"),
    ({"age": (40, 30)}, "empty"),
    ({"age": ("x", 3)}, "a range is a tuple"),
    ({"age": 30.5}, "not an integer"),
    ({"income": 200}, "not a number in the column's range"),
    ({"age": None}, "no missing level"),
])
def test_bad_readable_evidence_is_refused(release, given, message):
    with pytest.raises(ValueError, match=message):
        release.synthetic_data(5, 0, given=given)


def test_impossible_readable_evidence_is_an_error(release):
    with pytest.raises(ZeroProbabilityError, match="'age'.*probability zero"):
        release.synthetic_data(5, 0, given={"age": (44.2, 44.8)})  # no integer in the range
    with pytest.raises(ValueError, match="not categories of 'job'"):
        release.synthetic_data(None, 0, given=pd.DataFrame({"job": ["a", "nope"]}))
    with pytest.raises(ValueError, match="not numbers"):
        release.synthetic_data(None, 0, given=pd.DataFrame({"age": ["x"]}))
    with pytest.raises(ValueError, match="unknown column"):
        release.synthetic_data(None, 0, given=pd.DataFrame({"height": [1]}))


def test_conditional_rows_are_deterministic_given_the_seed(release):
    given = {"sex": "Male", "income": (20, 70)}
    pd.testing.assert_frame_equal(release.synthetic_data(400, 11, given=given),
                                  release.synthetic_data(400, np.random.default_rng(11), given=given))
    frame = pd.DataFrame({"age": [33.0, np.nan] * 100, "job": ["a", None] * 100})
    pd.testing.assert_frame_equal(release.synthetic_data(None, 12, given=frame),
                                  release.synthetic_data(None, 12, given=frame))
