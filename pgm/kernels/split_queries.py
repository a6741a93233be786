"""Out-of-node marginals by splitting at the cheapest separator, never carrying an attribute
through a large node.

Cutting a junction-tree edge with separator S splits the tree in two sides; the attributes of a
query q outside S fall on one side or the other (running intersection), q_D and q_U, and given S
the two sides are independent:

    mu(q) = sum over S - q of  mu(q_D + S) * mu(q_U + S) / mu(S)

Among the edges of a connected set of nodes covering q that leave attributes of q on both
sides, the one with the fewest cells in q + S is cut. Each part is answered the same way with
its side of the cover (which has fewer nodes, so the recursion ends), down to parts inside one
node, read from its belief without a copy. Parts are memoised for the whole batch (within a cell
budget; the queries themselves, kept by the caller anyway, do not count against it), so queries
that share an attribute and a separator share the work; the contraction of the two parts goes
through `contract.pair` (one batched matrix product when large). The queries whose cut has the
same lower part q_D + S (and keep the same attributes of S) are answered together: one matmul of
that part against their upper conditionals side by side (`contract.pair_many`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import contract as contraction
from ..junction_tree import Clique
from .plans import reduce_axes, sum_out

Answers = dict[frozenset[str], tuple[Clique, np.ndarray]]


def split_marginals(oracle, queries: Sequence[frozenset[str]], budget_cells: int) -> Answers:
    """(axis order, counts) of each query (one component each, inside no node) from a `MarginalOracle`;
    intermediate parts held for reuse come to at most ``budget_cells`` cells."""
    return _Splitter(oracle, budget_cells).batch(queries)


class _Splitter:
    def __init__(self, oracle, budget_cells: int) -> None:
        self.oracle = oracle
        self.tree = oracle.tree
        self.sizes = dict(zip(oracle.domain.attrs, oracle.domain.shape))
        self.rank = {a: k for k, a in enumerate(oracle.domain.attrs)}
        self.budget = budget_cells
        self.memo: Answers = {}
        self.splits: dict[tuple, tuple[frozenset[str], frozenset[str], frozenset[int]]] = oracle._shape["splits"]
        self.conditionals: dict[tuple, np.ndarray] = {}  # (part order, separator) -> mu(part) / mu(separator)
        self.node_sets = [frozenset(n) for n in self.tree.nodes]
        self.seps = [frozenset(self.tree.separator(i)) for i in range(len(self.tree.nodes))]
        self.sep_cells = [math.prod([self.sizes[a] for a in sep]) for sep in self.seps]
        self.ancestors: list[frozenset[int]] = []  # each node and the nodes above it
        for i in range(len(self.tree.nodes)):
            chain, node = [i], self.tree.parent[i]
            while node is not None:
                chain.append(node)
                node = self.tree.parent[node]
            self.ancestors.append(frozenset(chain))

    def order(self, attrs) -> Clique:
        return tuple(sorted(attrs, key=self.rank.__getitem__))

    def answer(self, q: frozenset[str], cover: frozenset[int], top: bool = False) -> tuple[Clique, np.ndarray]:
        """mu(q) with axes in domain order; ``cover`` is a connected set of nodes covering q; ``top``: a
        query (kept by the caller anyway), memoised without counting against the budget."""
        if q in self.memo:
            return self.memo[q]
        home = self.oracle._home(q)
        if home is not None:  # inside a node: a sum of its belief (the belief itself: no copy)
            node = self.tree.nodes[home]
            table = sum_out(self.oracle.beliefs[home], [i for i, a in enumerate(node) if a not in q])
            return self._keep(q, self.order(q), table, table is not self.oracle.beliefs[home] and not top)
        sep, q_down, below = self._split(q, cover)
        down_order, down = self.answer(q_down | sep, below)
        up_order, up = self._up(q - sep - q_down, sep, cover - below)
        out = self.order(q)
        table = contraction.pair(down, down_order, up, up_order, out)
        return self._keep(q, out, table, not top)

    def batch(self, queries: Sequence[frozenset[str]]) -> Answers:
        """Every query (see `_batch`); the queries are memoised without counting against the budget."""
        got = self._batch([(q, self.oracle._cover(q)) for q in queries], top=True)
        return {q: got[q] for q in queries}

    def _batch(self, items: list[tuple[frozenset[str], frozenset[int]]], top: bool) -> Answers:
        """mu(q) of each (q, cover); queries cut at one separator S with the same lower part q_D + S
        (and the same attributes in S) share one matmul against their upper parts side by side."""
        got: Answers = {}
        groups: dict[tuple, list[tuple[frozenset[str], frozenset[int]]]] = {}
        for q, cover in items:
            if q in self.memo:
                got[q] = self.memo[q]
            elif self.oracle._home(q) is not None:
                got[q] = self.answer(q, cover, top)
            else:
                sep, q_down, _ = self._split(q, cover)
                groups.setdefault((q_down | sep, sep, q & sep), []).append((q, cover))
        for members in groups.values():
            if len(members) == 1:
                got[members[0][0]] = self.answer(*members[0], top)
            else:
                got.update(self._shared_down(members, top))
        return got

    def _shared_down(self, members: list[tuple[frozenset[str], frozenset[int]]], top: bool) -> Answers:
        """Queries with one lower part q_D + S and one kept S part, by one batched contraction."""
        q, cover = members[0]
        sep, q_down, below = self._split(q, cover)
        # sum over S - q of mu(q_D | S) mu(q_U + S): the shared part is the one divided by mu(S)
        down_order, down = self.answer(q_down | sep, below)
        down = self._given(down_order, down, sep)
        parts = [(q - sep - q_down | sep, cover - self._split(q, cover)[2]) for q, cover in members]
        ups = self._batch(parts, False)  # the upper parts, themselves batched
        results = contraction.pair_many(down, down_order, [ups[p][::-1] for p, _ in parts], q & sep)
        got: Answers = {}
        for (q, _), (labels, table) in zip(members, results):
            out = self.order(q)
            got[q] = self._keep(q, out, table.transpose([labels.index(a) for a in out]), not top)
        return got

    def _split(self, q: frozenset[str], cover: frozenset[int]) -> tuple[frozenset[str], frozenset[str], frozenset[int]]:
        """(separator S, q's attributes below S but outside it, the cover nodes below) of q's cut
        (memoised per tree shape)."""
        found = self.splits.get((q, cover))
        if found is None:
            child, below = self.cut(q, cover)
            sep = self.seps[child]
            below_attrs = frozenset().union(*(self.node_sets[n] for n in below))
            found = self.splits[q, cover] = sep, frozenset(a for a in q - sep if a in below_attrs), below
        return found

    def _up(self, q_up: frozenset[str], sep: frozenset[str], cover: frozenset[int]) -> tuple[Clique, np.ndarray]:
        """mu(q_U + S) / mu(S): the conditional of the upper part given the separator (shared)."""
        up_order, up = self.answer(q_up | sep, cover)
        return up_order, self._given(up_order, up, sep)

    def _given(self, order: Clique, table: np.ndarray, sep: frozenset[str]) -> np.ndarray:
        """mu(part) / mu(S) of a part holding the separator S (memoised)."""
        key = (order, sep)
        if key not in self.conditionals:
            self.conditionals[key] = conditional(table, [i for i, a in enumerate(order) if a not in sep])
        return self.conditionals[key]

    def _keep(self, q: frozenset[str], order: Clique, table: np.ndarray, new: bool) -> tuple[Clique, np.ndarray]:
        """Memoise a part (a ``new`` table, counted against the budget, only while the budget lasts)."""
        if not new or table.size <= self.budget:
            self.budget -= table.size if new else 0
            self.memo[q] = order, table
        return order, table

    def cut(self, q: frozenset[str], cover: frozenset[int]) -> tuple[int, frozenset[int]]:
        """The cover edge to cut (given by its lower node) and the cover nodes below it: of the edges
        leaving q's attributes outside the separator on both sides, the one with the fewest cells in
        q + S (ties: the lowest node). Edges are tried cheapest first, so the sides of few are formed."""
        parent, seps, sizes = self.tree.parent, self.seps, self.sizes
        edges = []
        for child in cover:
            if parent[child] is not None and parent[child] in cover:
                edges.append((self.sep_cells[child] * math.prod([sizes[a] for a in q if a not in seps[child]]), child))
        for _, child in sorted(edges):
            outside = q - seps[child]
            below = frozenset(n for n in cover if child in self.ancestors[n])
            below_attrs = frozenset().union(*(self.node_sets[n] for n in below))
            if outside & below_attrs and not outside <= below_attrs:
                return child, below
        raise AssertionError(f"no separator splits {sorted(q)}: it should lie inside one node")


def conditional(table: np.ndarray, summed: Sequence[int]) -> np.ndarray:
    """``table`` divided by its sum over the axes ``summed`` (0 where that sum is not positive): the
    values of `plans.conditional` in one pass over the table, without its second table-sized temporary."""
    denom = reduce_axes(np.sum, table, summed) if summed else table
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(table, denom)
    if denom.size and not denom.min() > 0:  # rare: zero-mass separator states (or NaN) give 0
        np.copyto(out, 0.0, where=~(denom > 0))
    return out
