"""Rows drawn each under its own evidence, vectorised: forward filtering, backward sampling.

For rows that all give the attributes E (each row its own values), the model conditioned on a
row's values e is the model with E fixed: every potential clique C becomes a table over C \\ E, its
slice at e, and the cliques C \\ E span a junction tree over the other attributes (E is not in it,
so no table grows with E). Rows with the same values share the work: per chunk of distinct
evidence, on that tree,

- collect (leaves -> roots): each node's log-table (per evidence) is the sum of the slices it
  hosts plus its children's messages; its message up is the logsumexp over the attributes it
  does not share with its parent;
- sample (roots -> leaves): each root draws a cell per row from its table (everything below it
  has been summed in); each child then draws its other attributes from its own table sliced at
  the separator values drawn above: p(child | separator, e) is exactly that slice. The rows of
  one (evidence, separator values) group are filled by the sampler's systematic sampling
  (`pgm.sampling.group_sample`), as in unconditional sampling.

A row whose evidence has probability zero has a root table of -inf (or a fully given clique at
-inf): it is reported, not drawn. The draws come in a fixed order (chunks, then nodes), so a
seed gives the same rows. The work is distinct evidence x the reduced tree's cells (chunks hold
at most `CHUNK_CELLS` cells); `pgm.conditional` picks this or the pinned elimination order,
whichever is cheaper for a group of rows.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from marginals.domain import code_dtype

from .factor import logsumexp
from .junction_tree import JunctionTree, build_junction_tree
from .sampling import group_sample

#: cells of per-row tables held at once (all nodes of a chunk of rows; float64)
CHUNK_CELLS = 1 << 22


def reduced_tree(model, given: tuple[str, ...]) -> JunctionTree | None:
    """The junction tree of the model's cliques without the ``given`` attributes (None when every
    attribute is given)."""
    free = [a for a in model.domain.attrs if a not in given]
    if not free:
        return None
    cliques = {tuple(a for a in c if a not in given) for c in model.cliques}
    return build_junction_tree(model.domain.project(free), [c for c in cliques if c])


def _slices(model, given: tuple[str, ...]) -> list[tuple[tuple[str, ...], tuple[str, ...], np.ndarray]]:
    """Per potential clique: (its given attributes, its free ones in domain order, the table as
    (given cells, free cells))."""
    out = []
    for clique, factor in model.potentials.items():
        pinned = tuple(a for a in clique if a in given)
        free = model.domain.canonical([a for a in clique if a not in given])
        table = factor.transpose(pinned + free).values
        out.append((pinned, free, table.reshape(int(np.prod([model.domain[a] for a in pinned], dtype=np.int64)), -1)))
    return out


def sample_rows_given(model, tree: JunctionTree | None, values: Mapping[str, np.ndarray],
                      rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(every free attribute's codes, one per row; which rows' evidence has probability zero) for
    rows giving ``values`` (codes of the given attributes, all of one length)."""
    given = tuple(values)
    n = len(next(iter(values.values())))
    domain = model.domain
    out = {a: np.zeros(n, dtype=code_dtype(domain[a])) for a in ([] if tree is None else tree.domain.attrs)}
    impossible = np.zeros(n, dtype=bool)
    distinct, inverse = unique_rows([np.asarray(values[a], dtype=np.int64) for a in given], [domain[a] for a in given])
    by_evidence = np.argsort(inverse, kind="stable")
    first_row = np.searchsorted(inverse[by_evidence], np.arange(len(distinct) + 1))
    slices = _slices(model, given)
    step = max(1, CHUNK_CELLS // (1 if tree is None else tree.size_cells))
    for d0 in range(0, len(distinct), step):
        d1 = min(len(distinct), d0 + step)
        rows = by_evidence[first_row[d0]:first_row[d1]]
        chunk = {a: distinct[d0:d1, j].astype(np.int64) for j, a in enumerate(given)}
        drawn, bad = _chunk(tree, slices, chunk, domain, inverse[rows] - d0, rng)
        for a, v in drawn.items():
            out[a][rows] = v
        impossible[rows] = bad[inverse[rows] - d0]
    return out, impossible


def unique_rows(columns: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of codes ``columns`` (rows, columns), sorted; each row's index among them):
    one sort of mixed-radix keys when they fit in int64."""
    if float(np.prod(sizes, dtype=np.float64)) < 2.0**62:
        key = np.zeros(len(columns[0]), dtype=np.int64)
        for column, size in zip(columns, sizes):
            key = key * size + column
        keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return np.column_stack([c[first] for c in columns]), inverse.ravel()
    distinct, inverse = np.unique(np.column_stack(columns), axis=0, return_inverse=True)
    return distinct, inverse.ravel()


def _gather(pinned, table: np.ndarray, chunk: Mapping[str, np.ndarray], domain, m: int) -> np.ndarray:
    """Each row's slice of a clique table at its given values: (rows, free cells)."""
    if not pinned:
        return np.broadcast_to(table[0], (m, table.shape[1]))
    index = np.ravel_multi_index(tuple(chunk[a] for a in pinned), tuple(domain[a] for a in pinned))
    return table[index]


def _node_tables(tree: JunctionTree, slices, chunk, domain, m: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Per node, the per-row sum of the slices it hosts (rows, *node shape); the rows whose
    fully given cliques are at -inf."""
    tables = [np.zeros((m,) + tree.domain.project(node).shape) for node in tree.nodes]
    bad = np.zeros(m, dtype=bool)
    for pinned, free, table in slices:
        part = _gather(pinned, table, chunk, domain, m)
        if not free:
            bad |= np.isneginf(part[:, 0])
            continue
        hosts = tree.containing(free)
        i = min(hosts, key=lambda h: (tree.domain.size(tree.nodes[h]), h))
        node = tree.nodes[i]
        tables[i] += part.reshape((m,) + tuple(domain[a] if a in free else 1 for a in node))
    return tables, bad


def _group_cells(log_table: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One cell per row from its group's row of (groups, cells) log-weights (`pgm.sampling.group_sample`:
    systematic sampling per group; a group with no mass, only an impossible row's, is uniform)."""
    used, local = np.unique(groups, return_inverse=True)
    if 2 * len(used) < len(log_table):  # only the groups some row is in
        log_table, groups = log_table[used], local.ravel()
    peak = log_table.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.exp(log_table - np.where(np.isfinite(peak), peak, 0.0))
    return group_sample(groups, weights, rng)


def _chunk(tree, slices, chunk, domain, rows: np.ndarray, rng) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The rows of one chunk of distinct evidence (``rows``: each row's evidence in the chunk):
    collect per evidence, then sample roots to leaves per row (module docstring)."""
    m = len(next(iter(chunk.values())))
    if tree is None:
        return {}, _node_tables_given_only(slices, chunk, domain, m)
    tables, bad = _node_tables(tree, slices, chunk, domain, m)
    for child, parent in tree.collect:
        node, sep = tree.nodes[child], set(tree.separator(child))
        message = logsumexp(tables[child], [1 + k for k, a in enumerate(node) if a not in sep])
        tables[parent] += message.reshape((m,) + tuple(domain[a] if a in sep else 1 for a in tree.nodes[parent]))
    drawn: dict[str, np.ndarray] = {}
    for i in _top_down(tree):
        node = tree.nodes[i]
        sep = [a for a in node if a in drawn]
        rest = [a for a in node if a not in drawn]
        table = np.moveaxis(tables[i], [1 + node.index(a) for a in sep], list(range(1, 1 + len(sep))))
        groups = rows.astype(np.int64)
        for a in sep:  # the row's evidence, then its separator values (mixed radix)
            groups = groups * domain[a] + drawn[a]
        if tree.parent[i] is None:
            bad |= np.isneginf(table.reshape(m, -1).max(axis=1))
        cell = _group_cells(table.reshape(-1, int(np.prod([domain[a] for a in rest]))), groups, rng)
        for a, v in zip(rest, np.unravel_index(cell, tuple(domain[a] for a in rest))):
            drawn[a] = v
    return drawn, bad


def _node_tables_given_only(slices, chunk, domain, m: int) -> np.ndarray:
    """Every attribute given: the rows whose cliques are at -inf."""
    bad = np.zeros(m, dtype=bool)
    for pinned, _, table in slices:
        bad |= np.isneginf(_gather(pinned, table, chunk, domain, m)[:, 0])
    return bad


def _top_down(tree: JunctionTree) -> list[int]:
    """Nodes with every parent before its children: each root, then the distribute order."""
    return list(tree.roots) + [child for _, child in tree.distribute]
