"""`pgm.conditional` against brute force on a small model whose joint is enumerated: the conditioned
model's exact marginals equal the brute-force conditional joint, its sampled rows follow it, and
per-row evidence (a DataFrame) is imputed from each row's own conditional, given cells kept."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from marginals.domain import Domain
from pgm import Model
from pgm.conditional import ZeroProbabilityError, code_weights, condition, impute, pinned_order
from pgm.reference import brute_force_joint

DOM = Domain(tuple("abcde"), (3, 2, 4, 3, 2))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("d", "e"), ("a", "c", "e")]


def joint(model: Model) -> np.ndarray:
    """The model's distribution over the whole domain, by brute force."""
    p = brute_force_joint(model.domain, model.cliques, [f.values for f in model.potentials.values()], 1.0)
    return p / p.sum()


def mask_of(weights: dict[str, np.ndarray]) -> np.ndarray:
    """The evidence as one weight per cell of the whole domain."""
    mask = np.ones(DOM.shape)
    for attr, w in weights.items():
        shape = [DOM[a] if a == attr else 1 for a in DOM.attrs]
        mask = mask * w.reshape(shape)
    return mask


def counts_over(df: pd.DataFrame, attrs) -> np.ndarray:
    shape = tuple(DOM[a] for a in attrs)
    flat = np.ravel_multi_index(tuple(df[a].to_numpy(np.int64) for a in attrs), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)


def chi2_pvalue(observed: np.ndarray, expected_p: np.ndarray) -> float:
    keep = expected_p.ravel() > 0
    assert observed.ravel()[~keep].sum() == 0  # nothing sampled where the conditional is zero
    exp = expected_p.ravel()[keep] * observed.sum()
    return stats.chisquare(observed.ravel()[keep], exp).pvalue


@pytest.fixture(scope="module")
def model(random_model):
    return random_model(DOM, CLIQUES, 3, scale=1.0)


@pytest.fixture(scope="module")
def zero_model(random_model):
    return random_model(DOM, CLIQUES, 4, scale=1.0, zeros=0.25)


EVIDENCE = [
    {"a": 1},
    {"c": [0, 2]},
    {"a": 2, "e": 0},
    {"b": 1, "c": range(1, 4), "d": [0, 2]},
    {"a": 0, "b": 1, "c": 3, "d": 2, "e": 1},
]


@pytest.mark.parametrize("given", EVIDENCE, ids=lambda g: ",".join(g))
@pytest.mark.parametrize("which", ["model", "zero_model"])
def test_conditioned_model_is_the_brute_force_conditional(request, which, given):
    model = request.getfixturevalue(which)
    p = joint(model)
    masked = p * mask_of(code_weights(DOM, given))
    if masked.sum() == 0:
        with pytest.raises(ZeroProbabilityError, match="probability zero"):
            condition(model, code_weights(DOM, given))
        return
    conditioned, prob = condition(model, code_weights(DOM, given))
    assert prob == pytest.approx(masked.sum(), rel=1e-10)
    assert conditioned.total == pytest.approx(model.total * masked.sum(), rel=1e-10)
    exact = conditioned.project(DOM.attrs).values / conditioned.total
    np.testing.assert_allclose(exact, masked / masked.sum(), rtol=0, atol=1e-10)
    for attrs in [("a",), ("b", "d"), ("c", "e", "a")]:  # the oracle's marginals too (in-node and not)
        np.testing.assert_allclose(conditioned.project(attrs).values / conditioned.total,
                                   (masked / masked.sum()).sum(axis=tuple(DOM.axes([x for x in DOM.attrs
                                                                                    if x not in attrs]))).transpose(
                                       np.argsort(np.argsort([DOM.attrs.index(a) for a in attrs]))),
                                   rtol=0, atol=1e-10)


def test_soft_evidence_is_the_weighted_joint(model):
    weights = {"a": np.array([0.2, 1.0, 0.0]), "d": np.array([0.5, 0.5, 1.0])}
    conditioned, prob = condition(model, weights)
    masked = joint(model) * mask_of(weights)
    assert prob == pytest.approx(masked.sum(), rel=1e-10)
    np.testing.assert_allclose(conditioned.project(DOM.attrs).values / conditioned.total, masked / masked.sum(),
                               rtol=0, atol=1e-10)


def test_sampled_rows_follow_the_conditional(model):
    given = {"b": 1, "c": [0, 3], "e": 0}
    rows = model.synthetic_data(200_000, 7, given=given)
    masked = joint(model) * mask_of(code_weights(DOM, given))
    assert set(rows["b"]) == {1} and set(rows["c"]) <= {0, 3} and set(rows["e"]) == {0}
    assert chi2_pvalue(counts_over(rows, DOM.attrs), masked / masked.sum()) > 1e-3
    # the default n: the model's expected count of matching rows
    assert len(model.synthetic_data(None, 7, given=given)) == round(model.total * masked.sum())


def test_conditional_rows_are_deterministic_given_the_seed(model):
    given = {"a": [0, 2]}
    pd.testing.assert_frame_equal(model.synthetic_data(500, 3, given=given), model.synthetic_data(500, 3, given=given))
    frame = pd.DataFrame({"a": [0, np.nan, 2] * 50, "d": [np.nan, 1, 2] * 50})
    for method in ("pinned", "rows"):
        pd.testing.assert_frame_equal(impute(model, frame, 9, method=method),
                                      impute(model, frame, np.random.default_rng(9), method=method))


def test_sampling_without_evidence_is_unchanged(random_model):
    """The rows of a seed are those of main before conditional sampling (digest taken there)."""
    rng = np.random.default_rng(5)
    m = Model(DOM, CLIQUES, [rng.normal(size=DOM.project(c).shape) for c in CLIQUES], 1000.0)
    rows = m.synthetic_data(5000, 11)
    digest = hashlib.sha256(np.ascontiguousarray(rows.to_numpy(np.int64)).tobytes()).hexdigest()
    assert digest == "dea2a0fb78ecf0028f1a738cf2ccc749ae9b6743be0bd5623f947c97b0f79159"


@pytest.mark.parametrize("which", ["model", "zero_model"])
def test_pinned_order_parents_screen_off_everything_before(request, which):
    """For every evidence set E: reading the order backwards after E, each attribute's conditional
    given everything before it equals its conditional given its parents (brute force)."""
    model = request.getfixturevalue(which)
    p = joint(model)
    for k in range(len(DOM.attrs) + 1):
        for given in itertools.combinations(DOM.attrs, k):
            order = pinned_order(model, given)
            assert sorted(a for a, _ in order) == sorted(set(DOM.attrs) - set(given))
            before = list(given)
            for attr, parents in order:
                assert set(parents) <= set(before)
                full = _conditional(p, before, attr)
                local = _conditional(p, list(parents), attr)
                # broadcast the parents' conditional onto the configurations of everything before
                local_b = _lift(local, list(parents), before, attr)
                support = _marg(p, before) > 0
                np.testing.assert_allclose(np.where(support[..., None], full, 0),
                                           np.where(support[..., None], local_b, 0), atol=1e-10)
                before.append(attr)


def _marg(p: np.ndarray, attrs: list[str]) -> np.ndarray:
    """p's marginal over ``attrs`` (axes in that order)."""
    out = p.sum(axis=tuple(i for i, a in enumerate(DOM.attrs) if a not in attrs))
    kept = [a for a in DOM.attrs if a in attrs]
    return out.transpose([kept.index(a) for a in attrs]) if attrs else out


def _conditional(p: np.ndarray, cond: list[str], attr: str) -> np.ndarray:
    table = _marg(p, cond + [attr])
    sums = table.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums > 0, table / sums, 0.0)


def _lift(local: np.ndarray, parents: list[str], before: list[str], attr: str) -> np.ndarray:
    shape = [DOM[a] if a in parents else 1 for a in before]
    order = [parents.index(a) for a in before if a in parents]
    arr = local.transpose(order + [len(parents)]) if parents else local
    return np.broadcast_to(arr.reshape(shape + [DOM[attr]]), tuple(DOM[a] for a in before) + (DOM[attr],))


@pytest.mark.parametrize("method", ["pinned", "rows", "auto"])
def test_dataframe_evidence_keeps_given_cells_and_follows_each_rows_conditional(model, method):
    patterns = [({"a": 1, "d": 2}, 30_000), ({"c": 3}, 30_000), ({"b": 0, "e": 1, "a": 0}, 30_000), ({}, 20_000)]
    parts = [pd.DataFrame({a: [float(v)] * n for a, v in ev.items()}, index=range(n)) for ev, n in patterns]
    frame = pd.concat(parts, ignore_index=True)[["a", "b", "c", "d", "e"][:5]].reindex(columns=["e", "a", "d", "c", "b"])
    frame.index = frame.index * 3 + 1  # any index: kept
    rows = impute(model, frame, 4, method=method)
    assert list(rows.columns) == list(DOM.attrs) and rows.index.equals(frame.index)
    known = frame.notna()
    for a in frame.columns:
        np.testing.assert_array_equal(rows.loc[known[a], a].to_numpy(), frame.loc[known[a], a].to_numpy())
    p, start = joint(model), 0
    for ev, n in patterns:
        block = rows.iloc[start:start + n]
        start += n
        masked = p * mask_of(code_weights(DOM, ev))
        assert chi2_pvalue(counts_over(block, DOM.attrs), masked / masked.sum()) > 1e-3, ev


@pytest.mark.parametrize("method", ["pinned", "rows"])
def test_dataframe_evidence_is_vectorised(model, method):
    """100k rows of mixed evidence in one call: the patterns, not the rows, are looped over."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({a: rng.integers(0, DOM[a], 100_000).astype(float) for a in DOM.attrs})
    frame = frame.mask(rng.random(frame.shape) < 0.5)
    import time

    start = time.perf_counter()
    rows = impute(model, frame, 1, method=method)
    assert time.perf_counter() - start < 10
    assert rows.notna().all().all() and (rows[frame.notna()] == frame[frame.notna()]).sum().sum() == frame.notna().sum().sum()


@pytest.mark.parametrize("method", ["pinned", "rows"])
def test_zero_probability_evidence_is_an_error(zero_model, method):
    p = joint(zero_model)
    impossible = [ev for ev in ({"a": i, "c": j, "e": k} for i in range(3) for j in range(4) for k in range(2))
                  if (p * mask_of(code_weights(DOM, ev))).sum() == 0]
    possible = [ev for ev in ({"a": i, "c": j, "e": k} for i in range(3) for j in range(4) for k in range(2))
                if (p * mask_of(code_weights(DOM, ev))).sum() > 0]
    assert impossible and possible  # the fixture holds both kinds (a control)
    with pytest.raises(ZeroProbabilityError, match="probability zero"):
        zero_model.synthetic_data(10, 0, given=impossible[0])
    frame = pd.DataFrame([possible[0]] * 5 + [impossible[0]] + [possible[-1]] * 5, dtype=float)
    with pytest.raises(ZeroProbabilityError, match=r"1 row\(s\).*index 5"):
        impute(zero_model, frame, 0, method=method)
    rows = impute(zero_model, frame.drop(index=5), 0, method=method)  # the possible rows alone are fine
    assert len(rows) == 10


@pytest.mark.parametrize("given, message", [
    ({"z": 1}, "unknown attribute 'z'"),
    ({"a": 3}, "code 3 is not a code of 'a'"),
    ({"a": []}, "empty list"),
    ({"a": 1.0}, "not a code"),
    ({"b": True}, "not a code"),
])
def test_bad_dict_evidence_is_refused(model, given, message):
    with pytest.raises(ValueError, match=message):
        model.synthetic_data(5, 0, given=given)


def test_bad_dataframe_evidence_is_refused(model):
    with pytest.raises(ValueError, match="unknown column"):
        impute(model, pd.DataFrame({"z": [1]}), 0)
    with pytest.raises(ValueError, match="not a code of 'a'"):
        impute(model, pd.DataFrame({"a": [0, 3]}), 0)
    with pytest.raises(ValueError, match="not a code of 'a'"):
        impute(model, pd.DataFrame({"a": [0.5]}), 0)
    with pytest.raises(ValueError, match="codes must be numbers"):
        impute(model, pd.DataFrame({"a": ["x"]}), 0)
    with pytest.raises(ValueError, match="one row is drawn per given row"):
        model.synthetic_data(3, 0, given=pd.DataFrame({"a": [0, 1]}))
    assert len(impute(model, pd.DataFrame({"a": []}, dtype=float), 0)) == 0
