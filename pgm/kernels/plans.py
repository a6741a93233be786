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

import functools
import math
from typing import Callable, Sequence

import numpy as np

from . import threads
from .threads import einsum

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


def sum_out(values: np.ndarray, axes: Sequence[int], order: Sequence[int] | None = None) -> np.ndarray:
    """``values`` summed over ``axes``, in one pass; the kept axes in ``order`` (default: as they come).

    numpy's axis sums crawl when the cells after the summed axis are few (an inner loop of a
    couple of elements per call); one einsum pass is several times faster there and for several
    axes at once. A single leading axis (rows added whole) stays with numpy. Large tables are
    summed slab by slab on every core (`threads.sum_kept`). The choice is `sum_plan`'s.
    """
    return sum_plan(values.shape, tuple(axes), None if order is None else tuple(order))(values)


@functools.lru_cache(maxsize=4096)
def sum_plan(shape: tuple[int, ...], axes: tuple[int, ...], order: tuple[int, ...] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """`sum_out` over ``axes`` (kept axes in ``order``) for tables of ``shape``, its choices made
    once per shape: the hot loops call the returned function tens of times per propagation."""
    axes = sorted(set(axes))
    labels = list(range(len(shape)))
    kept = [i for i in labels if i not in axes]
    if axes and math.prod(shape) >= threads.MIN_CELLS:  # large: slab by slab, on every core
        target = kept if order is None else list(order)
        return lambda values: threads.sum_kept(values, target)
    if order is not None and list(order) != kept:
        wanted = list(order)
        return lambda values: einsum(values, labels, wanted)
    if not axes:
        return lambda values: values
    if axes == [0]:
        return lambda values: values.sum(axis=0)
    return lambda values: einsum(values, labels, kept)


def conditional(table: np.ndarray, summed: Sequence[int]) -> np.ndarray:
    """``table`` divided by its sum over the axes ``summed`` (0 where that sum is 0)."""
    denom = reduce_axes(np.sum, table, summed) if summed else table
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, table / denom, 0.0)


class AdditionPlan:
    """Sum tables over subsets of ``node`` (each given in node order) into one node table."""

    def __init__(self, node: Attrs, sizes: dict[str, int], items: Sequence[Attrs], merge_fraction: float = 0.25,
                 limit: int | None = None):
        self.node = node
        self.shape = tuple(sizes[a] for a in node)
        node_cells = math.prod(self.shape)
        if limit is None:  # merged tables of at most this many cells
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
        # cells the merges and the exponentials pass over (a merge: its union; exp: each summand)
        self.merge_cells = sum(math.prod(max(x, y) for x, y in zip(si, sj)) for _, _, si, sj in self.merges)
        self.exp_cells = sum(math.prod(shape) for _, shape in self.final)

    def _final(self, tables: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The merged summands, each shaped to broadcast onto the node."""
        work = list(tables)
        for i, j, shape_i, shape_j in self.merges:
            work.append(work[i].reshape(shape_i) + work[j].reshape(shape_j))
        return [work[k].reshape(s) for k, s in self.final]

    def run(self, tables: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """The node table: the sum of ``tables`` (in the plan's item order) broadcast onto the node.

        ``out`` (node-shaped, contents ignored) is filled instead of allocating a new table:
        on large nodes a fresh allocation costs more than the arithmetic (first-touch faults).
        """
        return self._combine(self._final(tables), np.add, 0.0, out)

    def run_exp(self, tables: Sequence[np.ndarray], out: np.ndarray | None = None) -> tuple[np.ndarray, float | None]:
        """exp(node table - bound) and the bound (the sum of the merged summands' maxima, >= the
        table's max) in one pass over the node: the product of the summands' shifted
        exponentials. The bound is None (and the table unusable) when a maximum is not finite."""
        factors, bound = self.exp_factors(tables)
        if bound is None:
            return (np.empty(self.shape) if out is None else out), None
        return self.product(factors, out), bound

    def exp_factors(self, tables: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float | None]:
        """The merged summands' shifted exponentials exp(summand - its max), whose product is
        exp(node table - bound), and the bound (None, and no factors, when a maximum is not finite)."""
        final = [np.ascontiguousarray(t) for t in self._final(tables)]  # strided views are slow to reduce and exp
        peaks = [float(t.max()) for t in final]
        bound = sum(peaks)
        if not np.isfinite(bound) or not all(np.isfinite(peaks)):
            return [], None
        exps = [np.subtract(t, p) for t, p in zip(final, peaks)]
        for table in exps:
            np.exp(table, out=table)
        return exps, bound

    def product(self, factors: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """The node table: the product of ``factors`` (from `exp_factors`) broadcast onto the node."""
        return self._combine(list(factors), np.multiply, 1.0, out)

    def scopes(self) -> list[tuple[int, ...]]:
        """The node axes each merged summand spans (the axes `exp_factors`' tables are not 1 on)."""
        return [tuple(a for a, n in enumerate(shape) if n != 1) for _, shape in self.final]

    def _combine(self, final: list[np.ndarray], op, empty: float, out: np.ndarray | None) -> np.ndarray:
        if out is None:
            out = np.empty(self.shape)
        if not final:
            out.fill(empty)
            return out
        if len(final) == 1:
            out[...] = final[0]
            return out
        return threads.chain(op, final, out)


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
        self._sums = [sum_plan(tuple(sizes[a] for a in tables[source]), (axis,)) for source, axis in self.steps]
        # Per requested target: table index and the transposition into the requested order.
        self.outputs = []
        for t, want in zip(ordered, targets):
            perm = tuple(t.index(a) for a in want)
            self.outputs.append((where[t], None if perm == tuple(range(len(perm))) else perm))

    def run(self, table: np.ndarray, factor: np.ndarray | None = None) -> list[np.ndarray]:
        """The target marginals (each with axes in its requested order) of ``table``, or of ``table``
        times ``factor`` (broadcast onto it) without forming that product."""
        work = [table]
        for (source, axis), summed in zip(self.steps, self._sums):
            if source == 0 and factor is not None:
                work.append(threads.sum_kept(table, [k for k in range(table.ndim) if k != axis], factor))
            else:
                work.append(summed(work[source]))
        if factor is not None and any(i == 0 for i, _ in self.outputs):  # a target is the whole node
            work[0] = table * factor
        return [work[i] if perm is None else work[i].transpose(perm) for i, perm in self.outputs]


@functools.lru_cache(maxsize=4096)
def addition_plan(layout: tuple[tuple[str, int], ...], items: tuple[Attrs, ...]) -> AdditionPlan:
    """The `AdditionPlan` of a node (its attributes and sizes, in table order) and summands, made
    once: consecutive fits (AIM's rounds) rebuild trees that share most of their nodes."""
    return AdditionPlan(tuple(a for a, _ in layout), dict(layout), items)


@functools.lru_cache(maxsize=4096)
def marginal_plan(layout: tuple[tuple[str, int], ...], targets: tuple[Attrs, ...]) -> MarginalPlan:
    """The `MarginalPlan` of a node and read-out targets, made once (as `addition_plan`)."""
    return MarginalPlan(tuple(a for a, _ in layout), dict(layout), targets)
