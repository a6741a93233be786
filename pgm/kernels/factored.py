"""Marginals of a product of small tables, without forming the product.

A large junction-tree node's table is the product of a few factors: its potentials and its
children's messages (merged by `plans.AdditionPlan`, exponentiated) and, on the way down, the
factor its parent owes it. Everything belief propagation needs from the node (the message to its
parent, its potentials' marginals, its children's separators) is a sum of that product over some
of its axes, i.e. a contraction of the factors. Building the table costs a broadcast pass per
factor and reading it out a pass per first read-out step, at numpy's elementwise speed; when the
factors overlap in few axes the same sums are a few matrix products (`pgm.kernels.contract`) at BLAS
speed, and the node table is never formed.

`FactorPlan` compiles, once per node (structure only), the contractions for a list of targets:
per target, pairwise contractions chosen greedily by cost, with every intermediate shared across
the targets (a contraction of the same factors to the same axes is done once, and a target inside
a marginal already computed is summed out of that marginal). `FactorPlan.cost` estimates its work
in the same units as `materialised_cost`, so the engine can pick the cheaper way per node.
"""

from __future__ import annotations

import collections
import functools
import math
from typing import Sequence

import numpy as np

from . import contract
from .plans import AdditionPlan, sum_out

Labels = tuple[int, ...]
Clique = tuple[str, ...]

#: cost of one multiply-add in a BLAS matrix product, relative to one cell of a numpy broadcast
#: or sum pass over a node table (measured on the 2-core EPYC development machine, one BLAS
#: thread: ~0.03 ns per multiply-add in a 840 x 135 x 32 product, ~0.3-1 ns per cell of a
#: broadcast pass); kept conservative so that only clear wins switch a node.
BLAS_WEIGHT = 0.25
#: nodes with more factors than this (after merging) are formed, never planned as contractions.
MAX_FACTORS = 12
#: fixed cost of one step (a numpy or BLAS call and its bookkeeping, ~10 us), in the same units.
STEP_COST = 1e4


class FactorPlan:
    """Sums of the product of factors over the node axes ``shape``, for each target.

    ``factors``: each factor's axes (the node axes it spans, ascending); ``targets``: the axes of
    each wanted marginal, in the order its table should have. Axes of length 1 are carried only
    in the outputs' shapes.
    """

    def __init__(self, shape: Sequence[int], factors: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> None:
        self.shape = tuple(int(s) for s in shape)
        if not factors:
            raise ValueError("a factor plan needs at least one factor")
        self.factor_labels: list[Labels] = [self._live(f) for f in factors]
        self.n_factors = len(self.factor_labels)
        # Axes no factor spans: the product is constant along them (each state counts), as a factor of ones.
        self._ones = self._live(set(range(len(self.shape))).difference(*self.factor_labels))
        if self._ones:
            self.factor_labels.append(self._ones)
        self.labels: list[Labels] = list(self.factor_labels)  # every table's axes, ascending
        self.steps: list[tuple[int, int | None, Labels]] = []  # (table, other table or None: a sum, axes kept)
        self.cost = 0.0
        self._all = frozenset(range(len(self.factor_labels)))
        self._sources: list[frozenset[int]] = [frozenset([k]) for k in range(len(self.factor_labels))]
        self._memo: dict[tuple[frozenset[int], frozenset[int]], int] = {}
        self._marginals: list[int] = []  # tables that are marginals of the whole product
        wanted = [self._live(t) for t in targets]
        where: dict[Labels, int] = {}
        # Largest targets first: smaller ones are then often read out of their marginals.
        order = sorted(set(wanted), key=lambda w: (-self._cells(w), w))
        for k, want in enumerate(order):
            where[want] = self._plan(want, order[k + 1 :])
        self.outputs = []  # (table, permutation into the requested order, output shape)
        for target, want in zip(targets, wanted):
            order = [a for a in target if self.shape[a] > 1]
            perm = tuple(want.index(a) for a in order)
            self.outputs.append((where[want], None if perm == tuple(range(len(perm))) else perm,
                                 tuple(self.shape[a] for a in target)))
        del self._memo, self._sources, self._marginals  # planning state; plans are cached and kept

    def _live(self, axes: Sequence[int]) -> Labels:
        return tuple(sorted(a for a in set(axes) if self.shape[a] > 1))

    def _cells(self, labels) -> int:
        return math.prod(self.shape[a] for a in labels)

    def _add(self, first: int, second: int | None, keep: Labels, cost: float) -> int:
        sources = self._sources[first] | (self._sources[second] if second is not None else frozenset())
        key = (sources, frozenset(keep))
        if key in self._memo:
            return self._memo[key]
        self.steps.append((first, second, keep))
        cost += STEP_COST
        self.labels.append(keep)
        self._sources.append(sources)
        index = len(self.labels) - 1
        self._memo[key] = index
        if sources == self._all:
            self._marginals.append(index)
        self.cost += cost
        return index

    def _plan(self, want: Labels, later: Sequence[Labels]) -> int:
        """The table holding the marginal over ``want`` (planned now if no table holds it yet).
        A last contraction small enough for one einsum keeps every axis of its two tables when a
        ``later`` target lies in them: that marginal then serves it too."""
        inside = [i for i in self._marginals if set(want) <= set(self.labels[i])]
        if inside:
            source = min(inside, key=lambda i: (self._cells(self.labels[i]), i))
            if self.labels[source] == want:
                return source
            return self._add(source, None, want, self._cells(self.labels[source]))
        live = list(range(len(self.factor_labels)))
        while len(live) > 1:
            best = None
            spans = collections.Counter(a for r in live for a in self.labels[r])  # live tables per axis
            for x in range(len(live)):
                for y in range(x + 1, len(live)):
                    p, q = live[x], live[y]
                    union = set(self.labels[p]) | set(self.labels[q])
                    # axes the rest needs: the target's, and those another live table spans
                    others = set(want) | {a for a in union if spans[a] > (a in self.labels[p]) + (a in self.labels[q])}
                    keep = tuple(sorted(union & others))
                    if len(live) == 2 and self._cells(union) <= contract.BLAS_CELLS and any(union >= set(t) for t in later):
                        keep = tuple(sorted(union))
                    key = (self._sources[p] | self._sources[q], frozenset(keep))
                    cost = 0.0 if key in self._memo else self._pair_cost(p, q, others)
                    rank = (cost, self._cells(keep), p, q)
                    if best is None or rank < best[0]:
                        best = (rank, p, q, keep)
            (cost, _, _, _), p, q, keep = best
            merged = self._add(p, q, keep, cost)
            live = [r for r in live if r not in (p, q)] + [merged]
        last = live[0]
        if self.labels[last] != want:
            last = self._add(last, None, want, self._cells(self.labels[last]))
        return last

    def _pair_cost(self, p: int, q: int, others: set) -> float:
        """Work of contracting tables p and q, keeping the axes in ``others``: summing out the axes
        only one of them has (a pass over it), then a matrix product over the joint axes."""
        a, b = set(self.labels[p]), set(self.labels[q])
        cost = 0.0
        for own, other in ((a, b), (b, a)):
            if own - other - others:
                cost += self._cells(own)
        a_kept = {x for x in a if x in b or x in others}
        b_kept = {x for x in b if x in a or x in others}
        joint = self._cells(a_kept | b_kept)
        return cost + (joint * BLAS_WEIGHT if joint > contract.BLAS_CELLS else joint)

    def run(self, factors: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The target marginals of the product of ``factors`` (each shaped to broadcast onto the
        node, or with exactly its axes' lengths), each with its axes in the requested order."""
        if len(factors) != self.n_factors:
            raise ValueError(f"the plan multiplies {self.n_factors} factors, got {len(factors)}")
        tables = [np.reshape(f, [self.shape[a] for a in labels]) for f, labels in zip(factors, self.factor_labels)]
        if self._ones:
            tables.append(np.ones([self.shape[a] for a in self._ones]))
        for first, second, keep in self.steps:
            if second is None:
                have = self.labels[first]
                tables.append(sum_out(tables[first], [k for k, a in enumerate(have) if a not in keep],
                                      [have.index(a) for a in keep]))
            else:
                tables.append(contract.pair(tables[first], self.labels[first], tables[second], self.labels[second], keep))
        out = []
        for index, perm, shape in self.outputs:
            table = tables[index] if perm is None else tables[index].transpose(perm)
            out.append(np.reshape(table, shape))
        return out


def materialised_cost(cells: int, factors: int, read_passes: int, collect: bool) -> float:
    """Work of building a node table from ``factors`` broadcast factors, summing it once for the
    message up when ``collect``, and reading it out in ``read_passes`` passes, in `FactorPlan.cost`
    units (cells passed over)."""
    return cells * (max(factors - 1, 1) + int(collect) + read_passes)


@functools.lru_cache(maxsize=1024)
def choose_reading(layout: tuple[tuple[str, int], ...], items: tuple[Clique, ...], targets: tuple[tuple[int, ...], ...],
                   sep_axes: tuple[int, ...] | None, owed: tuple[int, ...] | None, first_reads: int):
    """How to read a node out: None (form its table), or (merges, message-up plan, read-out plan).

    The node: ``layout`` (its attributes and sizes, in table order), summands ``items``, read-out
    ``targets`` (axes), message axes ``sep_axes`` and owed-factor axes ``owed`` (both None for a
    root), and a `MarginalPlan` making ``first_reads`` passes over the formed table. The factors
    are merged as the node's own `AdditionPlan` does (merges None) or only into tables no larger
    than the largest summand (more, smaller factors), whichever is cheaper. Cached: consecutive
    AIM rounds rebuild trees that share most of their nodes."""
    node, sizes = tuple(a for a, _ in layout), dict(layout)
    own = AdditionPlan(node, sizes, items)
    cells, is_child = math.prod(sizes.values()), sep_axes is not None
    best = (materialised_cost(cells, len(own.final), first_reads, is_child) + own.merge_cells + own.exp_cells, None)
    lean = AdditionPlan(node, sizes, items, limit=max(math.prod(sizes[a] for a in t) for t in items))
    for merges in (own, lean):
        scopes = merges.scopes()
        if len(scopes) > MAX_FACTORS:  # planning grows as factors^3 per target; such nodes are formed
            continue
        up = FactorPlan(own.shape, scopes, [sep_axes]) if is_child else None
        down = FactorPlan(own.shape, scopes + ([owed] if is_child else []), targets)
        cost = down.cost + (up.cost if up else 0.0) + merges.merge_cells + merges.exp_cells
        if cost < best[0]:
            best = (cost, (None if merges is own else merges, up, down))
    return best[1]
