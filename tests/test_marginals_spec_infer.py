"""DP spec inference: the category threshold against the exact discrete Gaussian tail, rare values
never released, bounds that no single row sets, every inferred field paid for in the ledger, and
declared columns free."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from marginals import Accountant, InsecureSeedWarning
from marginals.dataset import DataError
from marginals.spec.columns import SpecError
from marginals.privacy import BudgetExceeded
from marginals.spec.infer import (NUMERIC_WEIGHT, PROFILE_SHARE, SpecInferenceWarning, THRESHOLD_MECHANISM,
                                  category_threshold, infer_spec)

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning")


def log_tail(variance: float, m: int) -> float:
    """log P(Z >= m) for the discrete Gaussian with variance parameter ``variance``, by direct summation."""
    k = int(math.ceil(60 * math.sqrt(variance))) + abs(m) + 10
    y = np.arange(-k, k + 1, dtype=np.float64)
    logp = -(y**2) / (2 * variance)
    return float(logsumexp(logp[y >= m]) - logsumexp(logp))


@pytest.mark.parametrize("variance", [1.0, 2.5, 100.0, 12345.6])
@pytest.mark.parametrize("delta", [0.3, 1e-3, 1e-9, 1e-12])
def test_a_single_row_reaches_the_threshold_with_probability_at_most_delta(variance, delta):
    tau = category_threshold(variance, delta)
    assert log_tail(variance, tau - 1) <= math.log(delta)  # a count of 1 plus noise reaches tau
    if variance >= 100 and delta <= 1e-3:  # and the threshold is not wildly conservative
        assert log_tail(variance, int(0.8 * (tau - 1))) > math.log(delta)


def test_threshold_rejects_a_bad_delta():
    for bad in (0.0, 1.0, -1e-9):
        with pytest.raises(ValueError, match="delta must lie in"):
            category_threshold(4.0, bad)


def _frame(n_common: int = 4000) -> pd.DataFrame:
    jobs = ["clerk"] * n_common + ["nurse"] * (n_common // 2) + ["astronaut"]  # one unique value
    return pd.DataFrame({"job": jobs})


def test_a_unique_value_is_never_released_while_frequent_ones_always_are():
    df = _frame()
    for seed in range(60):
        acct = Accountant(1.0)
        spec = infer_spec(df, acct, rho=0.5, delta=1e-6, schema={"columns": {"job": "categorical"}}, rng=seed).to_spec()
        assert spec["columns"]["job"]["categories"] == ["clerk", "nurse"]
        (charge,) = acct.charges  # the <other> level costs nothing: one charge, the histogram's
        assert spec["columns"]["job"]["unseen"] == "other" and charge.rho == pytest.approx(0.5, rel=1e-6)
        assert charge.mechanism == THRESHOLD_MECHANISM and charge.params["delta"] == 1e-6


def test_the_release_rate_of_a_unique_value_stays_below_delta():
    """The mechanism as run (not the formula): with delta = 0.2 the singleton may appear, but in at
    most a delta share of runs; a threshold of 1 would release it about half the time."""
    df = _frame(200)
    runs, delta, released = 200, 0.2, 0
    source_seeds = np.random.default_rng(5).integers(0, 2**32, runs)
    for seed in source_seeds:
        spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=delta, schema={"columns": {"job": "categorical"}},
                          rng=int(seed)).to_spec()
        released += "astronaut" in spec["columns"]["job"]["categories"]
    assert released / runs < delta


def test_no_single_row_sets_the_numeric_bounds():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(20, 61, 20_000)})
    df.loc[0, "age"] = 10**7  # an outlier: un-noised min/max would put it in the spec
    df.loc[1, "age"] = -(10**7)
    for seed in range(20):
        spec = infer_spec(df, Accountant(1.0), rho=0.05, schema={"columns": {"age": "numeric"}}, rng=seed).to_spec()
        edges = spec["columns"]["age"]["edges"]
        assert 15 <= edges[0] <= 20 and 60 <= edges[-1] <= 70, edges


def test_numeric_edges_follow_the_quantiles_and_integrality():
    rng = np.random.default_rng(1)
    ints = rng.integers(0, 1001, 50_000)
    floats = rng.lognormal(3.0, 1.0, 50_000)
    df = pd.DataFrame({"n": ints, "x": floats})
    spec = infer_spec(df, Accountant(10.0), rho=5.0, schema={"columns": {"n": "numeric", "x": "numeric"}}, bins=5,
                      rng=3).to_spec()
    n, x = spec["columns"]["n"], spec["columns"]["x"]
    assert n["integer"] is True and x["integer"] is False
    for col, values in ((n, ints), (x, floats)):
        inner = np.array(col["edges"][1:-1], dtype=float)
        oracle = np.quantile(values, [0.2, 0.4, 0.6, 0.8])
        assert len(inner) == 4 and np.all(np.abs(inner - oracle) <= 0.12 * oracle + 2), (inner, oracle)
    assert n["edges"][0] <= 10 and n["edges"][-1] >= 950  # range within the grid's 10% resolution


def test_zeros_get_their_own_bin():
    rng = np.random.default_rng(2)
    gains = np.where(rng.random(30_000) < 0.8, 0, rng.integers(1000, 20_000, 30_000))
    spec = infer_spec(pd.DataFrame({"g": gains}), Accountant(10.0), rho=5.0, schema={"columns": {"g": "numeric"}},
                      rng=4).to_spec()
    edges = spec["columns"]["g"]["edges"]
    assert edges[:2] == [0, 1] and edges[-1] >= 18_000


def test_types_missing_levels_and_markers_are_inferred():
    rng = np.random.default_rng(3)
    n = 20_000
    df = pd.DataFrame({
        "age": rng.integers(18, 80, n).astype(object),
        "job": rng.choice(["a", "b", "c", "?"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "score": rng.normal(50, 10, n),
        "sex": rng.choice(["F", "M"], n),
    })
    df.loc[:99, "age"] = "unknown"  # text in a numeric column: missing
    acct = Accountant(10.0)
    spec = infer_spec(df, acct, rho=2.0, delta=1e-9, rng=5).to_spec()
    cols = spec["columns"]
    assert cols["age"]["type"] == "numeric" and cols["age"]["non_numeric"] == "missing" and cols["age"]["missing"] == "level"
    assert cols["job"] == {**cols["job"], "type": "categorical", "categories": ["a", "b", "c"], "missing": "level"}
    assert cols["score"]["type"] == "numeric" and cols["score"]["integer"] is False and cols["score"]["missing"] == "level"
    assert cols["sex"]["categories"] == ["F", "M"] and cols["sex"]["missing"] == "level"  # always: nothing measured
    labels = [c.label for c in acct.charges]
    assert labels == ["spec age: type profile", "spec job: type profile", "spec score: type profile",
                      "spec sex: type profile", "spec age: level 1", "spec age: level 2", "spec age: level 3",
                      "spec job: categories", "spec score: level 1", "spec score: level 2", "spec sex: categories"]
    profiles, age = sum(c.rho for c in acct.charges[:4]), sum(c.rho for c in acct.charges[4:7])
    job = acct.charges[7].rho
    assert profiles == pytest.approx(2.0 * PROFILE_SHARE, rel=1e-6) and age == pytest.approx(NUMERIC_WEIGHT * job, rel=1e-6)
    assert cols["sex"]["unseen"] == "other" and cols["job"]["unseen"] == "other"  # always, nothing measured
    assert acct.spent <= 2.0 * (1 + 1e-12)


def test_declared_columns_cost_nothing_and_stay_as_declared():
    df = pd.DataFrame({"job": ["a", "b", "zz-unique"] * 100, "age": list(range(300))})
    schema = {"columns": {"job": {"type": "categorical", "categories": ["a", "b"]},
                          "age": {"type": "numeric", "lo": 0, "hi": 300, "bins": 3}}}
    acct = Accountant(1.0)
    spec = infer_spec(df, acct, rho=0.5, delta=1e-9, schema=schema, rng=6).to_spec()
    assert acct.charges == () and spec["columns"]["job"]["categories"] == ["a", "b"]
    schema["columns"]["age"] = "numeric"  # now only age is inferred: its three levels, named for it
    spec = infer_spec(df, acct, rho=0.5, delta=1e-9, schema=schema, rng=6).to_spec()
    assert [c.label for c in acct.charges] == [f"spec age: level {k}" for k in (1, 2, 3)]
    assert spec["columns"]["job"] == {"type": "categorical", "categories": ["a", "b"]}


def test_budget_and_delta_are_checked_before_any_charge():
    df = _frame(100)
    acct = Accountant(0.1)
    with pytest.raises(BudgetExceeded, match="needs rho=0.2"):
        infer_spec(df, acct, rho=0.2, delta=1e-9, rng=1)
    with pytest.raises(ValueError, match=r"columns \['job'\] need categories from a thresholded histogram"):
        infer_spec(df, acct, rho=0.05, rng=1)
    assert acct.charges == ()
    with pytest.raises(TypeError, match="marginals.Accountant"):
        infer_spec(df, None, rho=0.05, delta=1e-9)
    with pytest.raises(ValueError, match="missing from the table"):
        infer_spec(df, acct, rho=0.05, delta=1e-9, schema=["job", "age"])


def test_a_column_with_nothing_frequent_is_left_out_with_a_warning():
    df = pd.DataFrame({"id": [f"person-{i}" for i in range(500)], "sex": ["F", "M"] * 250})
    with pytest.warns(SpecInferenceWarning, match="column 'id': no value passed the noise threshold"):
        spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=1e-9, schema={"columns": {"id": "categorical",
                                                                                     "sex": "categorical"}}, rng=7)
    assert spec.domain.attrs == ("sex",)


def test_secure_noise_is_the_default():
    df = _frame(2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureSeedWarning)  # no seed: nothing insecure is constructed
        spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=1e-9, schema={"columns": {"job": "categorical"}})
    assert spec.to_spec()["columns"]["job"]["categories"] == ["clerk", "nurse"]


def test_blank_and_reserved_values_never_become_categories():
    df = pd.DataFrame({"c": ["a"] * 3000 + ["  "] * 3000 + ["<other>"] * 3000})
    spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=1e-9, schema={"columns": {"c": "categorical"}}, rng=8)
    assert spec.to_spec()["columns"]["c"]["categories"] == ["a"]
    # blank text reads as missing (its own level here, frequent enough), the reserved label as <other>
    assert spec.labels("c") == ["a", "<other>", "<missing>"]
    assert spec.transform_df(df)["c"].tolist() == [0] * 3000 + [2] * 3000 + [1] * 3000


def test_every_inferred_categorical_column_gets_the_other_level_unless_the_schema_closes_it():
    rng = np.random.default_rng(9)
    rare = [f"rare-{i}" for i in range(3000)]  # 3,000 rows of values too rare to release
    df = pd.DataFrame({"binary": rng.choice(["no", "yes"], 9000),
                       "long_tail": np.concatenate([rng.choice(["x", "y"], 6000), rare])})
    schema = {"columns": {"binary": "categorical", "long_tail": "categorical"}}
    closed = {"columns": {"binary": {"type": "categorical", "unseen": "drop", "missing": "error"}, "long_tail": None}}
    for seed in range(5):
        spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=1e-9, schema=schema, rng=seed)
        cols = spec.to_spec()["columns"]
        assert cols["binary"]["unseen"] == "other" and spec.labels("binary") == ["no", "yes", "<other>", "<missing>"]
        assert cols["long_tail"]["unseen"] == "other" and cols["long_tail"]["categories"] == ["x", "y"]
        assert len(spec.transform_df(df)) == len(df) and spec.last_report["dropped"] == 0
        spec = infer_spec(df, Accountant(1.0), rho=0.5, delta=1e-9, schema=closed, rng=seed)
        assert spec.labels("binary") == ["no", "yes"]  # closed: binary (and the statement says so)
        assert [(x["column"], x["rule"], x["bound"]) for x in spec.to_spec()["excluded"]] == [("binary", "unseen", None)]


# --- issue 23: error rules before any budget, no private value in messages, keyed noise ---------

SECRET = "Jane Doe SSN 078-05-1120"


def _with_secret(n: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"job": rng.choice(["a", "b"], n).astype(object), "age": rng.integers(18, 80, n).astype(object),
                       "city": rng.choice(["x", "y"], n)})
    df.loc[1200, "job"] = SECRET
    df.loc[1201, "age"] = SECRET
    df.loc[1202, "city"] = None
    return df


@pytest.mark.parametrize("schema, rule", [
    ({"columns": {"job": {"type": "categorical", "categories": ["a", "b"], "unseen": "error"}, "city": None}},
     '"unseen": "error"'),
    ({"columns": {"age": {"type": "numeric", "non_numeric": "error"}, "city": None}}, '"non_numeric": "error"'),
    ({"columns": {"age": {"type": "numeric", "lo": 0, "hi": 99}, "city": None}}, '"non_numeric": "error"'),
    ({"columns": {"city": {"missing": "error"}, "job": None}}, '"missing": "error"'),
    ({"columns": {"city": {"type": "categorical", "categories": ["x", "y"]}, "job": None}, "missing": "error"},
     '"missing": "error"'),
])
def test_error_rules_fail_before_any_budget_is_spent_and_quote_no_value(schema, rule):
    acct = Accountant(1.0)
    with pytest.raises(DataError) as err:
        infer_spec(_with_secret(), acct, rho=0.5, delta=1e-6, schema=schema, rng=1)
    message = str(err.value)
    assert rule in message and "column '" in message
    assert "Jane" not in message and not any(str(row) in message for row in (1200, 1201, 1202))
    assert acct.spent == 0 and acct.charges == ()  # the accountant is untouched
    with pytest.raises(DataError, match="shown on request: 1 row"):  # the data holder's debug option
        infer_spec(_with_secret(), Accountant(1.0), rho=0.5, delta=1e-6, schema=schema, rng=1, show_private_values=True)


def test_unseen_error_on_inferred_categories_is_refused_up_front():
    acct = Accountant(1.0)
    schema = {"columns": {"job": {"type": "categorical", "unseen": "error"}}}
    with pytest.raises(SpecError, match=r"column 'job': \"unseen\": \"error\" needs declared categories"):
        infer_spec(_with_secret(), acct, rho=0.5, delta=1e-6, schema=schema, rng=1)
    assert acct.charges == ()


def test_keyed_noise_does_not_depend_on_the_other_keys():
    from fractions import Fraction

    from marginals.randomness import InsecureRandom, SecureRandom
    from marginals.spec.infer import keyed_noise
    variance = Fraction(25)
    a = keyed_noise(InsecureRandom(3, warn=False), variance, [b"ka", b"kb", b"m"])
    b = keyed_noise(InsecureRandom(3, warn=False), variance, [b"k0", b"ka", b"kaa", b"kb", b"m"])
    assert a.tolist() == b[[1, 3, 4]].tolist()
    source = InsecureRandom(3, warn=False)  # the source moves on by one word, whatever the keys
    keyed_noise(source, variance, [b"k%d" % i for i in range(50)])
    reference = InsecureRandom(3, warn=False)
    reference.uint64(1)
    assert source.uint64(4).tolist() == reference.uint64(4).tolist()
    draws = np.concatenate([keyed_noise(InsecureRandom(s, warn=False), variance, [b"ka"]) for s in range(2000)])
    secure = keyed_noise(SecureRandom(), variance, [b"k"] * 2000)
    for sample in (draws, secure):  # the same distribution either way: discrete Gaussian, variance ~25
        assert abs(sample.mean()) < 0.5 and 21 < sample.var() < 29
