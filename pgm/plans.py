"""Static plans that keep the passes over large junction-tree tables few.

A node table is touched by many small tables: the potentials it hosts and the messages of its
children are summed into it, and the marginals of its potentials and separators are read out
of it. Done naively that is one full pass over the node per small table. The plans here are
computed once per tree (structure only) and replayed at every belief propagation:

- `AdditionPlan`: small tables are first merged pairwise into intermediate tables whose
  attribute union is still small (smallest union first), and only the few survivors are
  broadcast into the node table;
- `MarginalPlan`: targets are read out through a chain of single-axis sums, each starting
  from the smallest table already computed that contains the target, and each summing out
  the attribute that the fewest pending targets need, so intermediate tables are shared.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

Attrs = tuple[str, ...]


def _ordered(node: Attrs, attrs) -> Attrs:
    keep = set(attrs)
    return tuple(a for a in node if a in keep)


def _bshape(sizes: dict[str, int], target: Attrs, attrs: Attrs) -> tuple[int, ...]:
    return tuple(sizes[a] if a in attrs else 1 for a in target)


def reduce_axes(func, values: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``func`` (np.sum / np.max) over several axes (kept as size 1), one axis at a time, largest first.

    numpy's multi-axis reductions over non-contiguous axes are several times slower than a
    chain of single-axis reductions that shrink the table as fast as possible.
    """
    for axis in sorted(axes, key=lambda a: -values.shape[a]):
        values = func(values, axis=axis, keepdims=True)
    return values


def conditional(table: np.ndarray, summed: Sequence[int]) -> np.ndarray:
    """``table`` divided by its sum over the axes ``summed`` (0 where that sum is 0)."""
    denom = reduce_axes(np.sum, table, summed) if summed else table
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, table / denom, 0.0)


class AdditionPlan:
    """Sum tables over subsets of ``node`` (each given in node order) into one node table."""

    def __init__(self, node: Attrs, sizes: dict[str, int], items: Sequence[Attrs], merge_fraction: float = 0.25):
        self.node = node
        self.shape = tuple(sizes[a] for a in node)
        node_cells = math.prod(self.shape)
        limit = node_cells * merge_fraction
        live: dict[int, Attrs] = dict(enumerate(items))
        self.merges: list[tuple[int, int, tuple[int, ...], tuple[int, ...]]] = []
        next_id = len(items)
        while len(live) > 1:
            best = None
            keys = sorted(live)
            for x in range(len(keys)):
                for y in range(x + 1, len(keys)):
                    union = _ordered(node, set(live[keys[x]]) | set(live[keys[y]]))
                    cells = math.prod(sizes[a] for a in union)
                    if cells <= limit and (best is None or cells < best[0]):
                        best = (cells, keys[x], keys[y], union)
            if best is None:
                break
            _, i, j, union = best
            self.merges.append((i, j, _bshape(sizes, union, live[i]), _bshape(sizes, union, live[j])))
            del live[i], live[j]
            live[next_id] = union
            next_id += 1
        self.final = [(k, _bshape(sizes, node, live[k])) for k in sorted(live)]
        self.n_items = len(items)

    def run(self, tables: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """The node table: the sum of ``tables`` (in the plan's item order) broadcast onto the node.

        ``out`` (node-shaped, contents ignored) is filled instead of allocating a new table:
        on large nodes a fresh allocation costs more than the arithmetic (first-touch faults).
        """
        work = list(tables)
        for i, j, shape_i, shape_j in self.merges:
            work.append(work[i].reshape(shape_i) + work[j].reshape(shape_j))
        if out is None:
            out = np.empty(self.shape)
        if not self.final:
            out.fill(0.0)
            return out
        (k0, s0), *rest = self.final
        if not rest:
            out[...] = work[k0].reshape(s0)
            return out
        (k1, s1), *rest = rest
        np.add(work[k0].reshape(s0), work[k1].reshape(s1), out=out)
        for k, s in rest:
            out += work[k].reshape(s)
        return out


class MarginalPlan:
    """Read the marginals of ``targets`` (subsets of ``node``) out of a node table."""

    def __init__(self, node: Attrs, sizes: dict[str, int], targets: Sequence[Attrs]):
        tables: list[Attrs] = [node]
        self.steps: list[tuple[int, int]] = []  # (source table, axis summed out)
        ordered = [_ordered(node, t) for t in targets]
        pending = sorted(set(ordered), key=lambda t: (-math.prod(sizes[a] for a in t), t))
        where: dict[Attrs, int] = {}
        for k, target in enumerate(pending):
            current = min(
                (i for i, t in enumerate(tables) if set(target) <= set(t)),
                key=lambda i: (math.prod(sizes[a] for a in tables[i]), i),
            )
            rest = pending[k + 1 :]
            while tables[current] != target:
                extra = [a for a in tables[current] if a not in target]
                # sum out what the fewest later targets need; among those, the largest attribute
                drop = min(extra, key=lambda a: (sum(a in t for t in rest), -sizes[a], node.index(a)))
                reduced = tuple(a for a in tables[current] if a != drop)
                if reduced in tables:
                    current = tables.index(reduced)
                    continue
                self.steps.append((current, tables[current].index(drop)))
                tables.append(reduced)
                current = len(tables) - 1
            where[target] = current
        self.tables = tables
        # Per requested target: table index and the transposition into the requested order.
        self.outputs = []
        for t, want in zip(ordered, targets):
            perm = tuple(t.index(a) for a in want)
            self.outputs.append((where[t], None if perm == tuple(range(len(perm))) else perm))

    def run(self, table: np.ndarray) -> list[np.ndarray]:
        """The target marginals (each with axes in its requested order)."""
        work = [table]
        for source, axis in self.steps:
            work.append(work[source].sum(axis=axis))
        return [work[i] if perm is None else work[i].transpose(perm) for i, perm in self.outputs]
