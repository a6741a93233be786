"""`pgm.kernels.threads`: large-table passes cut into slabs and run on a thread pool give numpy's results
(elementwise: bit for bit; sums: to rounding, and bit for bit across thread counts)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pgm.kernels import threads


@pytest.fixture
def every_table_split(monkeypatch):
    monkeypatch.setattr(threads, "MIN_CELLS", 1)
    monkeypatch.setattr(threads, "MIN_RUN", 1)


def random_shapes(rng, count):
    for _ in range(count):
        yield tuple(int(s) for s in rng.integers(1, 9, rng.integers(2, 6)))


@pytest.mark.parametrize("count", ["1", "2", "3"])
def test_sums_match_numpy_and_do_not_depend_on_the_thread_count(count, every_table_split, monkeypatch):
    rng = np.random.default_rng(1)
    for shape in random_shapes(rng, 40):
        values = rng.random(shape) * 10.0 ** rng.uniform(-3, 3, shape)
        factor = rng.random([s if rng.random() < 0.6 else 1 for s in shape])
        for r in range(1, len(shape) + 1):
            for kept in itertools.combinations(range(len(shape)), r):
                for order in dict.fromkeys((kept, kept[::-1])):
                    want = np.einsum(values, list(range(len(shape))), list(order))
                    monkeypatch.setenv("DP_MARGINALS_THREADS", "1")
                    alone = threads.sum_kept(values, order)
                    alone_f = threads.sum_kept(values, order, factor)
                    monkeypatch.setenv("DP_MARGINALS_THREADS", count)
                    got = threads.sum_kept(values, order)
                    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
                    np.testing.assert_array_equal(got, alone)
                    got_f = threads.sum_kept(values, order, factor)
                    want_f = np.einsum(values * factor, list(range(len(shape))), list(order))
                    np.testing.assert_allclose(got_f, want_f, rtol=1e-13, atol=0)
                    np.testing.assert_array_equal(got_f, alone_f)


def test_elementwise_passes_are_exactly_numpy(every_table_split, monkeypatch):
    monkeypatch.setenv("DP_MARGINALS_THREADS", "2")
    rng = np.random.default_rng(2)
    for shape in random_shapes(rng, 40):
        parts = [rng.random([s if rng.random() < 0.5 else 1 for s in shape]) for _ in range(3)]
        parts[0] = rng.random(shape)  # the first operand spans the table
        out = np.empty(shape)
        threads.chain(np.multiply, parts, out)
        np.testing.assert_array_equal(out, parts[0] * parts[1] * parts[2])
        threads.chain(np.add, parts[:2], out)
        np.testing.assert_array_equal(out, parts[0] + parts[1])
        table = parts[0].copy()
        threads.scale(table, parts[1])
        np.testing.assert_array_equal(table, parts[0] * parts[1])
        threads.scale(table, 2.5)
        np.testing.assert_array_equal(table, parts[0] * parts[1] * 2.5)


def test_small_tables_stay_in_the_calling_thread():
    assert threads.split_axis(np.empty((64, 64))) is None  # 4,096 cells < MIN_CELLS
    assert threads.split_axis(np.empty((2, 3, 1 << 16))) == 0
    assert threads.split_axis(np.empty((2, 3, 1 << 16)), allowed=[1, 2]) == 1  # runs of 65,536 cells
    assert threads.split_axis(np.empty((2, 1 << 16, 3)), allowed=[2]) is None  # runs of 1 cell
    assert threads.split_axis(np.empty((1, 1 << 18)), allowed=[0]) is None  # nothing to cut along
    assert threads.split_axis(np.empty((1 << 16, 2, 3)).transpose(1, 2, 0)) is None  # not C order


def test_a_worker_error_reaches_the_caller(every_table_split, monkeypatch):
    monkeypatch.setenv("DP_MARGINALS_THREADS", "2")
    seen = []

    def work(lo, hi):
        seen.append((lo, hi))
        if lo == 3:
            raise RuntimeError("slab failed")

    with pytest.raises(RuntimeError, match="slab failed"):
        threads.run_slabs(work, 8, 8)
    threads.run_slabs(lambda lo, hi: None, 8, 8)  # the pool still works afterwards


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_count_is_refused(value, monkeypatch):
    monkeypatch.setenv("DP_MARGINALS_THREADS", value)
    with pytest.raises(ValueError, match="DP_MARGINALS_THREADS"):
        threads.thread_count()


def test_mirror_descent_is_bit_for_bit_the_same_with_any_thread_count(every_table_split, monkeypatch):
    # Every table of this small model goes through the slabbed passes: the estimate (many belief
    # propagations, line searches, momentum) must not depend on how many threads ran them.
    import pgm.inference
    from marginals.domain import Domain
    from marginals.measurement import Measurement
    from pgm import estimate

    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)
    rng = np.random.default_rng(4)
    dom = Domain(tuple("abcdef"), (6, 5, 4, 3, 2, 4))
    cliques = [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "f"), ("e", "f")]
    measurements = [Measurement(cl, rng.random(dom.project(cl).shape) * 50.0, 2.0) for cl in cliques]
    fits = {}
    for count in ("1", "2", "3"):
        monkeypatch.setenv("DP_MARGINALS_THREADS", count)
        model = estimate(dom, measurements, iters=40)
        fits[count] = [model.project(cl).values for cl in cliques] + list(model.beliefs)
    for count in ("2", "3"):
        for got, want in zip(fits[count], fits["1"]):
            np.testing.assert_array_equal(got, want)


# --- contention: no helper threads while other tasks keep every core busy ------------------------


def _fake_loadavg(monkeypatch, text):
    import io

    from pgm.kernels import threads

    def fake_open(path, *args, **kwargs):
        if path == "/proc/loadavg":
            if text is None:
                raise FileNotFoundError(path)
            return io.StringIO(text)
        return open(path, *args, **kwargs)

    monkeypatch.setattr(threads, "open", fake_open, raising=False)
    monkeypatch.setattr(threads, "_contention", (-1e9, False))
    monkeypatch.setattr(threads, "_cores", 2)
    monkeypatch.delenv("DP_MARGINALS_THREADS", raising=False)


@pytest.mark.parametrize("text, expected", [("3.1 2.0 1.0 3/200 99", True), ("0.5 0.4 0.3 1/200 99", False),
                                            ("1.0 1.0 1.0 2/200 99", False), (None, False), ("garbage", False)])
def test_contended_reads_the_running_count(monkeypatch, text, expected):
    from pgm.kernels import threads

    _fake_loadavg(monkeypatch, text)
    assert threads.contended() is expected


def test_contended_passes_stay_on_the_calling_thread(monkeypatch):
    import threading

    from pgm.kernels import threads

    _fake_loadavg(monkeypatch, "9.0 9.0 9.0 9/200 99")
    seen = set()

    def work(lo, hi):
        seen.add(threading.current_thread().name)

    threads.run_slabs(work, 64, threads.SLABS)
    assert seen == {threading.current_thread().name}
