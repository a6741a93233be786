"""Rows drawn each under its own evidence, vectorised over the rows: forward filtering, backward sampling.

For rows that all give the attributes E (each row its own values), the model conditioned on a
row's values e is the model with E fixed: every potential clique C becomes a table over C \\ E, its
slice at e (a gather per row), and the cliques C \\ E span a junction tree over the other
attributes (E is not in it, so no table grows with E). Per chunk of rows, on that tree:

- collect (leaves -> roots): each node's per-row log-table is the sum of the slices it hosts
  plus its children's messages; its message up is the logsumexp over the attributes it does not
  share with its parent;
- sample (roots -> leaves): each root draws one cell per row from its table (everything below
  it has been summed in); each child then draws its other attributes from its own table sliced at
  the separator values its parent drew: p(child | separator, e) is exactly that slice.

A row whose evidence has probability zero has a root table of -inf (or a fully given clique at
-inf): it is reported, not drawn. Each row takes one uniform per node (inverse CDF), in node
order, chunk by chunk: the same seed gives the same rows. The work is rows x the reduced tree's
cells (chunks hold at most `CHUNK_CELLS` cells); `pgm.conditional` picks this or the pinned
elimination order, whichever is cheaper for a group of rows.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from marginals.domain import code_dtype

from .factor import logsumexp
from .junction_tree import JunctionTree, build_junction_tree

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
    free = [] if tree is None else list(tree.domain.attrs)
    out = {a: np.zeros(n, dtype=code_dtype(domain[a])) for a in free}
    impossible = np.zeros(n, dtype=bool)
    slices = _slices(model, given)
    cells = 1 if tree is None else sum(tree.domain.size(node) for node in tree.nodes)
    step = max(1, CHUNK_CELLS // max(cells, 1))
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        chunk = {a: np.asarray(v[rows], dtype=np.int64) for a, v in values.items()}
        drawn, bad = _chunk(tree, slices, chunk, domain, rng)
        for a, v in drawn.items():
            out[a][rows] = v
        impossible[rows] = bad
    return out, impossible


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
        tables[i] = tables[i] + part.reshape((m,) + tuple(domain[a] if a in free else 1 for a in node))
    return tables, bad


def _draw_cells(log_table: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One flat cell per row from (rows, cells) log-weights by inverse CDF; rows with no mass flagged."""
    peak = log_table.max(axis=1, keepdims=True)
    dead = ~np.isfinite(peak[:, 0])
    with np.errstate(invalid="ignore"):
        weights = np.exp(log_table - np.where(dead[:, None], 0.0, peak))
    cdf = np.cumsum(weights, axis=1)
    u = rng.random(len(log_table)) * cdf[:, -1]
    cell = (cdf <= u[:, None]).sum(axis=1)
    return np.minimum(cell, log_table.shape[1] - 1), dead


def _chunk(tree, slices, chunk, domain, rng) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One chunk of rows: collect, then sample roots to leaves (module docstring)."""
    m = len(next(iter(chunk.values())))
    if tree is None:
        return {}, _node_tables_given_only(slices, chunk, domain, m)
    tables, bad = _node_tables(tree, slices, chunk, domain, m)
    for child, parent in tree.collect:
        node, sep = tree.nodes[child], set(tree.separator(child))
        message = logsumexp(tables[child], [1 + k for k, a in enumerate(node) if a not in sep])
        shape = (m,) + tuple(domain[a] if a in sep else 1 for a in tree.nodes[parent])
        tables[parent] = tables[parent] + message.reshape(shape)
    drawn: dict[str, np.ndarray] = {}
    for i in _top_down(tree):
        node = tree.nodes[i]
        table = tables[i]
        if tree.parent[i] is not None:  # slice at the separator values drawn above
            index = (np.arange(m),) + tuple(drawn[a] if a in drawn else slice(None) for a in node)
            table = table[index]
        rest = [a for a in node if a not in drawn]
        cell, dead = _draw_cells(table.reshape(m, -1), rng)
        bad |= dead
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
