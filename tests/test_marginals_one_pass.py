"""Rows read once: many marginals from one pass equal each marginal counted alone (in memory and on
Dask), and an AIM run reads the rows exactly once (one `count_tables` call; on Dask one
``dask.compute`` whose tasks read each partition once)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import marginals.dataset as dataset_module
import marginals.tables as tables
from aim import AIM
from marginals import Dataset, Domain
from marginals.datasets import demo_dataset


def random_table(seed: int) -> tuple[Domain, pd.DataFrame]:
    """A small random table: 3-7 attributes of 1-12 levels (one of them possibly constant), skewed codes."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 8))
    sizes = [int(s) for s in rng.integers(1, 13, k)]
    n = int(rng.integers(1, 40_000)) if seed % 4 else int(rng.integers(1, 200))  # large: room for union tables
    domain = Domain(tuple(f"v{j}" for j in range(k)), tuple(sizes))
    df = pd.DataFrame({a: np.minimum(rng.geometric(0.3, n) - 1, m - 1) for a, m in zip(domain.attrs, sizes)})
    return domain, df


def random_cliques(domain: Domain, seed: int) -> list[tuple[str, ...]]:
    """Random cliques of 0-4 attributes in shuffled orders, with repeats (in other orders) and nested ones."""
    rng = np.random.default_rng(seed + 100)
    out: list[tuple[str, ...]] = []
    for _ in range(int(rng.integers(5, 25))):
        size = int(rng.integers(0, min(4, len(domain)) + 1))
        out.append(tuple(rng.permutation(list(rng.choice(domain.attrs, size, replace=False)))))
    big = out[int(rng.integers(len(out)))]
    out += [tuple(reversed(big)), big, big[1:], big[:1]]  # a repeat, itself, nested sub-cliques
    out += list(itertools.combinations(domain.attrs, 2))
    return out


def reference(df: pd.DataFrame, domain: Domain, clique: tuple[str, ...], weights=None) -> np.ndarray:
    """The table of one clique, counted by scattering every row (independent of marginals.tables)."""
    shape = tuple(domain[a] for a in clique)
    out = np.zeros(shape, dtype=np.int64 if weights is None else np.float64)
    if not clique:  # the empty clique: the number of rows (or the weights' sum)
        return out + (len(df) if weights is None else np.sum(weights))
    index = tuple(df[a].to_numpy() for a in clique)
    np.add.at(out, index, 1 if weights is None else weights)
    return out


@pytest.fixture(params=[None, 64], ids=["default-chunks", "tiny-chunks"])
def merged(request, monkeypatch):
    """Union-table counting on even the smallest tables; ``tiny-chunks`` also runs the threaded path."""
    monkeypatch.setattr(tables, "MERGE_MIN_ROWS", 0)
    if request.param is not None:
        monkeypatch.setattr(tables, "CHUNK_ROWS", request.param)


@pytest.mark.parametrize("seed", range(8))
def test_one_pass_equals_each_clique_alone(seed, merged):
    domain, df = random_table(seed)
    ds = Dataset(df, domain)
    cliques = random_cliques(domain, seed)
    for n_jobs in (1, 2):
        together = ds.marginals(cliques, n_jobs=n_jobs)
        assert len(together) == len(cliques)
        ids = set()
        for cl, table in zip(cliques, together):
            assert table.dtype == np.int64 and table.shape == tuple(domain[a] for a in cl)
            np.testing.assert_array_equal(table, ds.marginal(cl), err_msg=str(cl))
            np.testing.assert_array_equal(table, reference(df, domain, cl), err_msg=str(cl))
            assert id(table) not in ids and table.flags.c_contiguous  # no two aliases of one buffer
            ids.add(id(table))


@pytest.mark.parametrize("seed", range(4))
def test_one_pass_with_weights(seed, merged):
    domain, df = random_table(seed)
    cliques = random_cliques(domain, seed)
    rng = np.random.default_rng(seed)
    integral = rng.integers(0, 5, len(df)).astype(np.float64)  # sums exact in any order: identical
    ds = Dataset(df, domain, weights=integral)
    for cl, table in zip(cliques, ds.marginals(cliques, n_jobs=2)):
        assert table.dtype == np.float64
        np.testing.assert_array_equal(table, ds.marginal(cl))
        np.testing.assert_array_equal(table, reference(df, domain, cl, integral))
    real = rng.random(len(df))
    for cl, table in zip(cliques, Dataset(df, domain, weights=real).marginals(cliques)):
        np.testing.assert_allclose(table, reference(df, domain, cl, real), rtol=1e-12, atol=1e-12)


def test_merge_plan_covers_every_clique_within_budget():
    rng = np.random.default_rng(3)
    shape = tuple(int(s) for s in rng.integers(2, 40, 30))
    cliques = list(itertools.combinations(range(30), 2)) + [(0, 1, 2), (5,), (29,), (3, 7, 11)]
    maximal = [c for c in cliques if not any(set(c) < set(d) for d in cliques)]
    plan = tables._merge_cliques(maximal, shape, n_rows=1 << 30)
    assert set(plan) == set(maximal)
    for cl, union in plan.items():
        assert set(cl) <= set(union) and union == tuple(sorted(union))
        assert union == cl or tables._cells(shape, union) <= tables.MERGE_CELLS
    assert len(set(plan.values())) < len(maximal) / 2  # pairs really share passes


# --- Dask --------------------------------------------------------------------------------------------------

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")


@pytest.fixture
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _slice(bounds: tuple[int, int], df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[bounds[0] : bounds[1]]


def partitioned(df: pd.DataFrame, parts: int, seed: int = 0) -> "dd.DataFrame":
    """``df`` cut at random positions into ``parts`` partitions (some possibly empty)."""
    cuts = sorted(np.random.default_rng(seed).integers(0, len(df) + 1, parts - 1).tolist())
    edges = [0, *cuts, len(df)]
    return dd.from_map(_slice, list(zip(edges[:-1], edges[1:])), df=df, meta=df.iloc[:0], enforce_metadata=False)


@pytest.mark.parametrize("seed", range(4))
def test_dask_one_pass_equals_each_clique_alone(seed, synchronous, merged):
    from marginals import DaskDataset

    domain, df = random_table(seed)
    cliques = random_cliques(domain, seed)
    ds = DaskDataset(partitioned(df, 4, seed), domain)
    alone = Dataset(df, domain)
    for cl, table in zip(cliques, ds.marginals(cliques)):
        assert table.dtype == np.int64
        np.testing.assert_array_equal(table, alone.marginal(cl), err_msg=str(cl))
    w = np.random.default_rng(seed).integers(0, 4, len(df)).astype(np.float64)
    weighted = DaskDataset(partitioned(df.assign(w=w), 3, seed + 1), domain, weight_column="w")
    for cl, table in zip(cliques, weighted.marginals(cliques)):
        assert table.dtype == np.float64
        np.testing.assert_array_equal(table, reference(df, domain, cl, w), err_msg=str(cl))


class PassCounter:
    """Counts ``dask.compute`` calls and the partitions `count_partition` read, with what it read."""

    def __init__(self, monkeypatch):
        import marginals.distributed as distributed

        self.computes, self.partitions, self.columns = 0, 0, set()
        real_compute, real_count = dask.compute, distributed.count_partition

        def compute(*args, **kwargs):
            self.computes += 1
            return real_compute(*args, **kwargs)

        def count(part, attrs, *args, **kwargs):
            self.partitions += 1
            self.columns.add(attrs)
            return real_count(part, attrs, *args, **kwargs)

        monkeypatch.setattr(dask, "compute", compute)
        monkeypatch.setattr(distributed, "count_partition", count)


AIM_SETTINGS = dict(epsilon=1.0, delta=1e-9, max_iters=10, final_iters=10, insecure_seed=11)


def test_aim_on_dask_reads_the_rows_once(synchronous, monkeypatch):
    from marginals import DaskDataset

    data = demo_dataset(n=2000, seed=2)
    ds = DaskDataset(partitioned(data.to_df(), 5, seed=3), data.domain)
    passes = PassCounter(monkeypatch)
    release = AIM(**AIM_SETTINGS).run(ds)
    assert len(release.rounds) >= 1
    assert passes.computes == 1  # one dask.compute over the partitions ...
    assert passes.partitions == ds.npartitions == 5  # ... whose tasks read each partition once
    assert passes.columns == {data.domain.attrs}  # all columns: validated and counted in that pass
    assert len(ds) == ds.records == 2000 and ds.total == 2000.0 and not ds.weighted
    assert (passes.computes, passes.partitions) == (1, 5)  # the row count came from the same pass
    expected = AIM(**AIM_SETTINGS).run(data)
    for ours, theirs in zip(release.measurements, expected.measurements):
        assert ours.clique == theirs.clique and ours.noisy_counts.tobytes() == theirs.noisy_counts.tobytes()


def test_aim_in_memory_counts_once(monkeypatch):
    data = demo_dataset(n=2000, seed=2)
    calls = []
    real = dataset_module.count_tables

    def spy(columns, shape, cliques, *args, **kwargs):
        calls.append(len(cliques))
        return real(columns, shape, cliques, *args, **kwargs)

    monkeypatch.setattr(dataset_module, "count_tables", spy)
    release = AIM(**AIM_SETTINGS).run(data)
    k = len(data.domain)
    assert len(calls) == 1 and calls[0] >= k * (k - 1) // 2  # every candidate and the 1-ways at once
    assert len(release.measurements) > k
