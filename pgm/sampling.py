"""Synthetic rows from a fitted model.

Columns are generated in reverse elimination order. When an attribute is eliminated, its
neighbours in the triangulated graph are all eliminated later, so in reverse order they are
already generated: they are the attribute's parents, and parents plus attribute lie inside one
junction-tree node. Its conditional distribution given the parents is therefore exact under
the model and a cheap projection of a calibrated belief.

Within each parent group of g rows the column is filled by systematic sampling: one shared
uniform offset u, row r of the group gets the category whose CDF interval holds (r + u) / g.
Every category then gets floor or ceil of g * p (randomized rounding; the group total is
exact, and the expectation is g * p). Rows are visited in a random order within their group,
so two conditionally independent columns with the same parents do not correlate.

Sampling is post-processing of a public model, so its randomness follows the sampler convention
of `marginals.randomness`: a numpy Generator, an int seed (reproducible rows) or None.

Speed (1M rows): the random draws never depend on the rows (a column takes one permutation of
the rows, then one offset per parent group; one last permutation shuffles the rows), so one
thread draws them in that order while worker threads fill every column whose parents are done;
numpy releases the GIL in all of these passes. Inside a column the rows' points (r + u) / g, by
group and rank, never decrease, and so do the CDF cells (checked: rounding can break it); with
fewer cells than rows each cell's boundary rank is found in closed form (checked against the
exact float points) instead of searching every row's point among the cells. Group labels take
the smallest unsigned dtype, so the stable sort of the permuted labels is numpy's radix sort.
A seed gives exactly the rows (and leaves the generator in the state) of the plain
column-by-column algorithm, whatever the thread count (the tests hold a plain copy of it).

`sample_in_order` runs the same machinery in another order with some columns given (pinned, not
drawn, rows not shuffled): `pgm.conditional` uses it for rows conditioned on their own values.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

from marginals.domain import code_dtype
from marginals.randomness import SamplingSeed, sampling_rng

from .kernels.threads import thread_count

#: permutations drawn ahead of the columns that use them (each holds n int32 or int64 indices)
DRAWS_AHEAD = 8


def _index_dtype(n: int) -> np.dtype:
    return np.dtype(np.int32) if n < 2**31 else np.dtype(np.int64)


def _permutation(rng: np.random.Generator, n: int) -> np.ndarray:
    """``rng.permutation(n)`` (the same draws and values) in the smallest index dtype."""
    perm = np.arange(n, dtype=_index_dtype(n))
    rng.shuffle(perm)  # what permutation(n) does, without its copy
    return perm


def _label_dtype(n_groups: int) -> np.dtype:
    """The smallest unsigned dtype for group labels below ``n_groups`` (a 1 MB table of uint8 labels
    stays in cache while it is read in random order)."""
    if n_groups <= 1 << 8:
        return np.dtype(np.uint8)
    if n_groups <= 1 << 16:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32) if n_groups <= 1 << 32 else np.dtype(np.int64)


def _stable_order(key: np.ndarray) -> np.ndarray:
    """``argsort(key, kind="stable")`` of group labels (numpy radix-sorts 8- and 16-bit keys; wider
    labels take two 16-bit passes, least significant first)."""
    if key.dtype.itemsize <= 2:
        return np.argsort(key, kind="stable")
    if key.dtype == np.uint32:
        low = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
        return low[np.argsort((key[low] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(key, kind="stable")


def _cdf(cond: np.ndarray) -> np.ndarray:
    """Row g's CDF shifted by g (row g lives in [g, g + 1]); a group with no mass is uniform."""
    n_groups, m = cond.shape
    sums = cond.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = np.where(sums > 0, cond / sums, 1.0 / m)  # no mass: never hit in exact sampling
    cdf = np.cumsum(probs, axis=1) + np.arange(n_groups)[:, None]
    # From the last category with mass on, the CDF is exactly g + 1: a zero-probability category
    # after it (a structural zero) gets no rounding slack, and `_tail` finds that category.
    last = m - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)
    return np.where(np.arange(m) >= last[:, None], np.arange(1, n_groups + 1)[:, None], cdf)


def _tail(cdf: np.ndarray) -> np.ndarray:
    """Each group's last category with mass (where its CDF reaches g + 1): points at the end of a
    row go there, never to a zero-probability category after it."""
    return np.argmax(cdf >= np.arange(1, cdf.shape[0] + 1)[:, None], axis=1)


def _point(labels: np.ndarray, rank: np.ndarray, offset: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Where row ``rank`` of its group falls: group + (rank + offset) / count (float64, in this order)."""
    return labels + (rank + offset) / counts


def _sorted_by_rows(cdf: np.ndarray, counts: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The categories of the rows sorted by group and rank: each row's point searched in the CDF."""
    n_groups, m = cdf.shape
    n = int(counts.sum())
    sorted_groups = np.repeat(np.arange(n_groups), counts)
    rank = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    points = _point(sorted_groups, rank, np.repeat(offset, counts), np.repeat(counts, counts))
    pos = np.searchsorted(cdf.ravel(), points, side="right")
    return np.clip(pos - sorted_groups * m, 0, _tail(cdf)[sorted_groups])


def _sorted_by_cells(cdf: np.ndarray, counts: np.ndarray, offset: np.ndarray) -> np.ndarray | None:
    """`_sorted_by_rows` computed per CDF cell (fewer cells than rows), or None where the shortcut
    may differ. When the whole flat CDF is sorted (float rounding of a row sum above 1 can break
    that), a row's category is the count of its own group's cells at or below its point, capped
    at the last category: a cell of another group below the point puts every own cell below it
    too, and one above it puts every own cell above it, where the cap or the clip at 0 decides.
    Points rise with the rank, so each cell's boundary is the first rank whose point reaches it: a
    closed form, corrected by evaluating the points exactly."""
    n_groups, m = cdf.shape
    labels = np.arange(n_groups)
    flat = cdf.ravel()
    if not np.all(flat[1:] >= flat[:-1]):  # (a NaN fails too)
        return None
    g, c, o = labels[:, None], np.maximum(counts, 1)[:, None], offset[:, None]  # (an empty group has no rank)
    limit = np.broadcast_to(counts[:, None], cdf.shape)
    first = np.clip(np.ceil((cdf - g) * c - o), 0, limit).astype(np.int64)  # ranks below this: points < cell
    while True:  # exact: step down while the rank below already reaches the cell, up while this one does not
        down = (first > 0) & (_point(g, first - 1, o, c) >= cdf)
        up = (first < limit) & (_point(g, first, o, c) < cdf)
        if not (down.any() or up.any()):
            break
        first += up.astype(np.int64) - down
    first = np.where(np.arange(m) >= _tail(cdf)[:, None], counts[:, None], first)  # points past the last
    # cell with mass: clipped into it
    per_cell = np.diff(first, axis=1, prepend=0)
    return np.repeat(np.tile(np.arange(m, dtype=code_dtype(m)), n_groups), per_cell.ravel())


def _fill(groups: np.ndarray, cond: np.ndarray, perm: np.ndarray, offset: np.ndarray, out: np.ndarray) -> None:
    """Write into ``out`` one category per row by systematic sampling in each group (module
    docstring): rows visited in ``perm`` order, group g's shared offset ``offset[g]``."""
    n_groups = cond.shape[0]
    counts = np.bincount(groups, minlength=n_groups)
    cdf = _cdf(cond)
    values = _sorted_by_cells(cdf, counts, offset) if cdf.size < groups.size else None
    if values is None:
        values = _sorted_by_rows(cdf, counts, offset)
    if n_groups > 1:  # values are by group, in visiting order inside one: move them to visiting order
        visiting = np.empty(values.size, dtype=out.dtype)
        visiting[_stable_order(groups[perm])] = values
        values = visiting
    out[perm] = values


def group_sample(groups: np.ndarray, cond: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row: row i is in group ``groups[i]``; ``cond[g]`` is that group's distribution."""
    n = groups.size
    out = np.zeros(n, dtype=np.int64)
    if n:
        perm = _permutation(rng, n)
        _fill(groups, cond, perm, rng.random(cond.shape[0]), out)
    return out


def _group_labels(parents: list[np.ndarray], sizes: list[int], n: int) -> tuple[np.ndarray, int]:
    """Each row's parent configuration as one label (mixed radix, first parent most significant)
    and the number of configurations."""
    n_groups = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
    dtype = _label_dtype(n_groups)
    if not parents:
        return np.zeros(n, dtype=dtype), 1
    groups = parents[0].astype(dtype)
    for column, size in zip(parents[1:], sizes[1:]):
        groups *= size  # every partial label is below n_groups: no overflow
        groups += column
    return groups, n_groups


class _Draws:
    """The run's random draws, made in their fixed order by one thread: per column a permutation of
    the rows and one offset per parent group, then the final shuffle; at most `DRAWS_AHEAD`
    permutations wait for their column (`done` frees a slot). Neither side keeps a draw once it
    has handed it on (a future holds its result as long as it is referenced)."""

    def __init__(self, rng: np.random.Generator, n: int, group_counts: list[int], shuffle: bool = True) -> None:
        self._waiting: list[Future | None] = [Future() for _ in group_counts]  # the consumers' side
        self.shuffle: Future = Future()
        self._room = threading.Semaphore(DRAWS_AHEAD)
        self._stopped = False
        self._thread = threading.Thread(target=self._draw, args=(rng, n, group_counts, list(self._waiting), shuffle),
                                        daemon=True)
        self._thread.start()

    def _draw(self, rng: np.random.Generator, n: int, group_counts: list[int], futures: list[Future | None],
              shuffle: bool) -> None:
        try:
            for k, n_groups in enumerate(group_counts):
                self._room.acquire()
                if self._stopped:
                    return
                perm = _permutation(rng, n) if n else None  # no rows: nothing is drawn
                future, futures[k] = futures[k], None
                future.set_result((perm, rng.random(n_groups) if n else None))
            self.shuffle.set_result(_permutation(rng, n) if shuffle else None)
        except BaseException as exc:  # hand the failure to whoever waits on a draw
            for future in (*futures, self.shuffle):
                if future is not None and not future.done():
                    future.set_exception(exc)

    def take(self, k: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Column k's (permutation, offsets); taken once."""
        future, self._waiting[k] = self._waiting[k], None
        return future.result()

    def done(self) -> None:
        self._room.release()

    def close(self) -> None:
        """Stop drawing (after a failure) and wait for the drawing thread."""
        self._stopped = True
        for _ in self._waiting:
            self._room.release()
        self._thread.join()


def _sampling_order(tree) -> list[tuple[str, tuple[str, ...]]]:
    """(attribute, parents) in sampling order: reverse elimination order, parents in domain order."""
    elim = dict(zip(tree.order, tree.elimination_cliques))
    return [(attr, tuple(a for a in elim[attr] if a != attr)) for attr in reversed(tree.order)]


class _Sampler:
    """One run's columns: column k is filled by a worker once its parents, its conditional table
    (queried from the model in sampling order by the calling thread) and its draws are ready.
    ``order`` and ``fixed`` (columns given, not sampled; then the rows are not shuffled) serve
    `sample_in_order`."""

    def __init__(self, model, n: int, rng: np.random.Generator, order: list | None = None,
                 fixed: dict[str, np.ndarray] | None = None) -> None:
        self.model, self.n = model, n
        self.sizes = dict(zip(model.domain.attrs, model.domain.shape))
        self.order = _sampling_order(model.tree) if order is None else list(order)
        self.fixed = fixed
        self.draws = _Draws(rng, n, [math.prod(self.sizes[p] for p in parents) for _, parents in self.order],
                            shuffle=fixed is None)
        self.conditionals: list[Future] = [Future() for _ in self.order]
        self.columns: dict[str, Future] = {}

    def query_conditionals(self) -> None:
        """Each column's counts (parent configurations x levels), one query at a time, in order."""
        for (attr, parents), future in zip(self.order, self.conditionals):
            try:
                table = self.model.marginals([parents + (attr,)])[0]
            except BaseException as exc:
                for pending in self.conditionals:
                    if not pending.done():
                        pending.set_exception(exc)
                raise
            future.set_result(table.reshape(-1, self.sizes[attr]))

    def column(self, k: int) -> np.ndarray:
        attr, parents = self.order[k]
        out = np.zeros(self.n, dtype=code_dtype(self.sizes[attr]))
        try:
            parent_columns = [self.columns[p].result() for p in parents]
            groups, _ = _group_labels(parent_columns, [self.sizes[p] for p in parents], self.n)
            cond = self.conditionals[k].result()
            perm, offset = self.draws.take(k)
            if self.n:
                _fill(groups, cond, perm, offset, out)
        finally:
            self.draws.done()
        return out

    def run(self, threads: int) -> dict[str, np.ndarray]:
        """Every column, in the final (shuffled) row order."""
        try:
            with ThreadPoolExecutor(threads, thread_name_prefix="pgm-sample") as pool:
                for attr, column in (self.fixed or {}).items():
                    self.columns[attr] = Future()
                    self.columns[attr].set_result(column)
                for k, (attr, _) in enumerate(self.order):  # submitted in order: a column's parents start first
                    self.columns[attr] = pool.submit(self.column, k)
                self.query_conditionals()
                columns = {attr: future.result() for attr, future in self.columns.items()}
                self.columns.clear()
                shuffle = self.draws.shuffle.result()
                if shuffle is None:  # given columns: the rows stay where they are
                    return columns
                attrs = self.model.domain.attrs  # each column is let go once shuffled: one copy at a time
                return dict(zip(attrs, pool.map(lambda a: columns.pop(a)[shuffle], attrs)))
        finally:
            self.draws.close()


def sample_rows(model, n: int | None = None, rng: SamplingSeed = None) -> pd.DataFrame:
    """``n`` rows (default round(model.total)) sampled from ``model`` (see the module docstring);
    a DataFrame in domain order.

    ``rng``: a Generator, an int seed or None (fresh OS entropy), as `marginals.randomness.sampling_rng`.
    """
    rng = sampling_rng(rng, "rng")
    n = int(round(model.total)) if n is None else int(n)
    if n < 0:
        raise ValueError(f"number of rows must be >= 0, got {n}")
    threads = thread_count()  # (may refuse a bad DP_MARGINALS_THREADS: before any thread starts)
    columns = _Sampler(model, n, rng).run(threads)
    return pd.DataFrame(columns, columns=list(model.domain.attrs), copy=False)  # the arrays are the frame's own


def sample_in_order(model, fixed: dict[str, np.ndarray], order: list[tuple[str, tuple[str, ...]]],
                    rng: SamplingSeed = None) -> pd.DataFrame:
    """Rows whose ``fixed`` columns (codes, all of one length) are given and whose other columns are
    drawn in ``order``: (attribute, parents), each attribute's parents given or drawn before it, its
    conditional under ``model`` given them exact (a perfect elimination order read backwards, see
    `pgm.conditional`). The rows are not shuffled: row i keeps the fixed values of row i."""
    rng = sampling_rng(rng, "rng")
    lengths = {len(c) for c in fixed.values()}
    if len(lengths) != 1:
        raise ValueError(f"fixed columns must be given and all of one length, got lengths {sorted(lengths)}")
    columns = _Sampler(model, lengths.pop(), rng, order, dict(fixed)).run(thread_count())
    return pd.DataFrame({a: columns[a] for a in model.domain.attrs}, columns=list(model.domain.attrs), copy=False)
