"""`pgm.sampling` against plain references: the joint of the sampled rows is the model's
brute-force joint within sampling error, every parent group gets floor or ceil of its expected
counts, and the fast sampler (threads, per-cell boundaries, radix sorts) gives exactly the rows of
the plain one-column-at-a-time, one-search-per-row algorithm for the same seed."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from marginals.domain import Domain
from pgm import Model, sample_rows
from pgm import sampling

DOM = Domain(tuple("abcde"), (3, 2, 4, 3, 2))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("d", "e"), ("a", "c", "e")]


def brute_force_joint(model: Model) -> np.ndarray:
    """The model's distribution over the whole domain: exp(sum of log-potentials), normalised."""
    domain = model.domain
    log_joint = np.zeros(domain.shape)
    for clique, factor in model.potentials.items():
        shape = [domain[a] if a in clique else 1 for a in domain.attrs]
        axes = [clique.index(a) for a in domain.attrs if a in clique]
        log_joint = log_joint + np.transpose(factor.values, axes).reshape(shape)
    joint = np.exp(log_joint - log_joint.max())
    return joint / joint.sum()


def counts_over(df: pd.DataFrame, domain: Domain, attrs) -> np.ndarray:
    shape = tuple(domain[a] for a in attrs)
    flat = np.ravel_multi_index(tuple(df[a].to_numpy(np.int64) for a in attrs), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)


def reference_rows(model: Model, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """The sampling algorithm of the module docstring written plainly: one column at a time, a
    permutation and a stable sort by group, one CDF search per row, then one shuffle."""
    domain, tree = model.domain, model.tree
    elim = dict(zip(tree.order, tree.elimination_cliques))
    columns: dict[str, np.ndarray] = {}
    for attr in reversed(tree.order):
        parents = tuple(a for a in elim[attr] if a != attr)
        cond = model.marginals([parents + (attr,)])[0].reshape(-1, domain[attr])
        groups = np.zeros(n, dtype=np.int64)
        for p in parents:
            groups = groups * domain[p] + columns[p]
        n_groups, m = cond.shape
        sums = cond.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            probs = np.where(sums > 0, cond / sums, 1.0 / m)
        perm = rng.permutation(n)
        order = perm[np.argsort(groups[perm], kind="stable")]
        sorted_groups = groups[order]
        counts = np.bincount(groups, minlength=n_groups)
        rank = np.arange(n) - (np.cumsum(counts) - counts)[sorted_groups]
        u = (rank + rng.random(n_groups)[sorted_groups]) / counts[sorted_groups]
        cdf = np.cumsum(probs, axis=1) + np.arange(n_groups)[:, None]
        pos = np.searchsorted(cdf.ravel(), sorted_groups + u, side="right")
        columns[attr] = np.empty(n, dtype=np.int64)
        columns[attr][order] = np.clip(pos - sorted_groups * m, 0, m - 1)
    shuffle = rng.permutation(n)
    return pd.DataFrame({a: columns[a][shuffle] for a in domain.attrs})


@pytest.fixture(scope="module")
def exact_sample(random_model):
    model = random_model(DOM, CLIQUES, 21, scale=1.2)
    return model, model.synthetic_data(300_000, np.random.default_rng(22))


def test_sampled_joint_matches_the_brute_force_joint(exact_sample):
    model, df = exact_sample
    n = len(df)
    p = brute_force_joint(model)
    np.testing.assert_allclose(model.project(DOM.attrs).values / model.total, p, rtol=1e-9, atol=1e-12)
    p_hat = counts_over(df, DOM, DOM.attrs) / n
    bound = 5 * np.sqrt(p * (1 - p) / n) + 1e-12  # 5 standard errors per cell of a multinomial
    assert np.all(np.abs(p_hat - p) <= bound)
    assert 0.5 * np.abs(p_hat - p).sum() < 0.02  # 288 cells: total variation of the whole joint
    for k in (2, 3):  # marginals of the brute-force joint, including sets no clique holds
        for attrs in itertools.combinations(DOM.attrs, k):
            axes = tuple(i for i, a in enumerate(DOM.attrs) if a not in attrs)
            q = p.sum(axis=axes)
            assert 0.5 * np.abs(counts_over(df, DOM, attrs) / n - q).sum() < 0.01, attrs


def test_every_parent_group_gets_floor_or_ceil_of_its_expected_counts(exact_sample):
    model, df = exact_sample
    elim = dict(zip(model.tree.order, model.tree.elimination_cliques))
    for attr in model.tree.order:
        parents = tuple(a for a in elim[attr] if a != attr)
        cond = model.project(parents + (attr,)).values.reshape(-1, DOM[attr])
        probs = cond / cond.sum(axis=1, keepdims=True)
        counts = counts_over(df, DOM, parents + (attr,)).reshape(-1, DOM[attr])
        expected = counts.sum(axis=1, keepdims=True) * probs  # group sizes as sampled x the model's conditional
        assert np.all(counts >= np.floor(expected - 1e-6)) and np.all(counts <= np.ceil(expected + 1e-6)), attr


@pytest.mark.parametrize(
    "domain, cliques, n",
    [
        (DOM, CLIQUES, 20_000),  # groups with more rows than cells: per-cell boundaries
        (DOM, CLIQUES, 37),  # fewer rows than cells: one search per row
        (Domain(("p", "q", "r", "s"), (300, 300, 3, 2)), [("p", "q", "r"), ("r", "s")], 2_000),  # > 2^16 groups
        (Domain(("x", "y", "z"), (5, 4, 3)), [("x", "y")], 1_000),  # two components, z alone
    ],
)
def test_same_rows_and_generator_state_as_the_plain_algorithm(random_model, domain, cliques, n):
    model = random_model(domain, cliques, 5, zeros=0.1)
    fast_rng, plain_rng = np.random.default_rng(9), np.random.default_rng(9)
    fast = sample_rows(model, n, fast_rng)
    plain = reference_rows(model, n, plain_rng)
    for a in domain.attrs:
        np.testing.assert_array_equal(fast[a].to_numpy(np.int64), plain[a].to_numpy(), err_msg=a)
    assert fast_rng.random() == plain_rng.random()  # the caller's generator moved on by the same draws


def test_rows_do_not_depend_on_the_thread_count(random_model, monkeypatch):
    model = random_model(DOM, CLIQUES, 3)
    runs = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("DP_MARGINALS_THREADS", threads)
        runs.append(model.synthetic_data(10_000, 4))
    pd.testing.assert_frame_equal(runs[0], runs[1])
    pd.testing.assert_frame_equal(runs[0], runs[2])


def test_per_cell_boundaries_equal_one_search_per_row():
    rng = np.random.default_rng(0)
    shortcut = 0
    for _ in range(300):
        n_groups, m = int(rng.integers(1, 60)), int(rng.integers(2, 12))
        cond = rng.random((n_groups, m)) ** rng.uniform(0.2, 6) * (rng.random((n_groups, m)) < 0.7)
        cond[rng.random(n_groups) < 0.1] = 0  # groups with no mass: uniform
        if rng.random() < 0.3:
            cond[:, 0] = 0  # rows whose CDF starts at its group's base
        n = int(rng.integers(n_groups * m + 1, 8 * n_groups * m))
        counts = np.bincount(rng.integers(0, n_groups, n), minlength=n_groups)
        offset = rng.random(n_groups)
        if rng.random() < 0.2:
            offset[:] = 1 - 2**-53  # the last rank's point rounds to the next group's base
        cdf = sampling._cdf(cond)
        by_cells = sampling._sorted_by_cells(cdf, counts, offset)
        if by_cells is not None:
            shortcut += 1
            np.testing.assert_array_equal(by_cells, sampling._sorted_by_rows(cdf, counts, offset))
    assert shortcut > 200  # the shortcut is taken unless rounding unsorts the flat CDF


@pytest.mark.parametrize("dtype, high", [(np.uint8, 200), (np.uint16, 60_000), (np.uint32, 3_000_000)])
def test_radix_order_is_the_stable_argsort(dtype, high):
    key = np.random.default_rng(1).integers(0, high, 50_000).astype(dtype)
    np.testing.assert_array_equal(sampling._stable_order(key), np.argsort(key.astype(np.int64), kind="stable"))


def test_a_failing_query_is_raised_not_hung(random_model, monkeypatch):
    model = random_model(DOM, CLIQUES, 1)
    calls = []

    def failing(subsets):
        calls.append(subsets)
        if len(calls) == 3:
            raise RuntimeError("query failed")
        return Model.marginals(model, subsets)

    monkeypatch.setattr(model, "marginals", failing)
    with pytest.raises(RuntimeError, match="query failed"):
        sample_rows(model, 1000, 0)
