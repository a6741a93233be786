"""Junction trees over a `Domain` from a set of cliques.

Pipeline (all deterministic; ties broken by domain order):
1. `greedy_order`: repeatedly eliminate the attribute whose elimination clique (itself plus
   its current neighbours) has the fewest cells;
2. `triangulate`: the interaction graph plus the fill edges of that elimination;
3. `maximal_cliques`: the maximal elimination cliques (= maximal cliques of the chordal graph);
4. `build_junction_tree`: a maximum-weight spanning forest on separator size (networkx), each
   component rooted at its largest node (most cells; ties: the first), with collect
   (leaves -> root) and distribute orders.

`model_size_mb` (sum of maximal-clique cells x 8 bytes, in MiB) is memoized by clique set: AIM
asks it for every candidate in every round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import networkx as nx

from marginals.domain import Domain

Clique = tuple[str, ...]


def _interaction_graph(domain: Domain, cliques: Iterable[Sequence[str]]) -> dict[str, set[str]]:
    adjacency: dict[str, set[str]] = {a: set() for a in domain.attrs}
    for cl in cliques:
        cl = domain.check(cl)
        for a in cl:
            adjacency[a].update(b for b in cl if b != a)
    return adjacency


def _eliminate(domain: Domain, adjacency: dict[str, set[str]]) -> tuple[list[str], list[frozenset[str]]]:
    """Greedy min-cells elimination; returns the order and each step's elimination clique."""
    adjacency = {a: set(nb) for a, nb in adjacency.items()}
    rank = {a: i for i, a in enumerate(domain.attrs)}
    size = dict(zip(domain.attrs, domain.shape))
    order: list[str] = []
    elim_cliques: list[frozenset[str]] = []
    while adjacency:
        best = min(adjacency, key=lambda a: (math.prod([size[b] for b in adjacency[a]], start=size[a]), rank[a]))
        nbrs = adjacency.pop(best)
        for b in nbrs:  # connect the neighbours (fill edges) and drop the eliminated attribute
            adjacency[b].discard(best)
            adjacency[b].update(c for c in nbrs if c != b)
        order.append(best)
        elim_cliques.append(frozenset(nbrs | {best}))
    return order, elim_cliques


def greedy_order(domain: Domain, cliques: Iterable[Sequence[str]]) -> list[str]:
    """Elimination order that greedily minimises the cells of each elimination clique."""
    return _eliminate(domain, _interaction_graph(domain, cliques))[0]


def triangulate(domain: Domain, cliques: Iterable[Sequence[str]], order: Sequence[str] | None = None) -> nx.Graph:
    """The chordal graph: interaction edges of ``cliques`` plus the fill edges of eliminating in ``order``."""
    cliques = list(cliques)
    adjacency = _interaction_graph(domain, cliques)
    order = list(order) if order is not None else greedy_order(domain, cliques)
    graph = nx.Graph()
    graph.add_nodes_from(domain.attrs)
    work = {a: set(nb) for a, nb in adjacency.items()}
    for a in order:
        nbrs = work.pop(a)
        for b in nbrs:
            graph.add_edge(a, b)
            work[b].discard(a)
            work[b].update(c for c in nbrs if c != b)
    return graph


def _maximal(domain: Domain, sets: Iterable[frozenset[str]]) -> list[Clique]:
    unique = sorted(set(sets), key=lambda s: (-len(s), domain.canonical(s)))
    kept: list[frozenset[str]] = []
    for s in unique:
        if not any(s <= k for k in kept):
            kept.append(s)
    return sorted((domain.canonical(k) for k in kept), key=lambda c: [domain.attrs.index(a) for a in c])


def maximal_cliques(domain: Domain, cliques: Iterable[Sequence[str]]) -> list[Clique]:
    """Maximal cliques of the triangulated graph, each in domain order, sorted by domain order."""
    return _maximal(domain, _eliminate(domain, _interaction_graph(domain, cliques))[1])


@lru_cache(maxsize=200_000)
def _size_cells(domain: Domain, cliques: frozenset[frozenset[str]]) -> int:
    adjacency: dict[str, set[str]] = {a: set() for a in domain.attrs}
    for cl in cliques:
        for a in cl:
            adjacency[a].update(cl)
            adjacency[a].discard(a)
    elim = _eliminate(domain, adjacency)[1]
    size = dict(zip(domain.attrs, domain.shape))
    kept: list[frozenset[str]] = []
    for s in sorted(set(elim), key=len, reverse=True):
        if not any(s <= k for k in kept):
            kept.append(s)
    return sum(math.prod(size[a] for a in k) for k in kept)


def model_size_mb(domain: Domain, cliques: Iterable[Sequence[str]]) -> float:
    """Memory of the junction-tree clique tables in MiB (cells x 8 bytes / 2^20), memoized by clique set."""
    key = frozenset(frozenset(c) for c in cliques)
    unknown = {a for c in key for a in c} - set(domain.attrs)
    if unknown:
        raise ValueError(f"unknown attribute(s) {sorted(unknown)}; the domain has {list(domain.attrs)}")
    return _size_cells(domain, key) * 8 / 2**20


@dataclass(frozen=True)
class JunctionTree:
    """A rooted junction forest: nodes are maximal cliques (domain order); each component is
    rooted at its largest node."""

    domain: Domain
    nodes: tuple[Clique, ...]
    parent: tuple[int | None, ...]
    roots: tuple[int, ...]
    collect: tuple[tuple[int, int], ...]  # (child, parent), leaves first
    distribute: tuple[tuple[int, int], ...]  # (parent, child), root first
    order: tuple[str, ...]  # elimination order
    elimination_cliques: tuple[Clique, ...]  # per attribute of `order`, in domain order

    def separator(self, child: int) -> Clique:
        """Attributes shared by ``child`` and its parent (empty for a root)."""
        p = self.parent[child]
        if p is None:
            return ()
        return tuple(a for a in self.nodes[child] if a in self.nodes[p])

    def component(self, node: int) -> int:
        """The root of the component holding ``node``."""
        while self.parent[node] is not None:
            node = self.parent[node]
        return node

    def containing(self, attrs: Iterable[str]) -> list[int]:
        """Indices of the nodes that contain every attribute of ``attrs``."""
        need = set(attrs)
        return [i for i, n in enumerate(self.nodes) if need <= set(n)]

    @property
    def size_cells(self) -> int:
        return sum(self.domain.size(n) for n in self.nodes)

    @property
    def size_mb(self) -> float:
        return self.size_cells * 8 / 2**20


def build_junction_tree(domain: Domain, cliques: Iterable[Sequence[str]]) -> JunctionTree:
    """Greedy order, triangulation, maximal cliques and a maximum spanning forest on separator size."""
    cliques = [domain.check(c) for c in cliques]
    order, elim = _eliminate(domain, _interaction_graph(domain, cliques))
    nodes = _maximal(domain, elim)
    graph = nx.Graph()
    graph.add_nodes_from(range(len(nodes)))
    sets = [set(n) for n in nodes]
    for i in range(len(nodes)):
        for j in range(i + 1, len(nodes)):
            shared = len(sets[i] & sets[j])
            if shared:
                graph.add_edge(i, j, weight=shared)
    forest = nx.maximum_spanning_tree(graph, algorithm="kruskal")
    parent: list[int | None] = [None] * len(nodes)
    roots, collect, distribute = [], [], []
    seen: set[int] = set()
    cells = [domain.size(n) for n in nodes]
    # Root each component at its largest node: the root never sends an upward message, so the
    # biggest table is reduced once (to its total) instead of once per separator.
    components = sorted((sorted(c) for c in nx.connected_components(forest)), key=lambda c: c[0])
    for component in components:
        root = max(component, key=lambda i: (cells[i], -i))
        roots.append(root)
        seen.add(root)
        stack, preorder = [root], []
        while stack:  # depth-first, children in index order: deterministic
            node = stack.pop()
            preorder.append(node)
            for child in sorted(forest.neighbors(node), reverse=True):
                if child not in seen:
                    seen.add(child)
                    parent[child] = node
                    stack.append(child)
        distribute += [(parent[c], c) for c in preorder if parent[c] is not None]
        collect += [(c, parent[c]) for c in reversed(preorder) if parent[c] is not None]
    return JunctionTree(
        domain=domain,
        nodes=tuple(nodes),
        parent=tuple(parent),
        roots=tuple(roots),
        collect=tuple(collect),
        distribute=tuple(distribute),
        order=tuple(order),
        elimination_cliques=tuple(domain.canonical(c) for c in elim),
    )
