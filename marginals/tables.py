"""Contingency tables (marginals) of integer-coded columns: the embedded numpy backend.

Many marginals are computed in one pass that shares work:
- a clique requested twice (or in another attribute order) is counted once;
- a clique contained in another requested clique is obtained by summing the larger table;
- the remaining (maximal) cliques are counted by ravel-index + ``np.bincount`` over row
  chunks that stay in cache, each column cast to an index dtype once per chunk;
- the maximal cliques are split across threads (numpy releases the GIL in its kernels).

No Python loop runs over rows or cells; the loops are over chunks and cliques.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

#: rows per chunk: small enough that a chunk's index arrays stay in L2 cache.
CHUNK_ROWS = 1 << 16


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
    for cl in distinct:
        supersets = [s for s in maximal if len(s) > len(cl) and set(cl) <= set(s)]
        if supersets:
            source[cl] = min(supersets, key=lambda s: (_cells(shape, s), s))
        else:
            maximal.append(cl)
    n_rows = len(columns[0]) if columns else 0
    counted = _count_maximal(columns, shape, maximal, n_rows, weights, n_jobs)
    tables: dict[tuple[int, ...], np.ndarray] = dict(counted)
    for cl in sorted(source, key=len, reverse=True):
        big = source[cl]
        drop = tuple(i for i, a in enumerate(big) if a not in cl)
        tables[cl] = tables[big].sum(axis=drop)
    out = []
    for cl in cliques:
        table = tables[canon[cl]]
        if cl != canon[cl]:
            table = np.transpose(table, [canon[cl].index(a) for a in cl])
        out.append(np.ascontiguousarray(table))
    return out


def _cells(shape: tuple[int, ...], clique: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in clique)


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


def _count_group(columns, shape, cliques, n_rows, weights):
    """Count every clique in ``cliques`` over all rows, chunk by chunk."""
    out_dtype = np.int64 if weights is None else np.float64
    sizes = {cl: _cells(shape, cl) for cl in cliques}
    acc = {cl: np.zeros(sizes[cl], dtype=out_dtype) for cl in cliques}
    if not cliques:
        return {}
    if n_rows == 0:
        return {cl: acc[cl].reshape([shape[a] for a in cl]) for cl in cliques}
    used = sorted({a for cl in cliques for a in cl})
    buf = np.empty(min(CHUNK_ROWS, n_rows), dtype=np.intp)
    for start in range(0, n_rows, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n_rows)
        k = stop - start
        cast = {a: columns[a][start:stop].astype(np.intp) for a in used}
        w = None if weights is None else weights[start:stop]
        idx = buf[:k]
        for cl in cliques:
            if len(cl) == 0:
                acc[cl] += w.sum() if w is not None else k
                continue
            if len(cl) == 1:
                idx_view = cast[cl[0]]
            else:
                np.copyto(idx, cast[cl[0]])
                for a in cl[1:]:
                    np.multiply(idx, shape[a], out=idx)
                    np.add(idx, cast[a], out=idx)
                idx_view = idx
            acc[cl] += np.bincount(idx_view, weights=w, minlength=sizes[cl]).astype(out_dtype, copy=False)
    return {cl: acc[cl].reshape([shape[a] for a in cl]) for cl in cliques}
