"""Marginals of any attribute subset from a calibrated junction tree.

A subset inside a node is a projection of that node's belief. Otherwise the subset is answered
by exact inference on the smallest connected piece of the tree that covers it: with the piece
rooted at its top node t, the joint over the piece factorises as
``mu_t * prod_{c != t} mu_c / mu_{S_c}`` (S_c the separator with c's parent), and the
query variables are carried while everything else is summed out leaves-first, one small einsum
per node. Conditional tables ``mu_c / mu_{S_c}`` are computed once per model and reused by every
query, and answers are cached, so a batch of queries never re-runs belief propagation.
Attributes in different components are independent: their tables are combined by outer product.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .junction_tree import Clique, JunctionTree


class MarginalOracle:
    """Answers marginal queries (counts) from calibrated node beliefs of a junction tree."""

    def __init__(self, tree: JunctionTree, beliefs: Sequence[np.ndarray], total: float) -> None:
        self.tree = tree
        self.domain = tree.domain
        self.beliefs = list(beliefs)
        self.total = float(total)
        self._cond: dict[int, np.ndarray] = {}
        self._cache: dict[frozenset[str], tuple[Clique, np.ndarray]] = {}
        self._depth = [0] * len(tree.nodes)
        for parent, child in tree.distribute:
            self._depth[child] = self._depth[parent] + 1
        self._node_sets = [frozenset(n) for n in tree.nodes]
        self._attr_nodes: dict[str, list[int]] = {a: [] for a in self.domain.attrs}
        for i, n in enumerate(tree.nodes):
            for a in n:
                self._attr_nodes[a].append(i)
        self._component = [tree.component(i) for i in range(len(tree.nodes))]

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Counts over ``attrs`` with axes in the order given."""
        attrs = self.domain.check(attrs)
        key = frozenset(attrs)
        if key not in self._cache:
            self._cache[key] = self._answer(key)
        order, table = self._cache[key]
        if order == attrs:
            return table
        return np.transpose(table, [order.index(a) for a in attrs])

    def marginals(self, subsets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many marginals; each distinct attribute set is computed once."""
        return [self.marginal(s) for s in subsets]

    def _answer(self, attrs: frozenset[str]) -> tuple[Clique, np.ndarray]:
        if not attrs:
            return (), np.array(self.total)
        hosts = [i for i, s in enumerate(self._node_sets) if attrs <= s]
        if hosts:
            home = min(hosts, key=lambda i: (self.beliefs[i].size, i))
            node = self.tree.nodes[home]
            summed = tuple(i for i, a in enumerate(node) if a not in attrs)
            return tuple(a for a in node if a in attrs), self.beliefs[home].sum(axis=summed)
        by_component: dict[int, set[str]] = {}
        for a in attrs:
            by_component.setdefault(self._component[self._attr_nodes[a][0]], set()).add(a)
        parts = [self._component_query(frozenset(q)) for _, q in sorted(by_component.items())]
        order: Clique = ()
        table = np.array(1.0)
        for part_order, part in parts:
            table = np.multiply.outer(table, part / self.total)
            order += part_order
        return order, table * self.total

    def _conditional(self, node: int) -> np.ndarray:
        """mu_node / mu_separator (0 where the separator state has no mass)."""
        if node not in self._cond:
            belief = self.beliefs[node]
            sep = set(self.tree.separator(node))
            summed = tuple(i for i, a in enumerate(self.tree.nodes[node]) if a not in sep)
            denom = belief.sum(axis=summed, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                self._cond[node] = np.where(denom > 0, belief / denom, 0.0)
        return self._cond[node]

    def _path_to(self, node: int, targets: set[int]) -> list[int]:
        """Nodes on the tree path from ``node`` to the nearest member of the connected set ``targets``."""
        ancestors = [node]
        while self.tree.parent[ancestors[-1]] is not None:
            ancestors.append(self.tree.parent[ancestors[-1]])
        for k, anc in enumerate(ancestors):
            if anc in targets:
                return ancestors[: k + 1]
        # Otherwise the nearest target is the set's top node: go up to the common ancestor, then down.
        top = min(targets, key=lambda i: (self._depth[i], i))
        up = [top]
        while up[-1] not in ancestors:
            up.append(self.tree.parent[up[-1]])
        return ancestors[: ancestors.index(up[-1]) + 1] + list(reversed(up[:-1]))

    def _cover(self, attrs: frozenset[str]) -> set[int]:
        """A small connected set of nodes of one component that covers ``attrs``."""
        first = max(
            {i for a in attrs for i in self._attr_nodes[a]},
            key=lambda i: (len(attrs & self._node_sets[i]), -self.beliefs[i].size, -i),
        )
        chosen = {first}
        covered = set(attrs & self._node_sets[first])
        for a in sorted(attrs - covered, key=self.domain.attrs.index):
            if a in covered:
                continue
            best = min(
                (self._path_to(i, chosen) for i in self._attr_nodes[a]),
                key=lambda p: (len(p), sum(self.beliefs[i].size for i in p), p[0]),
            )
            chosen.update(best)
            for i in best:
                covered |= attrs & self._node_sets[i]
        return chosen

    def _component_query(self, attrs: frozenset[str]) -> tuple[Clique, np.ndarray]:
        nodes = self._cover(attrs)
        top = min(nodes, key=lambda i: (self._depth[i], i))
        children: dict[int, list[int]] = {i: [] for i in nodes}
        for i in nodes:
            if i != top:
                children[self.tree.parent[i]].append(i)
        labels = {a: k for k, a in enumerate(self.domain.attrs)}
        messages: dict[int, tuple[Clique, np.ndarray]] = {}
        for node in self._postorder(top, children):
            keep = set(attrs) | (set(self.tree.separator(node)) if node != top else set())
            table = self.beliefs[node] if node == top else self._conditional(node)
            operands: list = [table, [labels[a] for a in self.tree.nodes[node]]]
            scope = set(self.tree.nodes[node])
            for c in children[node]:
                c_attrs, c_table = messages.pop(c)
                operands += [c_table, [labels[a] for a in c_attrs]]
                scope |= set(c_attrs)
            out = tuple(a for a in self.domain.attrs if a in scope and a in keep)
            messages[node] = out, _einsum(operands, [labels[a] for a in out])
        return messages[top]

    @staticmethod
    def _postorder(top: int, children: dict[int, list[int]]) -> list[int]:
        order, stack = [], [(top, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            stack.append((node, True))
            stack += [(c, False) for c in sorted(children[node], reverse=True)]
        return order


def _einsum(operands: list, output: list[int]) -> np.ndarray:
    """np.einsum in sublist form with labels renumbered into einsum's 52-label range."""
    mapping: dict[int, int] = {}
    renamed = []
    for k, item in enumerate(operands):
        if k % 2:
            renamed.append([mapping.setdefault(lab, len(mapping)) for lab in item])
        else:
            renamed.append(item)
    if len(mapping) > 52:
        raise ValueError("a marginal query touches more than 52 attributes in one contraction")
    out = [mapping[lab] for lab in output]
    optimize = "greedy" if len(operands) > 4 else False
    return np.einsum(*renamed, out, optimize=optimize)
