"""Contingency tables: exact against pandas for every path (shared work, weights, threads)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import marginals.tables as tables
from marginals import Dataset, Domain

DOM = Domain(("a", "b", "c", "d", "e"), (3, 5, 2, 7, 300))


def random_frame(n: int, seed: int, domain: Domain = DOM) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # skewed codes so that some cells are empty and counts differ
    return pd.DataFrame({a: np.minimum(rng.geometric(1.5 / m, n) - 1, m - 1) for a, m in zip(domain.attrs, domain.shape)})


def pandas_table(df: pd.DataFrame, attrs, domain: Domain, weights=None) -> np.ndarray:
    """Dense table over ``attrs`` (axes in the order given) by pandas groupby."""
    attrs = list(attrs)
    shape = tuple(domain[a] for a in attrs)
    if not attrs:
        return np.array(len(df) if weights is None else float(np.sum(weights)))
    if weights is None:
        counts = df.groupby(attrs).size()
        out = np.zeros(shape, dtype=np.int64)
    else:
        counts = df.assign(_w=weights).groupby(attrs)["_w"].sum()
        out = np.zeros(shape, dtype=np.float64)
    flat = counts.reset_index()
    out[tuple(flat[a].to_numpy() for a in attrs)] = flat.iloc[:, -1].to_numpy()
    return out


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return random_frame(20_000, seed=1)


@pytest.fixture(scope="module")
def ds(df) -> Dataset:
    return Dataset(df, DOM)


@pytest.mark.parametrize("attrs", [("d",), ("e",), ("e", "a"), ("d", "b"), ("c", "a", "e"), ("e", "d", "b"), ("b", "a", "c")])
def test_single_marginal_matches_pandas(ds, df, attrs):
    t = ds.marginal(attrs)
    assert t.dtype == np.int64
    assert t.shape == tuple(DOM[a] for a in attrs)
    np.testing.assert_array_equal(t, pandas_table(df, attrs, DOM))
    assert t.sum() == len(df)


def test_two_way_matches_crosstab(ds, df):
    ct = pd.crosstab(df["d"], df["a"]).reindex(index=range(7), columns=range(3), fill_value=0)
    np.testing.assert_array_equal(ds.marginal(("d", "a")), ct.to_numpy())


def test_empty_clique_is_the_row_count(ds, df):
    t = ds.marginal(())
    assert t.shape == () and t.dtype == np.int64 and int(t) == len(df)


def test_many_marginals_shared_work(ds, df):
    cliques = [
        ("b", "a"),
        ("a",),
        ("a", "b"),  # permutation of a requested clique
        ("b", "a"),  # duplicate
        ("e", "d", "a"),
        ("d", "e"),  # subset of another requested clique
        ("a", "e"),  # subset, another order
        ("e",),
        (),  # the empty clique
        ("c", "b", "d"),
        ("c",),
    ]
    out = ds.marginals(cliques)
    assert len(out) == len(cliques)
    for cl, t in zip(cliques, out):
        assert t.dtype == np.int64 and t.flags.c_contiguous
        assert t.shape == tuple(DOM[a] for a in cl)
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM), err_msg=str(cl))
    # results are independent arrays: writing one never changes another
    out[0][0, 0] += 1000
    assert out[3][0, 0] == out[2][0, 0] == pandas_table(df, ("a", "b"), DOM)[0, 0]


def test_all_one_and_two_way(ds, df):
    cliques = [(a,) for a in DOM] + list(itertools.combinations(reversed(DOM.attrs), 2))
    for cl, t in zip(cliques, ds.marginals(cliques)):
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM), err_msg=str(cl))


def test_weighted_counts_match_pandas(df):
    w = np.random.default_rng(2).gamma(2.0, 1.5, len(df))
    ds_w = Dataset(df, DOM, weights=w)
    cliques = [("e", "a"), ("a",), (), ("d", "b", "c"), ("b",)]
    for cl, t in zip(cliques, ds_w.marginals(cliques)):
        assert t.dtype == np.float64
        np.testing.assert_allclose(t, pandas_table(df, cl, DOM, weights=w), rtol=1e-12, atol=1e-9, err_msg=str(cl))
    # the same weights passed per call give the same tables
    ds = Dataset(df, DOM)
    for cl, t in zip(cliques, ds.marginals(cliques, weights=w)):
        np.testing.assert_allclose(t, pandas_table(df, cl, DOM, weights=w), rtol=1e-12, atol=1e-9)
    # integer weights reproduce integer counts of a table with repeated rows
    reps = np.random.default_rng(3).integers(0, 4, len(df))
    expanded = Dataset(df.loc[df.index.repeat(reps)], DOM)
    np.testing.assert_array_equal(ds.marginal(("b", "e"), weights=reps), expanded.marginal(("b", "e")))


def test_bad_cliques(ds):
    with pytest.raises(ValueError, match=r"unknown attribute\(s\) \['zz'\]"):
        ds.marginal(("a", "zz"))
    with pytest.raises(ValueError, match="repeated attribute"):
        ds.marginals([("a",), ("b", "b")])


def test_count_tables_directly():
    cols = [np.array([0, 1, 1, 2], dtype=np.uint8), np.array([1, 1, 0, 1], dtype=np.uint16)]
    t01, t10, t1, t0, e = tables.count_tables(cols, (3, 2), [(0, 1), (1, 0), (1,), (0,), ()])
    np.testing.assert_array_equal(t01, [[0, 1], [1, 1], [0, 1]])
    np.testing.assert_array_equal(t10, t01.T)
    np.testing.assert_array_equal(t1, [1, 3])
    np.testing.assert_array_equal(t0, [1, 2, 1])
    assert e.shape == () and int(e) == 4
    assert tables.count_tables(cols, (3, 2), []) == []


def test_chunk_boundaries(monkeypatch):
    # a tiny chunk size forces many chunks (with a ragged last one) through the same code path
    monkeypatch.setattr(tables, "CHUNK_ROWS", 7)
    df = random_frame(1000, seed=9)
    ds = Dataset(df, DOM)
    w = np.linspace(0, 2, len(df))
    cliques = [("a", "e"), ("d",), (), ("c", "b", "a")]
    for cl, t in zip(cliques, ds.marginals(cliques)):
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM))
    for cl, t in zip(cliques, ds.marginals(cliques, weights=w)):
        np.testing.assert_allclose(t, pandas_table(df, cl, DOM, weights=w), rtol=1e-12, atol=1e-9)


def test_threaded_chunked_path_is_exact(monkeypatch):
    n = tables.CHUNK_ROWS * 4 + 12_345  # above the threading threshold, ragged last chunk
    df = random_frame(n, seed=4)
    ds = Dataset(df, DOM)
    pools = []
    real_pool = tables.ThreadPoolExecutor

    class SpyPool(real_pool):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs.get("max_workers", args[0] if args else None))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tables, "ThreadPoolExecutor", SpyPool)
    cliques = [(a,) for a in DOM] + [(b, a) for a, b in itertools.combinations(DOM.attrs, 2)] + [("e", "c", "a")]
    threaded = ds.marginals(cliques, n_jobs=2)
    assert pools == [2]  # the threaded path ran
    for cl, t in zip(cliques, threaded):
        assert t.dtype == np.int64
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM), err_msg=str(cl))
    single = ds.marginals(cliques, n_jobs=1)
    assert pools == [2]  # one thread: no pool
    for a, b in zip(threaded, single):
        np.testing.assert_array_equal(a, b)
    w = np.random.default_rng(6).random(n)
    for cl, t in zip(cliques[:8], ds.marginals(cliques[:8], weights=w, n_jobs=2)):
        assert t.dtype == np.float64
        np.testing.assert_allclose(t, pandas_table(df, cl, DOM, weights=w), rtol=1e-10, atol=1e-8)


def test_merge_plan_properties():
    shape = (16, 32, 9, 32, 16, 7, 15, 6, 5, 2, 32, 32, 32, 42, 2)  # adult's level counts
    pairs = list(itertools.combinations(range(len(shape)), 2))
    plan = tables._merge_cliques(pairs, shape, n_rows=10_000_000)
    assert set(plan) == set(pairs)
    for cl, union in plan.items():
        assert set(cl) <= set(union) and union == tuple(sorted(union))
        assert union == cl or tables._cells(shape, union) <= tables.MERGE_CELLS
    assert len(set(plan.values())) <= len(pairs) // 3  # at least three tables per pass on average
    assert tables._merge_cliques(pairs, shape, n_rows=10_000_000) == plan  # deterministic
    # the budget shrinks with the row count: never a union larger than rows / 16
    small = tables._merge_cliques(pairs, shape, n_rows=16 * 600)
    assert all(u == cl or tables._cells(shape, u) <= 600 for cl, u in small.items())
    # a clique larger than the budget is counted on its own
    assert tables._merge_cliques([(0, 1, 3, 10)], shape, n_rows=10**9) == {(0, 1, 3, 10): (0, 1, 3, 10)}
    # 1-way cliques are merged too
    singles = tables._merge_cliques([(i,) for i in range(len(shape))], shape, n_rows=10**9)
    assert len(set(singles.values())) < len(shape)


def test_merged_union_path_is_exact(df, monkeypatch):
    counted = []
    real = tables._count_maximal

    def spy(columns, shape, maximal, *args):
        counted.append(list(maximal))
        return real(columns, shape, maximal, *args)

    monkeypatch.setattr(tables, "_count_maximal", spy)
    monkeypatch.setattr(tables, "MERGE_MIN_ROWS", 0)
    ds = Dataset(df, DOM)
    cliques = [(a,) for a in DOM] + list(itertools.combinations(DOM.attrs[::-1], 2)) + [("d", "c", "a")]
    out = ds.marginals(cliques)
    assert 0 < len(counted[-1]) < 10  # far fewer passes than the 10 maximal cliques ...
    assert any(len(u) > 3 for u in counted[-1])  # ... through unions larger than any request
    for cl, t in zip(cliques, out):
        assert t.dtype == np.int64
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM), err_msg=str(cl))
    w = np.random.default_rng(8).random(len(df))
    for cl, t in zip(cliques, ds.marginals(cliques, weights=w)):
        np.testing.assert_allclose(t, pandas_table(df, cl, DOM, weights=w), rtol=1e-12, atol=1e-9, err_msg=str(cl))
    singles = [(a,) for a in DOM]
    for cl, t in zip(singles, ds.marginals(singles)):
        np.testing.assert_array_equal(t, pandas_table(df, cl, DOM))
    assert len(counted[-1]) < len(singles)


def test_subsets_derived_from_supersets_are_exact():
    # ("a",) is derived from one of the requested 2-way tables; ("e",) likewise
    cols = [np.array([0, 1, 2, 2]), np.array([0, 4, 4, 1]), np.zeros(4, int), np.zeros(4, int), np.array([299, 0, 5, 5])]
    t_a, t_ab, t_ae, t_e = tables.count_tables(cols, DOM.shape, [(0,), (0, 1), (4, 0), (4,)])
    np.testing.assert_array_equal(t_a, [1, 1, 2])
    np.testing.assert_array_equal(t_ab, [[1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 1, 0, 0, 1]])
    assert t_ae.shape == (300, 3) and t_ae[299, 0] == 1 and t_ae[5, 2] == 2 and t_ae.sum() == 4
    assert t_e.shape == (300,) and t_e[5] == 2 and t_e[0] == 1 and t_e.sum() == 4
