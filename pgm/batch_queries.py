"""Many out-of-node marginal queries from one calibrated junction tree, sharing the messages.

An *anchor pass* of attribute x walks the tree outwards from a node holding x, carrying the
joint of x with the separator towards the next node: entering node n through separator S with
M[x, S], the message to the next node n' is

    M'[x, S'] = sum over S - S' of  M[x, S] * mu_n[S + S'] / mu_n[S]

(x lies in S whenever it lies in n, by the running-intersection property), and a query {x} + R
with R inside n is answered there the same way with R in place of S'. The conditional tables
mu_n[S + T] / mu_n[S] depend only on the node, the side it is entered from and T, so they are
computed once per batch and shared by every anchor; one pass answers all queries of its anchor
with one small contraction each, instead of one contraction over the whole path per query.

A triple {x, y, z} with no two attributes in a common node is answered by a sub-pass that picks
y up: at the node holding y nearest to x's start, the carried set becomes {x, y}, and the walk
goes on to the node holding z. Anchors are chosen greedily (the attribute that serves most
pending queries first). Queries spanning several components or of 4+ attributes with no such
split are left to the caller (the per-query path of `MarginalOracle`).
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Sequence

import numpy as np

from .junction_tree import Clique, JunctionTree
from .plans import conditional, reduce_axes

Answers = dict[frozenset[str], tuple[Clique, np.ndarray]]


def anchored_marginals(tree: JunctionTree, beliefs: Sequence[np.ndarray], queries: Sequence[frozenset[str]]) -> Answers:
    """Answers (axis order, counts) for the ``queries`` anchor passes can serve; the others are left out."""
    return _Batch(tree, beliefs).run(queries)


class _Batch:
    def __init__(self, tree: JunctionTree, beliefs: Sequence[np.ndarray]) -> None:
        self.tree = tree
        self.beliefs = beliefs
        self.sizes = dict(zip(tree.domain.attrs, tree.domain.shape))
        self.node_sets = [frozenset(n) for n in tree.nodes]
        self.cells = [b.size for b in beliefs]
        self.neighbours: list[list[int]] = [[] for _ in tree.nodes]
        for child, parent in tree.collect:
            self.neighbours[child].append(parent)
            self.neighbours[parent].append(child)
        comp = [tree.component(i) for i in range(len(tree.nodes))]
        self.attr_comp = {a: comp[i] for i, n in enumerate(tree.nodes) for a in n}
        self._hosts: dict[frozenset[str], list[int]] = {}
        self._conditionals: dict[tuple, np.ndarray] = {}

    def hosts(self, attrs: frozenset[str]) -> list[int]:
        if attrs not in self._hosts:
            self._hosts[attrs] = [i for i, s in enumerate(self.node_sets) if attrs <= s]
        return self._hosts[attrs]

    def sep(self, a: int, b: int) -> Clique:
        return tuple(v for v in self.tree.nodes[a] if v in self.tree.nodes[b])

    def conditional(self, node: int, entry: Clique, wanted: Clique) -> np.ndarray:
        """mu_node over ``wanted`` (node order) divided by mu_node over ``entry`` (0 where that is 0); cached."""
        key = (node, entry, wanted)
        if key not in self._conditionals:
            attrs = self.tree.nodes[node]
            summed = tuple(i for i, v in enumerate(attrs) if v not in wanted)
            table = reduce_axes(np.sum, self.beliefs[node], summed) if summed else self.beliefs[node]
            table = table.reshape([self.sizes[v] for v in wanted])
            if entry:
                table = conditional(table, tuple(i for i, v in enumerate(wanted) if v not in entry))
            self._conditionals[key] = table
        return self._conditionals[key]

    def run(self, queries: Sequence[frozenset[str]]) -> Answers:
        options: dict[str, list[frozenset[str]]] = {}  # anchor -> queries it can serve
        for q in queries:
            if len(q) < 2 or len({self.attr_comp[a] for a in q}) > 1:
                continue
            direct = [x for x in q if self.hosts(q - {x})]
            for x in direct or (q if len(q) == 3 else ()):
                options.setdefault(x, []).append(q)
        pending = {q for qs in options.values() for q in qs}
        rank = {a: i for i, a in enumerate(self.tree.domain.attrs)}
        answers: Answers = {}
        while pending:
            x = max(options, key=lambda a: (sum(q in pending for q in options[a]), -self.sizes[a], -rank[a]))
            mine = [q for q in options.pop(x) if q in pending]
            pending.difference_update(mine)
            home = min(self.hosts(frozenset([x])), key=lambda i: (self.cells[i], i))
            self.walk(home, None, (), (x,), [(q, q - {x}, None) for q in mine], answers)
        return answers

    def distances(self, start: int) -> tuple[dict[int, int | None], dict[int, int]]:
        towards: dict[int, int | None] = {start: None}  # breadth-first tree from start: node -> previous node
        dist = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nb in self.neighbours[node]:
                if nb not in towards:
                    towards[nb], dist[nb] = node, dist[node] + 1
                    queue.append(nb)
        return towards, dist

    def walk(self, start: int, message, labels: Clique, carry: Clique, jobs, answers: Answers, entry: Clique = ()) -> None:
        """Carry ``carry`` (joint with the separators) from ``start`` to answer ``jobs``.

        ``jobs``: (query, rest, target node or None for the nearest node holding rest).
        ``message`` (axes ``labels``, entered through ``entry``) is None at an anchor's own node.
        A rest inside a node is answered there; a rest {y, z} that no node holds is answered
        when some node on the path to z holds y: the walk picks y up there and goes on carrying
        ``carry`` + y (otherwise the query is left out).
        """
        towards, dist = self.distances(start)
        at: dict[int, list] = {}
        picks: dict[tuple[int, str], list] = {}
        for q, rest, target in jobs:
            if self.hosts(rest):
                if target is None:
                    target = min(self.hosts(rest), key=lambda i: (dist[i], self.cells[i], i))
                at.setdefault(target, []).append((q, rest))
                continue
            # {y, z}: pick y up on the way to z (the walk must never re-enter the part already walked)
            for y, z in sorted(itertools.permutations(rest), key=lambda yz: self.sizes[yz[0]]):
                z_node = min(self.hosts(frozenset([z])), key=lambda i: (dist[i], self.cells[i], i))
                path = [z_node]
                while path[-1] != start:
                    path.append(towards[path[-1]])
                on_path = [i for i in reversed(path) if y in self.tree.nodes[i]]
                if on_path:
                    picks.setdefault((on_path[0], y), []).append((q, frozenset([z]), z_node))
                    break
        nexts: dict[int, list[int]] = {start: []}
        for target in list(at) + [node for node, _ in picks]:
            node = target
            while node != start and node not in nexts:
                nexts[node] = []
                node = towards[node]
        for node in nexts:
            if node != start:
                nexts[towards[node]].append(node)
        stack = [(start, message, labels, entry)]
        while stack:
            node, message, labels, entry = stack.pop()
            parts = [(("next", c), self.sep(node, c)) for c in nexts[node]] + [(("answer", q), rest) for q, rest in at.get(node, [])]
            for (kind, what), part in parts:
                result_labels, result = self.step(node, message, labels, entry, carry, part)
                if kind == "next":
                    stack.append((what, result, result_labels, self.sep(what, node)))
                else:
                    answers[what] = (result_labels, np.array(result))
            for (pick_node, y), sub in picks.items():
                if pick_node == node:
                    self.walk(node, message, labels, carry + (y,), sub, answers, entry)

    def step(self, node: int, message, labels: Clique, entry: Clique, carry: Clique, part) -> tuple[Clique, np.ndarray]:
        """The joint of ``carry`` with ``part`` (attributes of ``node``), from the message entering ``node``."""
        attrs = self.tree.nodes[node]
        wanted = tuple(v for v in attrs if v in entry or v in part or v in carry)
        out = tuple(dict.fromkeys(carry + tuple(v for v in wanted if v in part)))
        table = self.conditional(node, entry if message is not None else (), wanted)
        if message is None:  # the anchor's own node: a plain marginal of its belief
            index = {v: k for k, v in enumerate(wanted)}
            return out, np.einsum(table, list(range(len(wanted))), [index[v] for v in out])
        index = {v: k for k, v in enumerate(dict.fromkeys(labels + wanted))}
        big = message.size * table.size > 1 << 22
        result = np.einsum(message, [index[v] for v in labels], table, [index[v] for v in wanted],
                           [index[v] for v in out], optimize=big)
        return out, result
