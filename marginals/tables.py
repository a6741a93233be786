"""Contingency tables (marginals) of integer-coded columns: the embedded numpy backend.

Many marginals are computed in one pass that shares work:
- a clique requested twice (or in another attribute order) is counted once;
- a clique contained in another requested clique is obtained by summing the larger table;
- on tables of ``MERGE_MIN_ROWS`` rows or more, several of the remaining cliques are counted
  through one small union table (e.g. the three 2-way tables of a triangle from one 3-way
  count) and summed down through shared intermediate tables, which cuts the passes over the
  rows three- to sevenfold (all pairs of 80 census-like attributes: 3,160 tables, 445 passes);
- the remaining (maximal) cliques are counted by ravel-index + ``np.bincount`` over row
  chunks that stay in cache, each column cast to an index dtype once per chunk (uint16 for
  tables of fewer than 65536 cells, else uint32 or intp);
- on tables of 4 x ``CHUNK_ROWS`` rows or more, the maximal cliques are split across threads
  (numpy releases the GIL in its kernels).

No Python loop runs over rows or cells; the loops are over chunks and cliques.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

#: rows per chunk: a chunk's index array stays in L2 cache, and a union table of up to
#: MERGE_CELLS cells is zeroed and added once per 2 cells counted at most.
CHUNK_ROWS = 1 << 17

#: tables with at least this many rows count several cliques through one union table ...
MERGE_MIN_ROWS = 1 << 15
#: ... of at most this many cells (and at most rows / 16), so that it stays in cache.
MERGE_CELLS = 1 << 16
#: tables of at most this many cells build their ravel index in uint16 (every index and
#: every multiplier then fits in 16 bits).
SMALL_INDEX_CELLS = (1 << 16) - 1


def count_tables(
    columns: Sequence[np.ndarray],
    shape: Sequence[int],
    cliques: Sequence[Sequence[int]],
    weights: np.ndarray | None = None,
    n_jobs: int | None = None,
) -> list[np.ndarray]:
    """Contingency tables of ``columns`` (one 1-D code array per axis) for each clique of axes.

    Tables have axes in the order of each clique; counts are int64 without weights and
    float64 with weights. ``n_jobs`` threads share the maximal cliques (default: all cores, at most 2).
    """
    shape = tuple(int(m) for m in shape)
    cliques = [tuple(int(a) for a in cl) for cl in cliques]
    canon = {cl: tuple(sorted(cl)) for cl in cliques}
    distinct = sorted(set(canon.values()), key=lambda c: (-len(c), c))
    # Choose, for every distinct clique, the smallest strict superset to derive it from.
    source: dict[tuple[int, ...], tuple[int, ...]] = {}
    maximal: list[tuple[int, ...]] = []
    containing: dict[int, list[tuple[int, ...]]] = {}  # attribute -> maximal cliques holding it
    for cl in distinct:
        # a superset holds every attribute of cl: look only among those holding its rarest one
        pool = min((containing.get(a, []) for a in cl), key=len) if cl else maximal
        supersets = [s for s in pool if len(s) > len(cl) and set(cl).issubset(s)]
        if supersets:
            source[cl] = min(supersets, key=lambda s: (_cells(shape, s), s))
        else:
            maximal.append(cl)
            for a in cl:
                containing.setdefault(a, []).append(cl)
    n_rows = len(columns[0]) if columns else 0
    # On large tables, count several maximal cliques in one pass over the rows through a small
    # union table (one bincount serves e.g. three 2-way tables), then sum the union down.
    unions = _merge_cliques(maximal, shape, n_rows) if n_rows >= MERGE_MIN_ROWS else {cl: cl for cl in maximal}
    counted = _count_maximal(columns, shape, sorted(set(unions.values())), n_rows, weights, n_jobs)
    tables: dict[tuple[int, ...], np.ndarray] = dict(counted)
    members: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for cl, union in unions.items():
        if cl != union:
            members.setdefault(union, []).append(cl)
    for union, wanted in members.items():
        tables.update(_sum_down(tables[union], union, wanted, shape))
    for cl in sorted(source, key=len, reverse=True):
        big = source[cl]
        drop = tuple(i for i, a in enumerate(big) if a not in cl)
        tables[cl] = tables[big].sum(axis=drop)
    out = []
    handed_out: set[int] = set()
    for cl in cliques:
        table = tables[canon[cl]]
        if cl != canon[cl]:
            table = np.transpose(table, [canon[cl].index(a) for a in cl])
        # np.asarray keeps a 0-d table 0-d (np.ascontiguousarray would make it 1-d); a table
        # requested twice is copied so that the caller never gets two aliases of one buffer.
        table = np.asarray(table, order="C")
        if id(table) in handed_out:
            table = table.copy()
        handed_out.add(id(table))
        out.append(table)
    return out


def _cells(shape: tuple[int, ...], clique: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in clique)


def _merge_cliques(
    maximal: list[tuple[int, ...]], shape: tuple[int, ...], n_rows: int
) -> dict[tuple[int, ...], tuple[int, ...]]:
    """Map every clique to the union table it is counted through (greedy, deterministic).

    Starting from the largest clique not yet placed, attributes are added one at a time while
    the union stays within the cell budget (``MERGE_CELLS``, and at most ``n_rows / 16`` so that
    summing the union down never costs more than the pass it saves), each time the attribute
    that completes the most unplaced cliques. Each union keeps, per attribute, the unplaced
    cliques that only that attribute is missing from, updated as attributes join: the work is
    proportional to the (clique, attribute) incidences of the union's attributes, never to rows
    or cells.
    """
    budget = min(MERGE_CELLS, n_rows // 16)
    by_attr: dict[int, list[tuple[int, ...]]] = {}
    for cl in maximal:
        for a in cl:
            by_attr.setdefault(a, []).append(cl)
    todo = set(maximal)
    singles = sorted(cl for cl in maximal if len(cl) == 1)
    out: dict[tuple[int, ...], tuple[int, ...]] = {}
    for seed in sorted(maximal, key=lambda c: (-_cells(shape, c), c)):
        if seed not in todo:
            continue
        todo.discard(seed)
        union, cells, members = set(), 1, [seed]
        missing: dict[tuple[int, ...], int] = {}  # touched unplaced clique -> attributes not in the union
        gains: dict[int, set[tuple[int, ...]]] = {s[0]: {s} for s in singles if s in todo}
        for x in seed:
            _join(x, union, missing, gains, by_attr, todo)
        cells = _cells(shape, seed)
        while True:
            fits = [a for a, g in gains.items() if g and a not in union and cells * shape[a] <= budget]
            if not fits:
                break
            x = max(fits, key=lambda a: (len(gains[a]), -shape[a], -a))
            placed = gains.pop(x)
            members += sorted(placed)
            todo.difference_update(placed)
            cells *= shape[x]
            _join(x, union, missing, gains, by_attr, todo)
        u = tuple(sorted(union))
        for cl in members:
            out[cl] = u
    return out


def _join(x, union, missing, gains, by_attr, todo) -> None:
    """Add attribute ``x`` to ``union``; cliques left missing one attribute become that attribute's gain."""
    union.add(x)
    by_attr[x] = live = [c for c in by_attr[x] if c in todo]  # prune placed cliques
    for c in live:
        if len(c) == 2:  # the common case, without the bookkeeping: c now misses its other attribute
            y = c[1] if c[0] == x else c[0]
            if y not in union:
                gains.setdefault(y, set()).add(c)
            continue
        left = missing.get(c, len(c)) - 1
        missing[c] = left
        if left == 1:
            y = next(a for a in c if a not in union)
            gains.setdefault(y, set()).add(c)


def _sum_down(
    table: np.ndarray, union: tuple[int, ...], wanted: list[tuple[int, ...]], shape: tuple[int, ...]
) -> dict[tuple[int, ...], np.ndarray]:
    """The tables of ``wanted`` (sorted sub-cliques of ``union``) summed from the union's table.

    Integer counts are summed one axis at a time, largest axis first, through shared
    intermediate tables (all pairs of a 5-way union cost about two passes over it instead of
    ten); float (weighted) tables are summed directly, in the order they always were.
    """
    if table.dtype.kind == "f":
        return {cl: table.sum(axis=tuple(i for i, a in enumerate(union) if a not in cl)) for cl in wanted}
    memo: dict[tuple[int, ...], np.ndarray] = {union: table}

    def margin(sub: tuple[int, ...]) -> np.ndarray:
        if sub not in memo:
            x = min((a for a in union if a not in sub), key=lambda a: (shape[a], a))  # dropped last
            parent = tuple(sorted(sub + (x,)))
            memo[sub] = margin(parent).sum(axis=parent.index(x))
        return memo[sub]

    return {cl: margin(cl) for cl in wanted}


def _count_maximal(columns, shape, maximal, n_rows, weights, n_jobs):
    if n_jobs is None:
        n_jobs = min(2, os.cpu_count() or 1)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
    # Balance threads by estimated work (one pass per clique; more columns -> more work).
    groups: list[list[tuple[int, ...]]] = [[] for _ in range(max(1, min(n_jobs, len(maximal))))]
    load = [0] * len(groups)
    for cl in sorted(maximal, key=lambda c: (-len(c), c)):
        g = load.index(min(load))
        groups[g].append(cl)
        load[g] += len(cl) + 1
    if len(groups) == 1 or n_rows < 4 * CHUNK_ROWS:
        results = [_count_group(columns, shape, maximal, n_rows, weights)]
    else:
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            results = list(pool.map(lambda g: _count_group(columns, shape, g, n_rows, weights), groups))
    merged: dict[tuple[int, ...], np.ndarray] = {}
    for part in results:
        merged.update(part)
    return merged


def _index_dtype(cells: int) -> np.dtype:
    """The narrowest unsigned dtype that holds every ravel index (and multiplier) of a table."""
    if cells <= SMALL_INDEX_CELLS:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32) if cells <= np.iinfo(np.uint32).max else np.dtype(np.intp)


def _count_group(columns, shape, cliques, n_rows, weights):
    """Count every clique in ``cliques`` over all rows, chunk by chunk."""
    out_dtype = np.int64 if weights is None else np.float64
    sizes = {cl: _cells(shape, cl) for cl in cliques}
    acc = {cl: np.zeros(sizes[cl], dtype=out_dtype) for cl in cliques}
    if not cliques:
        return {}
    if n_rows == 0:
        return {cl: acc[cl].reshape([shape[a] for a in cl]) for cl in cliques}
    # Index math in the narrowest dtype that holds the table's indices (uint16: a quarter of the
    # memory traffic of intp and four times the SIMD width; np.bincount takes any of them).
    index_dtype = {cl: _index_dtype(sizes[cl]) for cl in cliques}
    # Every per-chunk array lives in a buffer made once: fresh arrays per chunk would be page-faulted
    # anew each time where freed memory goes back to the OS (dask workers set MALLOC_TRIM_THRESHOLD_).
    chunk = min(CHUNK_ROWS, n_rows)
    bufs = {dt: np.empty(chunk, dtype=dt) for dt in set(index_dtype.values())}
    wide = np.empty(chunk, dtype=np.intp)  # np.bincount's input dtype: cast here, not in a temporary
    casts: dict[np.dtype, np.ndarray] = {}  # per dtype, one row per column (rows never used stay unmapped)
    for start in range(0, n_rows, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n_rows)
        k = stop - start
        cast: dict[tuple[int, np.dtype], np.ndarray] = {}  # each column cast once per chunk and dtype

        def col(a: int, dt: np.dtype) -> np.ndarray:
            if columns[a].dtype == dt:
                return columns[a][start:stop]
            if (a, dt) not in cast:
                if dt not in casts:
                    casts[dt] = np.empty((len(columns), chunk), dtype=dt)
                np.copyto(casts[dt][a, :k], columns[a][start:stop], casting="unsafe")
                cast[a, dt] = casts[dt][a, :k]
            return cast[a, dt]

        w = None if weights is None else weights[start:stop]
        for cl in cliques:
            if len(cl) == 0:
                acc[cl] += w.sum() if w is not None else k
                continue
            if len(cl) == 1:
                idx = columns[cl[0]][start:stop]
            else:
                dt = index_dtype[cl]
                idx = bufs[dt][:k]
                np.multiply(col(cl[0], dt), shape[cl[1]], out=idx)
                np.add(idx, col(cl[1], dt), out=idx)
                for a in cl[2:]:
                    np.multiply(idx, shape[a], out=idx)
                    np.add(idx, col(a, dt), out=idx)
            if idx.dtype != np.intp:
                np.copyto(wide[:k], idx, casting="unsafe")
                idx = wide[:k]
            acc[cl] += np.bincount(idx, weights=w, minlength=sizes[cl]).astype(out_dtype, copy=False)
    return {cl: acc[cl].reshape([shape[a] for a in cl]) for cl in cliques}
