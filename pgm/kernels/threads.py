"""Large-table numpy passes split across the machine's cores.

Belief propagation on a big model is a handful of memory-bound passes (broadcast products,
in-place scaling, axis sums) over node tables of millions of cells. numpy runs each on one core
but releases the GIL inside the loop, so cutting a pass into slabs along one axis and running the
slabs on a small thread pool uses every core. Every slab computes exactly what the whole pass
computes for its cells. Elementwise passes are therefore bit-for-bit those of one pass. Sums are
split only along a kept axis, but numpy may round a slab's sums differently from the whole
table's (its loops depend on the layout), so their slabs are fixed by the table's shape alone:
the results do not depend on the thread count, and runs stay reproducible across machines.

The thread count is ``DP_MARGINALS_THREADS`` when set (1 turns this off), else the cores this
process may run on. Tables under `MIN_CELLS` cells are never split: there the dispatch would cost
more than it saves. Without the setting, a pass also stays on the calling thread while other
tasks keep every core busy (`contended`): waking a helper behind them costs more than it saves.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np

try:  # np.einsum without `optimize` is exactly this call; the hot loops skip the Python wrapper
    from numpy._core.multiarray import c_einsum as einsum
except ImportError:  # numpy < 2
    try:
        from numpy.core.multiarray import c_einsum as einsum
    except ImportError:
        einsum = np.einsum

#: tables with fewer cells are processed whole, in the calling thread.
MIN_CELLS = 1 << 17
#: a slab must hold contiguous runs of at least this many cells.
MIN_RUN = 1 << 15
#: a large table is cut into this many slabs (fewer if the axis is shorter), whatever the thread
#: count: sums over slabs can round differently from one pass, so the cut must not depend on it.
SLABS = 8

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_cores: int | None = None
#: seconds between two reads of the machine's running-task count (see `contended`).
CONTENTION_PERIOD = 0.25
_contention: tuple[float, bool] = (-1e9, False)


def thread_count() -> int:
    """Threads for large passes: ``DP_MARGINALS_THREADS``, else the usable cores (at least 1)."""
    value = os.environ.get("DP_MARGINALS_THREADS", "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            raise ValueError(f"DP_MARGINALS_THREADS must be a positive integer, got {value!r}") from None
        if count < 1:
            raise ValueError(f"DP_MARGINALS_THREADS must be a positive integer, got {value!r}")
        return count
    global _cores
    if _cores is None:
        try:
            _cores = max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # platforms without affinity masks
            _cores = max(1, os.cpu_count() or 1)
    return _cores


def contended() -> bool:
    """True when at least as many other tasks are runnable as there are usable cores (Linux's
    running count in /proc/loadavg, read at most every `CONTENTION_PERIOD` seconds): a helper
    thread would then only queue behind them, and handing it work costs more than it saves.
    Never true where /proc/loadavg is absent, or with DP_MARGINALS_THREADS set."""
    global _contention
    now = time.monotonic()
    if now - _contention[0] >= CONTENTION_PERIOD:
        try:
            with open("/proc/loadavg", encoding="ascii") as fh:
                running = int(fh.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            running = 0
        _contention = (now, running - 1 >= thread_count())  # minus this thread
    return _contention[1]


def _executor(count: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != count:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(count, thread_name_prefix="pgm"), count
        return _pool


def _forget_pool() -> None:  # a forked child inherits the pool object but none of its threads
    global _pool, _pool_size, _lock, _cores
    _pool, _pool_size, _lock, _cores = None, 0, threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def split_axis(table: np.ndarray, allowed: Sequence[int] | None = None) -> int | None:
    """The axis to cut a large C-contiguous ``table`` along: the outermost of ``allowed`` (default:
    any) with two cells or more whose slabs are runs of at least `MIN_RUN` contiguous cells (a cut
    further in makes short strided slabs that numpy sums slowly); None: don't cut (small, or a
    view in another memory order, e.g. a transposed node belief)."""
    if table.size < MIN_CELLS or not table.flags.c_contiguous:
        return None
    allowed = range(table.ndim) if allowed is None else set(allowed)
    inner = table.size
    for axis, length in enumerate(table.shape):
        inner //= length
        if inner < MIN_RUN:
            return None
        if axis in allowed and length >= 2:
            return axis
    return None


def _bounds(length: int, pieces: int) -> list[tuple[int, int]]:
    pieces = min(pieces, length)
    edges = [length * k // pieces for k in range(pieces + 1)]
    return list(zip(edges[:-1], edges[1:]))


def _slab(array: np.ndarray, axis: int, start: int, stop: int) -> np.ndarray:
    """``array``'s cells [start, stop) along ``axis`` (a broadcast axis of size 1 stays whole)."""
    if array.ndim <= axis or array.shape[axis] == 1:
        return array
    index = [slice(None)] * array.ndim
    index[axis] = slice(start, stop)
    return array[tuple(index)]


def run_slabs(work: Callable[[int, int], None], length: int, pieces: int) -> None:
    """``work(start, stop)`` for each of ``pieces`` slabs of ``range(length)``. The caller and up to
    thread_count() - 1 pool threads take slabs from a shared counter until none is left, and the
    caller then waits only for slabs already taken: a pool thread that a busy machine starts late
    finds nothing left and costs nothing. Which slabs there are does not depend on the thread count."""
    bounds = _bounds(length, pieces)
    helpers = min(thread_count(), len(bounds)) - 1
    if helpers >= 1 and "DP_MARGINALS_THREADS" not in os.environ and contended():
        helpers = 0
    if helpers < 1:
        for lo, hi in bounds:
            work(lo, hi)
        return
    claims = iter(range(len(bounds)))  # next() on a shared range iterator is atomic under the GIL
    lock, finished = threading.Lock(), threading.Event()
    state: dict = {"left": len(bounds), "error": None}

    def drain() -> None:
        for k in claims:
            try:
                work(*bounds[k])
            except BaseException as exc:  # handed to the caller below
                state["error"] = state["error"] or exc
            finally:
                with lock:
                    state["left"] -= 1
                    if not state["left"]:
                        finished.set()

    pool = _executor(thread_count())
    for _ in range(helpers):
        pool.submit(drain)
    drain()
    finished.wait()
    if state["error"] is not None:
        raise state["error"]


def chain(op: np.ufunc, operands: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
    """``out`` = op(...op(op(operands[0], operands[1]), operands[2])...), broadcast onto ``out``
    (at least two operands), slab by slab across the threads for a large ``out``."""

    def work(lo: int | None = None, hi: int | None = None) -> None:
        parts = operands if axis is None else [_slab(t, axis, lo, hi) for t in operands]
        dest = out if axis is None else _slab(out, axis, lo, hi)
        op(parts[0], parts[1], out=dest)
        for t in parts[2:]:
            op(dest, t, out=dest)

    axis = split_axis(out) if out.size >= MIN_CELLS and thread_count() > 1 else None  # elementwise: any cut is exact
    if axis is None:
        work()
    else:
        run_slabs(work, out.shape[axis], SLABS)
    return out


def sum_kept(values: np.ndarray, kept: Sequence[int], factor: np.ndarray | None = None) -> np.ndarray:
    """``values`` (times ``factor``, broadcast onto it, without forming the product) summed over
    every axis not in ``kept``; the result's axes are ``kept``, in that order.

    One einsum pass, or numpy's row sum when only the leading axis goes (einsum is slow there);
    a large table is cut along a kept axis, so every output cell is the sum of the same cells.
    """
    labels, kept = list(range(values.ndim)), list(kept)
    rows = factor is None and kept == labels[1:]
    if factor is not None:
        on = [k for k in labels if factor.shape[k] != 1]
        factor = factor.reshape([factor.shape[k] for k in on])

    def reduce(lo: int | None = None, hi: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        part = values if lo is None else _slab(values, axis, lo, hi)
        if rows:
            return np.sum(part, axis=0, out=out)
        operands = [part, labels] if factor is None else [
            part, labels, factor if lo is None or axis not in on else _slab(factor, on.index(axis), lo, hi), on]
        return einsum(*operands, kept) if out is None else einsum(*operands, kept, out=out)

    axis = split_axis(values, kept)
    if axis is None:
        return reduce()
    out = np.empty([values.shape[a] for a in kept])
    where = kept.index(axis)
    run_slabs(lambda lo, hi: reduce(lo, hi, _slab(out, where, lo, hi)), values.shape[axis], SLABS)
    return out


def scale(table: np.ndarray, factor: np.ndarray | float) -> None:
    """``table *= factor`` in place (``factor`` broadcast onto ``table``), split across the threads."""
    axis = split_axis(table) if table.size >= MIN_CELLS and thread_count() > 1 else None  # elementwise: any cut is exact
    if axis is None:
        table *= factor
        return
    factor = np.asarray(factor)

    def work(lo: int, hi: int) -> None:
        part = _slab(table, axis, lo, hi)
        part *= _slab(factor, axis, lo, hi) if factor.ndim == table.ndim else factor

    run_slabs(work, table.shape[axis], SLABS)
