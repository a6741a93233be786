"""DaskDataset: the same tables and the same validation messages as Dataset, on a 2-worker local cluster
(the tests on the cluster are slow: it takes seconds to start)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aim import AIM
from marginals import DaskDataset, DataError, Dataset, Domain
from marginals.datasets import demo_dataset

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
DOM = Domain(("a", "b", "c", "d", "e"), (2, 3, 7, 300, 1))


@pytest.fixture(scope="module")
def client():
    """A local cluster of 2 single-threaded worker processes, the active scheduler for this module."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="1GiB"
    ) as cluster, distributed.Client(cluster) as c:
        yield c


def random_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Codes over DOM in assorted dtypes (uint8, int64, float with integral values, bool)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "c": rng.integers(0, 7, n).astype(np.float64),  # columns not in domain order
            "a": rng.integers(0, 2, n).astype(bool),
            "b": rng.integers(0, 3, n).astype(np.uint8),
            "d": rng.integers(0, 300, n),
            "e": np.zeros(n, dtype=np.int64),
        }
    )


def _slice(bounds: tuple[int, int], df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[bounds[0] : bounds[1]]


def partitioned(df: pd.DataFrame, cuts: list[int]) -> "dd.DataFrame":
    """``df`` as a Dask DataFrame cut at row positions ``cuts`` (repeated cuts make empty partitions)."""
    edges = [0, *cuts, len(df)]
    return dd.from_map(_slice, list(zip(edges[:-1], edges[1:])), df=df, meta=df.iloc[:0], enforce_metadata=False)


def cliques_of(domain: Domain, seed: int = 0) -> list[tuple[str, ...]]:
    """All 1- and 2-way cliques and every 3-way one, each in a shuffled attribute order, plus repeats and ()."""
    rng = np.random.default_rng(seed)
    out = []
    for k in (1, 2, 3):
        for cl in itertools.combinations(domain.attrs, k):
            out.append(tuple(rng.permutation(cl)))
    return out + [("d", "a"), ("a", "d"), ()]


def assert_same_tables(ours: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(ours) == len(expected)
    for x, y in zip(ours, expected):
        assert x.dtype == y.dtype == np.int64 and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


# --- tables ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "cuts",
    [[], [1000, 2000, 3000], [10, 10, 3999, 4000], [0, 2500, 2500, 4000]],
    ids=["one", "even", "uneven+empty", "empty-first-and-middle"],
)
def test_tables_equal_numpy(client, cuts):
    df = random_frame(4000)
    expected = Dataset(df, DOM)
    ds = DaskDataset(partitioned(df, cuts), DOM)
    assert ds.npartitions == len(cuts) + 1
    cliques = cliques_of(DOM)
    assert_same_tables(ds.marginals(cliques), expected.marginals(cliques))
    assert len(ds) == ds.records == 4000
    np.testing.assert_array_equal(ds.marginal(("d", "b")), expected.marginal(("d", "b")))
    assert repr(ds) == f"DaskDataset(4000 rows, 5 attributes, {len(cuts) + 1} partitions)"


@pytest.mark.slow
def test_large_partitions_and_projected_passes(client):
    # partitions above tables.MERGE_MIN_ROWS (union-table counting inside each partition)
    df = random_frame(120_000, seed=1)
    expected = Dataset(df, DOM)
    ds = DaskDataset(dd.from_pandas(df, npartitions=3), DOM, split_every=2)
    assert len(ds) == 120_000  # the validating pass; the passes below read only the columns they need
    cliques = cliques_of(DOM, seed=1)
    assert_same_tables(ds.marginals(cliques), expected.marginals(cliques))
    assert_same_tables(ds.marginals([("c",), ("b", "c")]), expected.marginals([("c",), ("b", "c")]))
    assert_same_tables(ds.marginals([()]), expected.marginals([()]))
    assert ds.marginals([]) == []


@pytest.mark.slow
def test_parquet_and_csv_files(client, tmp_path):
    df = random_frame(3000, seed=2)
    expected = Dataset(df, DOM)
    cliques = cliques_of(DOM, seed=2)
    (tmp_path / "pq").mkdir()
    for i, (lo, hi) in enumerate([(0, 1000), (1000, 1001), (1001, 3000)]):
        part = df.iloc[lo:hi].astype({a: np.uint16 if m > 255 else np.uint8 for a, m in zip(DOM.attrs, DOM.shape)})
        part.to_parquet(tmp_path / "pq" / f"part.{i}.parquet", index=False)
        df.iloc[lo:hi].to_csv(tmp_path / f"part-{i}.csv", index=False)
    from_parquet = DaskDataset.from_parquet(tmp_path / "pq", DOM)
    from_csv = DaskDataset.from_csv(str(tmp_path / "part-*.csv"), DOM)
    assert from_parquet.npartitions == from_csv.npartitions == 3
    for ds in (from_parquet, from_csv):
        assert_same_tables(ds.marginals(cliques), expected.marginals(cliques))
        assert len(ds) == 3000


@pytest.mark.slow
def test_weight_column(client):
    df = random_frame(2000, seed=3)
    w = np.random.default_rng(3).random(2000)
    ds = DaskDataset(dd.from_pandas(df.assign(w=w), npartitions=4), DOM, weight_column="w")
    assert ds.weighted and ds.weight_column == "w"
    expected = Dataset(df, DOM, weights=w).marginals([("b", "a"), ("c",)])
    for x, y in zip(ds.marginals([("b", "a"), ("c",)]), expected):
        assert x.dtype == np.float64
        np.testing.assert_allclose(x, y, rtol=1e-12)
    bad = df.assign(w=np.where(np.arange(2000) == 1500, -1.0, w))
    with pytest.raises(DataError, match=r"^weight column 'w': missing, negative or non-finite value\(s\)$") as info:
        DaskDataset(dd.from_pandas(bad, npartitions=4), DOM, weight_column="w").marginals([("a",)])
    assert info.value.detail == "weight column 'w': missing, negative or non-finite value(s): 1, e.g. -1.0 at row 1500"
    with pytest.raises(ValueError, match="row weights"):
        AIM(1.0).run(ds)


# --- validation -------------------------------------------------------------------------------------------


def _errors(df: pd.DataFrame, first_use: str) -> tuple[str, str]:
    """(Dataset's message, DaskDataset's message) for the same table, cut into 4 partitions."""
    with pytest.raises(DataError) as expected:
        Dataset(df, DOM)
    with dask.config.set({"dataframe.convert-string": False}):  # keep object columns as they are
        ddf = dd.from_pandas(df, npartitions=min(4, max(1, len(df))))
    with pytest.raises(DataError) as ours:
        ds = DaskDataset(ddf, DOM)
        ds.marginals([("a", "b")]) if first_use == "marginals" else len(ds)
    for err in (expected.value, ours.value):  # the message names the rule; count and example are private
        assert err.detail is None or ("e.g." not in str(err) and err.detail.startswith(str(err).split(":")[0]))
    return expected.value.detail or str(expected.value), ours.value.detail or str(ours.value)


def _with(column: str, rows: list[int], values: list, n: int = 400) -> pd.DataFrame:
    df = random_frame(n, seed=4)
    df[column] = df[column].astype(object)
    for r, v in zip(rows, values):
        df.loc[r, column] = v
    return df


@pytest.mark.slow
@pytest.mark.parametrize("first_use", ["marginals", "len"])
@pytest.mark.parametrize(
    "df, message",
    [
        (_with("c", [250, 390], [np.nan, None]), "column 'c': 2 missing value(s) (NaN/None), e.g. nan at row 250"),
        (_with("b", [120, 121, 399], [1.5, "x", np.inf]), "column 'b': 3 non-integer or infinite value(s), e.g. 1.5 at row 120"),
        (_with("d", [350, 10], [300, -1]), "column 'd': 2 value(s) outside the codes 0..299, e.g. -1 at row 10"),
        (_with("e", [399], [1]), "column 'e': 1 value(s) outside the codes 0..0, e.g. 1 at row 399"),
        (random_frame(0), "empty table: 0 rows (a dataset needs at least one row)"),
        # several problems: the first column in domain order is reported, as Dataset does
        (_with("d", [5], [-3]).assign(b=_with("b", [300], [np.nan])["b"]),
         "column 'b': 1 missing value(s) (NaN/None), e.g. nan at row 300"),
    ],
    ids=["missing", "non-integer", "outside", "outside-single-level", "empty", "first-column-wins"],
)
def test_value_errors_match_dataset(client, df, message, first_use):
    expected, ours = _errors(df, first_use)
    assert ours == expected == message


@pytest.mark.slow
def test_value_errors_in_integer_columns(client):
    df = random_frame(400, seed=5).astype({"d": np.int16})
    df.loc[333, "d"] = 301
    expected, ours = _errors(df, "marginals")
    assert ours == expected == "column 'd': 1 value(s) outside the codes 0..299, e.g. 301 at row 333"


def test_column_errors_at_construction():
    df = random_frame(10)
    cases = [
        (df.drop(columns=["c"]), "1 domain attribute(s) missing from the table: ['c']"),
        (df.assign(zz=0), "1 unknown column(s) not in the domain: ['zz']"),
        (df.drop(columns=["a", "e"]).assign(x=0),
         "1 unknown column(s) not in the domain: ['x']; 2 domain attribute(s) missing from the table: ['a', 'e']"),
    ]
    for frame, message in cases:
        with pytest.raises(DataError) as expected:
            Dataset(frame, DOM)
        with pytest.raises(DataError) as ours:
            DaskDataset(dd.from_pandas(frame, npartitions=2), DOM)  # no computation needed
        assert str(ours.value) == str(expected.value) == message
    with pytest.raises(DataError, match=r"^weight column 'w' missing from the table"):
        DaskDataset(dd.from_pandas(df, npartitions=2), DOM, weight_column="w")
    with pytest.raises(DataError, match=r"^weight column 'a' is a domain attribute$"):
        DaskDataset(dd.from_pandas(df, npartitions=2), DOM, weight_column="a")
    with pytest.raises(TypeError, match=r"expects a dask DataFrame, got DataFrame \(wrap it with dask.dataframe.from_pandas\)"):
        DaskDataset(df, DOM)


@pytest.mark.slow
def test_csv_that_dask_cannot_parse_is_validated_as_text(client, tmp_path):
    df = random_frame(3000, seed=6)
    df.to_csv(tmp_path / "ok.csv", index=False)
    df = df.astype({"d": object})
    df.loc[2500, "d"], df.loc[2900, "d"] = "x", 4.5  # far below the rows dask samples for dtypes
    df.to_csv(tmp_path / "bad.csv", index=False)
    ds = DaskDataset.from_csv(tmp_path / "bad.csv", DOM, blocksize=20_000)
    assert ds.npartitions > 1
    with pytest.raises(DataError) as ours:
        ds.marginals([("a",)])
    with pytest.raises(DataError) as expected:
        Dataset.from_csv(tmp_path / "bad.csv", DOM)
    assert str(ours.value) == "column 'd': non-integer or infinite value(s)"  # the rule; count and example on request
    assert ours.value.detail == "column 'd': 2 non-integer or infinite value(s), e.g. 'x' at row 2500"
    assert str(expected.value) == f"{tmp_path / 'bad.csv'}: {ours.value}"  # Dataset.from_csv names the file
    assert expected.value.detail == ours.value.detail
    # values dask parses differently from its guess (4.0 below integers) are still valid codes
    df.loc[2500, "d"], df.loc[2900, "d"] = "4.0", 4
    df.to_csv(tmp_path / "mixed.csv", index=False)
    ds = DaskDataset.from_csv(tmp_path / "mixed.csv", DOM, blocksize=20_000)
    expected_tables = Dataset.from_csv(tmp_path / "mixed.csv", DOM).marginals([("d",), ("a", "d")])
    assert_same_tables(ds.marginals([("d",), ("a", "d")]), expected_tables)


def test_without_dask(monkeypatch):
    code = "import sys, marginals, aim; assert 'dask' not in sys.modules, 'dask imported'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "ok"
    monkeypatch.setitem(sys.modules, "dask", None)  # `import dask` now fails
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    with pytest.raises(ImportError, match=r"pip install 'dp-marginals\[dask\]'"):
        DaskDataset.from_parquet("unused.parquet", DOM)


# --- AIM ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_aim_release_identical_to_numpy(client):
    data = demo_dataset(n=3000, seed=1)
    ds = DaskDataset(partitioned(data.to_df(), [700, 700, 2100]), data.domain)
    settings = dict(epsilon=1.0, delta=1e-9, max_iters=10, final_iters=10, insecure_seed=7)
    ours, expected = AIM(**settings).run(ds), AIM(**settings).run(data)
    assert len(ours.measurements) == len(expected.measurements) > len(data.domain)
    for m, e in zip(ours.measurements, expected.measurements):
        assert m.clique == e.clique and m.sigma == e.sigma
        assert m.noisy_counts.tobytes() == e.noisy_counts.tobytes()
    assert ours.ledger.charges == expected.ledger.charges and ours.ledger.spent == expected.ledger.spent
    assert ours.model.cliques == expected.model.cliques and ours.model.total == expected.model.total
    for c in expected.model.cliques:
        assert ours.model.potentials[c].values.tobytes() == expected.model.potentials[c].values.tobytes()
    assert [r["clique"] for r in ours.rounds] == [r["clique"] for r in expected.rounds]
    with pytest.raises(TypeError, match=r"AIM.run needs private rows \(a marginals.Dataset or DaskDataset\), got DataFrame"):
        AIM(1.0).run(data.to_df())


@pytest.mark.slow
def test_adassp_on_dask_equals_in_memory(client):
    """AdaSSP's statistics come from exact marginals, so the Dask table gives the same fit."""
    from ddssp import AdaSSP, ObjPert

    data = demo_dataset(n=3000, seed=4)
    ds = DaskDataset(partitioned(data.to_df(), [1000, 1000, 1000]), data.domain)
    ours = AdaSSP(1.0, 1e-6, "income", insecure_seed=3).fit(ds)
    expected = AdaSSP(1.0, 1e-6, "income", insecure_seed=3).fit(data)
    np.testing.assert_array_equal(ours.XtX_noisy_, expected.XtX_noisy_)
    np.testing.assert_array_equal(ours.coef_, expected.coef_)
    binary = next(a for a in data.domain.attrs if data.domain[a] == 2)
    with pytest.raises(TypeError, match="ObjPert needs the private rows in memory"):
        ObjPert(1.0, 1e-6, binary).fit(ds)
