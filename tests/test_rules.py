"""Public rules (`marginals.rules`) as structural zeros of the model (`pgm.estimate(zeros=...)`):
the forbidden cells of each rule, clear errors naming the rule, and against brute force on a tiny
domain: the fitted model is the maximum-entropy answer on the allowed cells (iterative
proportional fitting of the full joint), puts exactly 0 on forbidden cells (also with noisy
measurements that put mass there, warm starts and momentum), and no sampled row breaks a rule."""

from __future__ import annotations

import numpy as np
import pytest

from marginals.domain import Domain
from marginals.measurement import Measurement
from marginals.rules import check_rules, compile_rules, violations
from pgm import brute_force_joint, estimate

DOM = Domain(("a", "b", "c", "d"), (3, 4, 2, 3))
RULES = [
    {"if": {"a": [0]}, "then": {"b": [0, 1]}},
    {"forbid": {"c": [1], "d": [2]}, "name": "no c=1 with d=2"},
    {"function": {"from": "b", "to": "d", "map": {"3": 0}}},
]
CLIQUES = [("a",), ("b",), ("c",), ("d",), ("a", "c"), ("b", "c")]


def _joint_allowed(zeros) -> np.ndarray:
    allowed = np.ones(DOM.shape, bool)
    for z in zeros:
        allowed &= z.allowed.reshape([DOM[a] if a in z.attrs else 1 for a in DOM.attrs])
    return allowed


def _marg(joint: np.ndarray, clique) -> np.ndarray:
    return joint.sum(axis=tuple(i for i, a in enumerate(DOM.attrs) if a not in clique))


def _model_joint(model) -> np.ndarray:
    return brute_force_joint(DOM, model.cliques, [f.values for f in model.potentials.values()], model.total)


@pytest.fixture(scope="module")
def data():
    zeros = compile_rules(DOM, RULES)
    allowed = _joint_allowed(zeros)
    rng = np.random.default_rng(0)
    p = rng.random(DOM.shape) * allowed
    joint = rng.multinomial(5000, (p / p.sum()).ravel()).reshape(DOM.shape).astype(float)
    return zeros, allowed, joint


def test_forbidden_cells_of_each_kind():
    z_if, z_forbid, z_fn = compile_rules(DOM, RULES)
    assert z_if.attrs == ("a", "b") and (~z_if.allowed).sum() == 2 and not z_if.allowed[0, 2:].any()
    assert z_forbid.attrs == ("c", "d") and np.argwhere(~z_forbid.allowed).tolist() == [[1, 2]]
    assert z_forbid.rule == "no c=1 with d=2"
    assert z_fn.attrs == ("b", "d") and np.argwhere(~z_fn.allowed).tolist() == [[3, 1], [3, 2]]
    # the map's direction follows the rule, whatever the domain order
    (z_back,) = compile_rules(DOM, [{"function": {"from": "d", "to": "a", "map": [[0, 2]]}}])
    assert z_back.attrs == ("a", "d") and np.argwhere(~z_back.allowed).tolist() == [[0, 0], [1, 0]]


@pytest.mark.parametrize("rule, message", [
    ({"forbid": {"zz": [0]}}, "rule 1 .*unknown attribute 'zz'"),
    ({"if": {"a": [5]}, "then": {"b": [0]}}, "rule 1 .*code 5 of 'a' is outside its 3 levels"),
    ({"forbid": {"a": [0, 1, 2]}}, "forbids every combination"),
    ({"if": {"a": [0]}, "then": {"a": [1]}}, "both 'if' and 'then'"),
    ({"if": {"a": [0]}}, "a rule is one of"),
    ({"function": {"from": "a", "to": "b"}}, "needs the public map"),
    ({"function": {"from": "a", "to": "b", "map": [[0, 1], [0, 2]]}}, "two codes"),
    ({"forbid": {"a": []}}, "non-empty list"),
])
def test_bad_rules_name_the_rule(rule, message):
    with pytest.raises(ValueError, match=message):
        compile_rules(DOM, [rule])


def test_rules_normalise_to_json():
    (rule,) = check_rules([{"function": {"from": "b", "to": "d", "map": {"3": 0, "1": 2}}}])
    assert rule == {"function": {"from": "b", "to": "d", "map": [[1, 2], [3, 0]]}}
    assert check_rules([rule]) == (rule,)
    with pytest.raises(TypeError, match="constraints must be a list"):
        check_rules({"forbid": {"a": [0]}})


def test_model_is_the_maximum_entropy_answer_on_the_allowed_cells(data):
    """Exact marginals of rule-abiding data: the fit equals iterative proportional fitting of the
    full joint started uniform on the allowed cells (the maximum-entropy table with those
    marginals and those zeros), and every forbidden cell is exactly 0."""
    zeros, allowed, joint = data
    measurements = [Measurement(c, _marg(joint, c), 1.0) for c in CLIQUES]
    model = estimate(DOM, measurements, iters=3000, zeros=zeros, total=5000)
    fitted = _model_joint(model)
    reference = allowed * 5000.0 / allowed.sum()
    for _ in range(3000):
        for c in CLIQUES:
            m = _marg(reference, c)
            ratio = np.divide(_marg(joint, c), m, out=np.zeros_like(m), where=m > 0)
            reference = reference * ratio.reshape([DOM[a] if a in c else 1 for a in DOM.attrs])
    assert np.abs(fitted - reference).max() < 1e-6
    assert np.all(fitted[~allowed] == 0.0)
    for z in zeros:
        assert np.all(model.project(z.attrs).values[~z.allowed] == 0.0)


def test_noisy_measurements_warm_start_and_sampling_keep_the_zeros(data):
    """Noise that puts mass on forbidden cells, momentum and a warm start (-inf potentials carried
    over): no NaN, forbidden cells stay exactly 0, and 100k sampled rows break no rule (without the
    rules thousands do)."""
    zeros, allowed, joint = data
    rng = np.random.default_rng(1)
    measurements = [Measurement(c, _marg(joint, c) + rng.normal(0, 30, _marg(joint, c).shape), 30.0)
                    for c in CLIQUES + [("a", "b"), ("c", "d")]]
    first = estimate(DOM, measurements[:4], iters=50, zeros=zeros)
    model = estimate(DOM, measurements, iters=200, zeros=zeros, warm_start=first)
    assert all(np.isfinite(f.values).any() and not np.isnan(f.values).any() for f in model.potentials.values())
    assert np.all(_model_joint(model)[~allowed] == 0.0)
    assert np.isfinite(model.info["loss"])
    assert violations(model.synthetic_data(100_000, rng=2), zeros).sum() == 0
    free = estimate(DOM, measurements, iters=200)
    assert violations(free.synthetic_data(100_000, rng=2), zeros).sum() > 1000
    resumed = estimate(DOM, measurements, iters=20, warm_start=model)  # the -inf potentials carry the zeros
    assert np.all(_model_joint(resumed)[~allowed] == 0.0)


def test_zero_table_shape_is_checked(data):
    zeros, _, joint = data
    bad = type(zeros[0])(("a", "b"), np.ones((4, 3), bool), "bad")
    with pytest.raises(ValueError, match="structural zero over"):
        estimate(DOM, [Measurement(("a",), _marg(joint, ("a",)), 1.0)], iters=1, zeros=[bad])


def test_sampling_never_gives_the_rounding_slack_to_a_zero_category():
    """Ten categories of 0.1 sum to just under 1 in floats: the points past that sum went to the
    last category, here a structural zero; they now go to the last category with mass."""
    from pgm.sampling import _cdf, group_sample

    cond = np.array([[0.1] * 10 + [0.0], [0.0] * 10 + [1.0]])
    assert np.cumsum(cond[0])[-1] < 1.0  # the slack this test is about
    assert _cdf(cond)[0, -2] == 1.0 and _cdf(cond)[1, -1] == 2.0
    groups = np.zeros(200_000, dtype=np.int64)
    drawn = group_sample(groups, cond, np.random.default_rng(3))
    assert drawn.max() == 9 and np.bincount(drawn).min() >= 19_999


def test_neighbours_with_a_row_that_breaks_a_rule_differ_only_in_its_counts():
    """D and D plus one row that breaks a public rule (a = 0 with b = 3), same seed: AIM with the rules
    charges the same prices, warns the same (nothing says the data break a rule), every 1-way noisy
    count moves by exactly the row's cell, and both models give the forbidden cells probability 0."""
    import warnings

    import pandas as pd

    from aim import AIM
    from marginals.dataset import Dataset

    rng = np.random.default_rng(3)
    rows = pd.DataFrame({a: rng.integers(0, n, 400) for a, n in zip(DOM.attrs, DOM.shape)})
    keep = ~violations({a: rows[a].to_numpy() for a in DOM.attrs}, compile_rules(DOM, RULES))
    data = Dataset(rows[keep].reset_index(drop=True), DOM)
    bad = pd.DataFrame([{"a": 0, "b": 3, "c": 0, "d": 0}])
    assert violations({a: bad[a].to_numpy() for a in DOM.attrs}, compile_rules(DOM, RULES)).all()
    plus = Dataset(pd.concat([data.to_df(), bad], ignore_index=True), DOM)
    runs, caught = [], []
    for d in (data, plus):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            runs.append(AIM(1.0, 1e-6, constraints=RULES, insecure_seed=5, rounds=8, max_iters=5, final_iters=10).run(d))
        caught.append(sorted(str(w.message) for w in seen))
    assert caught[0] == caught[1]
    for attr, (m0, m1) in zip(DOM.attrs, zip(*(r.measurements[:len(DOM)] for r in runs))):
        assert m0.clique == m1.clique == (attr,) and m0.sigma == m1.sigma
        expected = np.zeros(DOM[attr])
        expected[int(bad[attr][0])] = 1.0
        np.testing.assert_array_equal(m1.noisy_counts - m0.noisy_counts, expected)
    first = [[(c.label, c.rho) for c in r.ledger.charges[:len(DOM)]] for r in runs]
    assert first[0] == first[1]
    for r in runs:
        assert r.model.project(("a", "b")).values[0, 3] == 0.0
