"""`pgm.sampling`: synthetic rows follow the model, the per-group rounding is exact, the output
is reproducible and well typed, and conditionally independent columns stay independent."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from marginals.domain import Domain
from marginals.randomness import InsecureRandom
from pgm import Model, sample_rows
from pgm.sampling import group_sample

DOM = Domain(tuple("abcde"), (3, 2, 4, 3, 2))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("d", "e")]  # a 4-cycle plus a leaf


def empirical(df: pd.DataFrame, domain: Domain, attrs) -> np.ndarray:
    shape = tuple(domain[a] for a in attrs)
    flat = np.ravel_multi_index(tuple(df[a].to_numpy(np.int64) for a in attrs), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)


@pytest.fixture(scope="module")
def big_sample(random_model):
    model = random_model(DOM, CLIQUES, 0)
    return model, model.synthetic_data(200_000, np.random.default_rng(1))


def test_one_and_two_way_marginals_match_the_model(big_sample):
    model, df = big_sample
    n = len(df)
    assert n == 200_000
    for k in (1, 2):
        for attrs in itertools.combinations(DOM.attrs, k):
            p = model.project(attrs).values / model.total
            p_hat = empirical(df, DOM, attrs) / n
            bound = 5 * np.sqrt(p * (1 - p) / n) + 1e-12  # 5 standard errors of a multinomial proportion
            assert np.all(np.abs(p_hat - p) <= bound), attrs
            assert 0.5 * np.abs(p_hat - p).sum() < 0.01, attrs  # total variation


def test_one_way_counts_are_rounded_not_sampled(big_sample):
    # The first column generated has a single group: its counts are floor or ceil of n * p.
    model, df = big_sample
    first = model.tree.order[-1]
    p = model.project((first,)).values / model.total
    counts = empirical(df, DOM, (first,))
    n = len(df)
    assert np.all(counts >= np.floor(n * p - 1e-6)) and np.all(counts <= np.ceil(n * p + 1e-6))


def test_structural_zeros_are_never_sampled():
    rng = np.random.default_rng(3)
    pots = [rng.normal(size=DOM.project(c).shape) for c in CLIQUES]
    pots[0][0, 1] = -np.inf  # a=0, b=1 impossible
    pots[2][3, :] = -np.inf  # c=3 impossible
    model = Model(DOM, CLIQUES, pots, 100.0)
    df = model.synthetic_data(20_000, np.random.default_rng(4))
    assert not ((df["a"] == 0) & (df["b"] == 1)).any()
    assert not (df["c"] == 3).any()


@pytest.mark.parametrize("seed", range(5))
def test_group_sample_rounding_preserves_group_totals(seed):
    rng = np.random.default_rng(seed)
    n_groups, m = int(rng.integers(1, 40)), int(rng.integers(2, 7))
    groups = rng.integers(0, n_groups, int(rng.integers(1, 3000)))
    cond = rng.random((n_groups, m)) * (rng.random((n_groups, m)) < 0.8)  # some zero cells
    cond[:, 0] += 1e-3  # every group has some mass
    values = group_sample(groups, cond, np.random.default_rng(seed + 100))
    assert values.shape == groups.shape and values.min() >= 0 and values.max() < m
    probs = cond / cond.sum(axis=1, keepdims=True)
    for g in range(n_groups):
        size = int((groups == g).sum())
        counts = np.bincount(values[groups == g], minlength=m)
        assert counts.sum() == size
        expected = size * probs[g]
        assert np.all(counts >= np.floor(expected - 1e-9)), g
        assert np.all(counts <= np.ceil(expected + 1e-9)), g
        assert np.all(counts[probs[g] == 0] == 0)


def test_group_sample_is_unbiased_within_groups():
    # Many draws of one small group: each category's mean count is g * p (randomised rounding).
    cond = np.array([[0.15, 0.35, 0.5]])
    groups = np.zeros(3, dtype=np.int64)
    rng = np.random.default_rng(5)
    draws = np.array([np.bincount(group_sample(groups, cond, rng), minlength=3) for _ in range(4000)])
    np.testing.assert_allclose(draws.mean(axis=0), 3 * cond[0], atol=0.05)


def test_same_seed_same_rows_different_seed_different_rows(random_model):
    model = random_model(DOM, CLIQUES, 6)
    a = model.synthetic_data(5000, np.random.default_rng(42))
    b = model.synthetic_data(5000, np.random.default_rng(42))
    c = model.synthetic_data(5000, np.random.default_rng(43))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_zero_rows_and_default_row_count(random_model):
    model = random_model(DOM, CLIQUES, 7, total=123.4)
    empty = model.synthetic_data(0, np.random.default_rng(0))
    assert len(empty) == 0 and list(empty.columns) == list(DOM.attrs)
    assert len(model.synthetic_data(rng=np.random.default_rng(0))) == 123  # round(total)


def test_columns_in_domain_order_with_compact_dtypes(random_model):
    dom = Domain(("z", "big", "a"), (3, 300, 2))
    model = random_model(dom, [("a", "big"), ("z", "a")], 8)
    df = model.synthetic_data(1000, np.random.default_rng(0))
    assert list(df.columns) == ["z", "big", "a"]
    assert df["z"].dtype == np.uint8 and df["big"].dtype == np.uint16 and df["a"].dtype == np.uint8
    for a in dom.attrs:
        assert df[a].min() >= 0 and df[a].max() < dom[a]
    assert list(df.index) == list(range(1000))


def test_bad_arguments_raise(random_model):
    model = random_model(DOM, CLIQUES, 9)
    with pytest.raises(TypeError):
        sample_rows(model, 10, np.random.RandomState(0))
    with pytest.raises(TypeError, match="RandomSource"):
        model.synthetic_data(10, InsecureRandom(0, warn=False))  # published-noise sources are not samplers
    with pytest.raises(ValueError):
        model.synthetic_data(-1, np.random.default_rng(0))


def conditional_mutual_information(df: pd.DataFrame, domain: Domain, x: str, y: str, given: str) -> float:
    joint = empirical(df, domain, (given, x, y))
    p = joint / joint.sum()
    p_z = p.sum(axis=(1, 2), keepdims=True)
    p_xz = p.sum(axis=2, keepdims=True)
    p_yz = p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = p * np.log(p * p_z / (p_xz * p_yz))
    return float(np.nansum(terms))


def test_conditionally_independent_children_are_not_correlated(random_model):
    # a -> b, a -> c: b and c share the parent a and are independent given a.
    dom = Domain(("a", "b", "c"), (3, 3, 4))
    model = random_model(dom, [("a", "b"), ("a", "c")], 10, scale=1.5)
    assert model.tree.nodes == (("a", "b"), ("a", "c"))
    n = 200_000
    df = model.synthetic_data(n, np.random.default_rng(11))
    cmi = conditional_mutual_information(df, dom, "b", "c", "a")
    # Under independence the plug-in estimate is about df / (2n) = 3 * 2 * 3 / (2n) ~ 5e-5;
    # sorting rows inside the parent groups without shuffling would give ~0.3 nats.
    assert cmi < 5e-4
    # The dependencies that are in the model are reproduced.
    for attrs in [("a", "b"), ("a", "c")]:
        p = model.project(attrs).values / model.total
        assert 0.5 * np.abs(empirical(df, dom, attrs) / n - p).sum() < 0.005
