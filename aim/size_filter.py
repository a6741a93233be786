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
  extra edges. From that step on, G + r is eliminated from G's recorded state.
- An elimination clique can only be contained in an earlier one (it holds its own attribute,
  which later cliques lack), so a clique counts towards the size iff it is not a subset of an
  earlier clique: G's prefix sum carries over, and each new clique is checked against the
  earlier ones.
"""

from __future__ import annotations

from typing import Sequence

from marginals.domain import Domain

Clique = tuple[str, ...]


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class SizeFilter:
    """Exact junction-tree sizes (cells) of ``cliques`` plus one hypothetical candidate clique."""

    def __init__(self, domain: Domain, cliques: Sequence[Sequence[str]], nodes: Sequence[Sequence[str]] = ()) -> None:
        self.domain = domain
        self.index = {a: i for i, a in enumerate(domain.attrs)}
        self.sizes = list(domain.shape)
        self._cells: dict[int, int] = {}
        adj = [0] * len(domain)
        for clique in cliques:
            mask = self.mask(clique)
            for i in _bits(mask):
                adj[i] |= mask & ~(1 << i)
        self.adjacency = adj
        self.node_masks = [self.mask(n) for n in nodes]
        self._trace(adj)

    def mask(self, attrs: Sequence[str]) -> int:
        """The bitmask of ``attrs`` (bit i = domain attribute i)."""
        out = 0
        for a in attrs:
            out |= 1 << self.index[a]
        return out

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
        self.counted: list[int] = []  # cliques not inside an earlier one (the maximal cliques)
        self.prefix = [0]  # prefix[k]: cells of the counted cliques among the first k
        self.n_counted = [0]  # n_counted[k]: how many of the first k cliques count
        for _ in range(n):
            self.states.append((list(adj), list(keys), list(alive)))
            v = min(alive, key=keys.__getitem__)
            clique = self._eliminate(v, adj, keys, alive)
            counted = not any(clique & ~c == 0 for c in self.counted)
            self.cliques.append(clique)
            self.order.append(v)
            if counted:
                self.counted.append(clique)
            self.prefix.append(self.prefix[-1] + (self.cells(clique) if counted else 0))
            self.n_counted.append(len(self.counted))
        self.size_cells = self.prefix[-1]

    def _eliminate(self, v: int, adj: list[int], keys: list[int], alive: list[int]) -> int:
        nbrs = adj[v]
        bit = 1 << v
        for u in _bits(nbrs):
            adj[u] = (adj[u] | nbrs) & ~(bit | 1 << u)
            keys[u] = self.cells(adj[u] | 1 << u)
        alive.remove(v)
        return nbrs | bit

    def _follow(self, extra: dict[int, int]) -> tuple[int | None, int, list[int] | None]:
        """Replay G's order on G + r (``extra``: the edges G lacks, updated in place).

        Returns (None, cells, _) when G + r makes G's choice at every step, else the step k at
        which it chooses differently, with the cells and counted cliques so far (``None``: still
        G's own prefix, i.e. G's prefix sums apply).
        """
        counted, total = None, 0
        for k, v in enumerate(self.order):
            if not extra:
                if counted is None:
                    return None, self.size_cells, None
                for c in self.cliques[k:]:  # the rest is G's elimination; counting may differ
                    if not any(c & ~d == 0 for d in counted):
                        total += self.cells(c)
                        counted.append(c)
                return None, total, counted
            adj, keys, alive = self.states[k]
            if v in extra:  # its key went up: is it still the greedy choice?
                best = min(alive, key=lambda u: (keys[u] if u not in extra else self.cells(adj[u] | extra[u] | 1 << u), u))
                if best != v:
                    return k, total, counted
            nbrs = adj[v] | extra.pop(v, 0)
            bit = 1 << v
            after = self.states[k + 1][0] if k + 1 < len(self.states) else None
            for u in _bits(nbrs):
                more = ((adj[u] | extra.get(u, 0) | nbrs) & ~(bit | 1 << u)) & ~after[u]
                if more:
                    extra[u] = more
                else:
                    extra.pop(u, None)
            clique = nbrs | bit
            if counted is None and clique != self.cliques[k]:
                counted, total = self.counted[: self.n_counted[k]], self.prefix[k]
            if counted is not None and not any(clique & ~d == 0 for d in counted):
                total += self.cells(clique)
                counted.append(clique)
        return None, (self.size_cells if counted is None else total), counted

    def inside_node(self, mask: int) -> bool:
        """True when the attribute set lies inside one junction-tree node of the current model."""
        return any(mask & ~node == 0 for node in self.node_masks)

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
        # G + r makes G's choices while the extra edges do not change the greedy choice.
        k, total, counted = self._follow(extra)
        if k is None:
            return total
        adj, keys, alive = (list(x) for x in self.states[k])
        for d, more in extra.items():
            adj[d] |= more
            keys[d] = self.cells(adj[d] | 1 << d)
        if counted is None:
            counted, total = self.counted[: self.n_counted[k]], self.prefix[k]
        while alive:
            v = min(alive, key=keys.__getitem__)
            clique = self._eliminate(v, adj, keys, alive)
            if not any(clique & ~c == 0 for c in counted):
                total += self.cells(clique)
                counted.append(clique)
        return total


def filter_candidates(domain: Domain, model, cand_list: Sequence[Clique], size_limit: float) -> list[Clique]:
    """Candidates inside a junction-tree node of ``model`` (free) or whose hypothetical model fits ``size_limit`` MB."""
    sizes = SizeFilter(domain, model.cliques, model.tree.nodes)
    allowed = []
    for r in cand_list:
        mask = sizes.mask(r)
        if sizes.inside_node(mask) or sizes.with_candidate(r) * 8 / 2**20 <= size_limit:
            allowed.append(r)
    return allowed
