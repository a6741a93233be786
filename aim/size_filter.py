"""AIM's model-size filter without re-triangulating the whole graph for every candidate.

The filter keeps a candidate r when it lies inside a junction-tree node of the current model, or
when ``pgm.junction_tree.model_size_mb(domain, model.cliques + [r])`` fits the round's limit. That
size comes from the greedy min-cells elimination of the interaction graph G + r. `SizeFilter`
gives exactly the same number (same integer cell count) at a fraction of the cost:

- Graphs are bitmasks (one int per attribute), neighbourhood cell counts are memoized by mask,
  and a step only re-keys the neighbours of the eliminated attribute.
- G is eliminated once per round and its trace kept (order, keys and adjacency before every
  step). G + r differs from G only by the extra edges among r's attributes, so up to the first
  step at which G eliminates an attribute of r that still has an extra edge, the greedy choice
  in G + r is the same (keys of other attributes are unchanged and the extra edges only raise
  the keys of r's attributes), and so are the elimination cliques; fill edges can only absorb
  extra edges. Where the choice differs, G + r is eliminated on its own from G's recorded state
  until it has eliminated the same attributes as G's trace with all of G's edges present
  (typically a few steps later); from there it follows G's trace again.
- The greedy elimination of a graph is the interleaving of those of its connected components
  (a key depends only on the attribute's own component; ties go by domain order), so r changes
  only the components it touches: their cells, looked up by the exact subgraph and r, carry over
  across rounds until a new clique changes them; small ones are eliminated afresh, larger ones
  by replaying G's trace restricted to them (`aim.part_trace`): the replay then waits only for the
  touched components' attributes to line up with G's, not for the other components' steps.
- An elimination clique K_v = {v} + N(v) can only be contained in an earlier one (it holds v,
  which later cliques lack), and it is contained in an earlier one iff some earlier attribute u
  had N(u) = K_v exactly (follow the elimination-tree parents from any earlier superset: each
  step keeps K_v inside the next neighbourhood, and the chain ends at v). So a clique counts
  towards the size iff it is not among the earlier neighbourhoods: one set lookup.
"""

from __future__ import annotations

import heapq
from typing import Sequence

from marginals.domain import Domain

from .masks import BITS as _BITS
from .masks import attribute_bits as _index
from .masks import bits as _bits
from .masks import graph as _graph
from .masks import mask as _mask
from .part_trace import PartTrace

Clique = tuple[str, ...]


_KNOWN: dict[Domain, dict[tuple, int]] = {}  # cells of a component (+ candidate) by its exact graph

#: components (with the candidate) of at most this many attributes are eliminated afresh, larger
#: ones by replaying G's trace restricted to them
_FRESH_ATTRS = 8


class SizeFilter:
    """Exact junction-tree sizes (cells) of ``cliques`` plus one hypothetical candidate clique."""

    def __init__(self, domain: Domain, cliques: Sequence[Sequence[str]], nodes: Sequence[Sequence[str]] = ()) -> None:
        self.domain = domain
        self.index = _index(domain)
        self.sizes = list(domain.shape)
        self._cells: dict[int, int] = {}
        adj = _graph(self.index, cliques)
        self.adjacency = adj
        self.node_masks = [self.mask(n) for n in nodes]
        self.attr_nodes = [0] * len(domain)  # per attribute: the bitmask of the nodes holding it
        for j, node in enumerate(self.node_masks):
            for i in _bits(node):
                self.attr_nodes[i] |= 1 << j
        self._trace(adj)
        self.alive_masks = [sum(1 << u for u in state[2]) for state in self.states]
        # connected components and the cells each contributes (greedy elimination never mixes them)
        self.component = [0] * len(domain)
        self.component_cells: dict[int, int] = {}
        for v in range(len(domain)):
            if not self.component[v]:
                comp, frontier = 1 << v, 1 << v
                while frontier:
                    grown = comp
                    for u in _bits(frontier):
                        grown |= adj[u]
                    frontier, comp = grown & ~comp, grown
                for u in _bits(comp):
                    self.component[u] = comp
                self.component_cells[comp] = 0
        for k, v in enumerate(self.order):
            self.component_cells[self.component[v]] += self.prefix[k + 1] - self.prefix[k]
        self._graph_keys: dict[int, tuple[int, ...]] = {}
        self._traces: dict[int, PartTrace] = {}
        self._known = _KNOWN.setdefault(domain, {})
        if len(self._known) > 500_000:
            self._known.clear()

    def mask(self, attrs: Sequence[str]) -> int:
        """The bitmask of ``attrs`` (bit i = domain attribute i)."""
        return _mask(self.index, attrs)

    def cells(self, mask: int) -> int:
        """Number of cells of the attribute set ``mask`` (memoized)."""
        found = self._cells.get(mask)
        if found is None:
            found = 1
            for i in _bits(mask):
                found *= self.sizes[i]
            self._cells[mask] = found
        return found

    def _trace(self, adj: list[int]) -> None:
        """Eliminate G greedily once, recording the state before every step."""
        n = len(adj)
        adj = list(adj)
        keys = [self.cells(adj[i] | 1 << i) for i in range(n)]
        alive = list(range(n))
        self.order: list[int] = []
        self.states: list[tuple[list[int], list[int], list[int]]] = []  # (adjacency, keys, alive) before step k
        self.cliques: list[int] = []
        self.prefix = [0]  # prefix[k]: cells of the counted cliques among the first k
        seps: set[int] = set()
        for _ in range(n):
            self.states.append((list(adj), list(keys), list(alive)))
            v = min(alive, key=keys.__getitem__)
            clique = self._eliminate(v, adj, keys, alive)
            self.cliques.append(clique)
            self.order.append(v)
            self.prefix.append(self.prefix[-1] + (0 if clique in seps else self.cells(clique)))
            seps.add(clique & ~(1 << v))
        self.size_cells = self.prefix[-1]
        self.ranked = [sorted(alive, key=lambda u: (keys[u], u)) for _, keys, alive in self.states]

    def _eliminate(self, v: int, adj: list[int], keys: list[int], alive: list[int]) -> int:
        """Eliminate ``v`` (in place): its neighbours become a clique and are re-keyed; returns its clique."""
        nbrs, bit, cells = adj[v], 1 << v, self._cells
        for u in _BITS.get(nbrs) or _bits(nbrs):
            m = (adj[u] | nbrs) & ~bit  # u's closed neighbourhood (u is in nbrs)
            adj[u] = m ^ 1 << u
            c = cells.get(m)
            keys[u] = c if c is not None else self.cells(m)
        alive.remove(v)
        return nbrs | bit

    def _follow(
        self, t: "PartTrace", extra: dict[int, int], start: int, seps: set[int] | None, total: int
    ) -> tuple[int | None, int, set[int] | None]:
        """Replay the trace ``t`` (G's, restricted to a set of components) from step ``start`` on a
        graph that is G's state there plus ``extra``.

        ``extra`` (the edges G lacks, updated in place) must be symmetric. Returns (None, cells,
        _) when the greedy choice is G's at every remaining step, else the step k at which it
        differs, with the cells counted and the neighbourhood set so far (``seps`` None: the
        cliques so far are G's own, so G's prefix sums apply).
        """
        k, n = start, len(t.order)
        while k < n:
            if not extra:
                if seps is None:
                    return None, t.prefix[n], None
                return None, self._count(t, k, n, seps, total), seps
            # Steps that eliminate an attribute without extra edges are G's own (same clique,
            # and fill edges only absorb extra edges): jump to the first that has some.
            nxt = min(t.position[u] for u in extra)
            if nxt > k:
                if seps is not None:
                    total = self._count(t, k, nxt, seps, total)
                k = nxt
                _absorb(extra, self.states[t.glob[k]][0])
                continue
            v = t.order[k]
            adj = self.states[t.glob[k]][0]
            if not self._still_first(t, k, v, adj, extra):
                return k, total, seps
            nbrs = adj[v] | extra.pop(v)
            bit = 1 << v
            after = self.states[t.glob[k] + 1][0] if t.glob[k] + 1 < len(self.order) else None
            for u in _bits(nbrs):
                more = ((adj[u] | extra.get(u, 0) | nbrs) & ~(bit | 1 << u)) & ~after[u]
                if more:
                    extra[u] = more
                else:
                    extra.pop(u, None)
            if seps is None and nbrs | bit != t.cliques[k]:
                seps, total = self._seps(t, k), t.prefix[k]
            if seps is not None:
                total += 0 if nbrs | bit in seps else self.cells(nbrs | bit)
                seps.add(nbrs)
            k += 1
        return None, (t.prefix[n] if seps is None else total), seps

    def _still_first(self, t: "PartTrace", k: int, v: int, adj: list[int], extra: dict[int, int]) -> bool:
        """Whether G's choice ``v`` at step k (an attribute with extra edges: its key went up) is
        still the greedy choice (least key, ties by index) of G's state plus ``extra``."""
        mine = (self.cells(adj[v] | extra[v] | 1 << v), v)
        keys = self.states[t.glob[k]][1]
        for u in t.ranked(k):  # G's keys in increasing order; extra edges only raise keys
            if (keys[u], u) >= mine:
                return True
            if u != v and (u not in extra or (self.cells(adj[u] | extra[u] | 1 << u), u) < mine):
                return False
        return True

    def _count(self, t: "PartTrace", start: int, stop: int, seps: set[int], total: int) -> int:
        """``total`` plus the cells of the trace's cliques of steps start..stop-1 not among ``seps`` (updated)."""
        cells = self._cells
        for c, u in zip(t.cliques[start:stop], t.order[start:stop]):
            if c not in seps:
                found = cells.get(c)
                total += found if found is not None else self.cells(c)
            seps.add(c & ~(1 << u))
        return total

    def _seps(self, t: "PartTrace", k: int) -> set[int]:
        """The neighbourhoods (at elimination) of the trace's first k eliminated attributes (a fresh set)."""
        found = t.seps_at.get(k)
        if found is None:
            found = t.seps_at[k] = frozenset(c & ~(1 << v) for c, v in zip(t.cliques[:k], t.order[:k]))
        return set(found)

    def inside_node(self, mask: int) -> bool:
        """True when the attribute set lies inside one junction-tree node of the current model."""
        common = (1 << len(self.node_masks)) - 1
        for i in _bits(mask):
            common &= self.attr_nodes[i]
        return common != 0

    def with_candidate(self, attrs: Sequence[str]) -> int:
        """Cells of the junction tree of the cliques plus ``attrs`` (= model_size_mb x 2^20 / 8)."""
        rmask = self.mask(attrs)
        extra = {}
        for i in _bits(rmask):
            more = rmask & ~(1 << i) & ~self.adjacency[i]
            if more:
                extra[i] = more
        if not extra:
            return self.size_cells
        # Only the components r touches change: their part is looked up by its exact graph,
        # so it carries over from earlier rounds whenever the new cliques left it alone.
        merged = 0
        for i in _bits(rmask):
            merged |= self.component[i]
        others = self.size_cells - sum(self.component_cells[c] for c in {self.component[i] for i in _bits(rmask)})
        # G + r differs from G by the extra edges only: candidates lacking the same edges share the part
        key = (merged, tuple(extra.items()), self._graph_key(merged))
        part = self._known.get(key)
        if part is None:
            if merged.bit_count() <= _FRESH_ATTRS:
                part = self._eliminate_part(merged, extra)
            else:
                part = self._replay(self._part_trace(merged), extra)
            self._known[key] = part
        return others + part

    def _part_trace(self, merged: int) -> "PartTrace":
        """G's trace restricted to the components of ``merged`` (made once per set)."""
        found = self._traces.get(merged)
        if found is None:
            found = self._traces[merged] = PartTrace(self, merged)
        return found

    def _graph_key(self, merged: int) -> tuple[int, ...]:
        """The adjacency of the attributes of ``merged`` (a union of components), made once per set."""
        found = self._graph_keys.get(merged)
        if found is None:
            adjacency = self.adjacency
            found = self._graph_keys[merged] = tuple(adjacency[i] for i in _bits(merged))
        return found

    def _eliminate_part(self, merged: int, extra: dict[int, int]) -> int:
        """Cells of the greedy elimination of the subgraph on ``merged`` plus the ``extra`` edges."""
        adj = list(self.adjacency)
        alive = list(_bits(merged))
        keys = [0] * len(adj)
        for v in alive:
            adj[v] |= extra.get(v, 0)
            keys[v] = self.cells(adj[v] | 1 << v)
        seps: set[int] = set()
        total, left = 0, merged
        while alive:
            v = min(alive, key=keys.__getitem__)
            clique = self._eliminate(v, adj, keys, alive)
            total += 0 if clique in seps else self.cells(clique)
            left &= ~(1 << v)
            if clique & ~(1 << v) == left:  # the attributes left form a clique: no later clique counts
                break
            seps.add(clique & ~(1 << v))
        return total

    def _replay(self, t: "PartTrace", extra: dict[int, int]) -> int:
        """Cells of the trace's components with the ``extra`` edges, by replaying G's trace there and
        eliminating on our own only where it differs."""
        k, seps, total = 0, None, 0
        while True:
            # Follow G's choices while the extra edges do not change them ...
            k, total, seps = self._follow(t, extra, k, seps, total)
            if k is None:
                return total
            if seps is None:
                seps, total = self._seps(t, k), t.prefix[k]
            # ... then eliminate on our own until the same attributes are left as in G's trace,
            # with every edge of G's state there: from that step on, follow G again.
            adj, keys = (list(x) for x in self.states[t.glob[k]][:2])
            for d, more in extra.items():
                adj[d] |= more
                keys[d] = self.cells(adj[d] | 1 << d)
            k, total, extra = self._diverge(t, k, adj, keys, seps, total)
            if extra is None:
                return total

    def _diverge(
        self, t: "PartTrace", k: int, adj: list[int], keys: list[int], seps: set[int], total: int
    ) -> tuple[int, int, dict[int, int] | None]:
        """Eliminate greedily from step ``k`` of the trace (state given, updated in place) until the
        same attributes of its components are left as in G's trace with every edge of G's state
        there; (step, cells, the edges G lacks then), or (end, cells, None)."""
        cells, alive_masks, states, glob = self._cells, t.alive_masks, self.states, t.glob
        left = alive_masks[k]
        # the least (key, attribute) by a heap with stale entries skipped (keys change only for
        # the neighbours of the attribute just eliminated): min() over every attribute left was
        # most of the filter's time on wide tables
        heap = [(keys[u], u) for u in _bits(left)]
        heapq.heapify(heap)
        while left:
            key, v = heapq.heappop(heap)
            if not left >> v & 1 or keys[v] != key:
                continue
            bit = 1 << v
            nbrs = adj[v]
            for u in _BITS.get(nbrs) or _bits(nbrs):
                m = (adj[u] | nbrs) & ~bit  # u's closed neighbourhood (u is in nbrs)
                adj[u] = m ^ 1 << u
                c = cells.get(m)
                keys[u] = c = c if c is not None else self.cells(m)
                heapq.heappush(heap, (c, u))
            clique = nbrs | bit
            if clique not in seps:
                c = cells.get(clique)
                total += c if c is not None else self.cells(clique)
            seps.add(nbrs)
            left &= ~bit
            k += 1
            if nbrs == left:  # the attributes left form a clique now: every later clique is in seps
                return len(t.order), total, None
            if left == alive_masks[k]:
                g = states[glob[k]][0]
                rest = _bits(left)
                if all(g[u] & ~adj[u] == 0 for u in rest):
                    return k, total, {u: adj[u] & ~g[u] for u in rest if adj[u] & ~g[u]}
        return k, total, None


def _absorb(extra: dict[int, int], adjacency: list[int]) -> None:
    """Drop from ``extra`` (in place) the edges ``adjacency`` already has (symmetric stays symmetric)."""
    for u in list(extra):
        more = extra[u] & ~adjacency[u]
        if more:
            extra[u] = more
        else:
            del extra[u]


_ROUNDS: dict[tuple, tuple[int | None, ...]] = {}  # candidate cells by (domain, graph, nodes, candidates)


def filter_candidates(domain: Domain, model, cand_list: Sequence[Clique], size_limit: float) -> list[Clique]:
    """Candidates inside a junction-tree node of ``model`` (free) or whose hypothetical model fits ``size_limit`` MB."""
    cells = candidate_cells(domain, model.cliques, model.tree.nodes, cand_list)
    return [r for r, c in zip(cand_list, cells) if c is None or c * 8 / 2**20 <= size_limit]


def candidate_cells(
    domain: Domain, cliques: Sequence[Sequence[str]], nodes: Sequence[Sequence[str]], cand_list: Sequence[Clique]
) -> tuple[int | None, ...]:
    """Cells of the model plus each candidate (None: inside a node, free); memoised by the interaction
    graph and the nodes, which fix every answer (a round that adds no edge reuses the last one's)."""
    index = _index(domain)
    adjacency = _graph(index, cliques)
    node_masks = sorted(_mask(index, n) for n in nodes)
    key = (domain, tuple(adjacency), tuple(node_masks), tuple(cand_list))
    found = _ROUNDS.get(key)
    if found is None:
        sizes = SizeFilter(domain, cliques, nodes)
        found = tuple(None if sizes.inside_node(_mask(index, r)) else sizes.with_candidate(r) for r in cand_list)
        while len(_ROUNDS) >= 4:
            _ROUNDS.pop(next(iter(_ROUNDS)))
        _ROUNDS[key] = found
    return found
