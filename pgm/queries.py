"""Marginals of any attribute subset from a calibrated junction tree.

A subset inside a node is a projection of that node's belief. Otherwise the subset is answered
by exact inference on the smallest connected piece of the tree that covers it: with the piece
rooted at its top node t, the joint over the piece factorises as
``mu_t * prod_{c != t} mu_c / mu_{S_c}`` (S_c the separator with c's parent), and the
query variables are carried while everything else is summed out leaves-first, one small einsum
per node. Conditional tables ``mu_c / mu_{S_c}`` are computed once per model and reused by every
query; answers (read-only arrays) and the per-node messages of the contractions are cached, so
a batch of queries never re-runs belief propagation and shares the work along common paths.
Attributes in different components are independent: their tables are combined by outer product.
A batch (`MarginalOracle.marginals`) first reads every subset that lies inside a node out of it
through one shared plan, and answers the out-of-node subsets of one component together by
splitting them at cheap separators (`pgm.kernels.split_queries`); only queries spanning several
components take the per-query path (per component, then an outer product).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .kernels import contract as contraction
from .kernels.split_queries import split_marginals
from .junction_tree import Clique, JunctionTree
from .kernels.plans import MarginalPlan, conditional, sum_out


#: the least cell budget of the parts a batch of out-of-node queries holds for reuse (see _split_outside)
PARTS_CELLS = 1 << 22


class MarginalOracle:
    """Answers marginal queries (counts) from calibrated node beliefs of a junction tree."""

    def __init__(self, tree: JunctionTree, beliefs: Sequence[np.ndarray], total: float) -> None:
        self.tree = tree
        self.domain = tree.domain
        self.beliefs = list(beliefs)
        self.total = float(total)
        self._cache: dict[frozenset[str], tuple[Clique, np.ndarray]] = {}
        self._depth = [0] * len(tree.nodes)
        self._cells = [b.size for b in self.beliefs]
        self._chains: list[list[int]] = []  # each node and its ancestors up to the root
        for i in range(len(tree.nodes)):
            chain = [i]
            while tree.parent[chain[-1]] is not None:
                chain.append(tree.parent[chain[-1]])
            self._chains.append(chain)
        for parent, child in tree.distribute:
            self._depth[child] = self._depth[parent] + 1
        self._node_sets = [frozenset(n) for n in tree.nodes]
        self._attr_nodes: dict[str, list[int]] = {a: [] for a in self.domain.attrs}
        for i, n in enumerate(tree.nodes):
            for a in n:
                self._attr_nodes[a].append(i)
        self._attr_node_mask = {a: sum(1 << i for i in nodes) for a, nodes in self._attr_nodes.items()}
        self._component = [tree.component(i) for i in range(len(tree.nodes))]
        self._attr_component = {a: self._component[nodes[0]] for a, nodes in self._attr_nodes.items() if nodes}
        self._labels = {a: k for k, a in enumerate(self.domain.attrs)}
        self._messages: dict[tuple, np.ndarray] = {}  # see _component_query
        self._reductions: dict[tuple, np.ndarray] = {}  # see _reduced
        self._shares: dict[frozenset[str], tuple[Clique, np.ndarray]] = {}  # see _answer
        # homes, covers and split points depend only on the tree's shape: shared by every model on it
        self._shape = _shape_plans(tree)
        self._homes: dict[frozenset[str], int | None] = self._shape["homes"]
        self._covers: dict[frozenset[str], frozenset[int]] = self._shape["covers"]

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Counts over ``attrs`` with axes in the order given."""
        attrs = self.domain.check(attrs)
        order, table = self._cached(frozenset(attrs))
        if order == attrs:
            return table
        return np.transpose(table, [order.index(a) for a in attrs])

    def _cached(self, key: frozenset[str]) -> tuple[Clique, np.ndarray]:
        """(axis order, counts) of the attribute set ``key``, computed once."""
        found = self._cache.get(key)
        if found is None:
            order, table = self._answer(key)
            table.flags.writeable = False  # shared by every caller: an in-place edit must not corrupt the cache
            found = self._cache[key] = order, table
        return found

    def marginals(self, subsets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many marginals; each distinct attribute set is computed once, and the subsets that lie
        inside one node are read out of it together through a shared chain of single-axis sums."""
        if len(_CHECKED) > 64 and self.domain not in _CHECKED:
            _CHECKED.clear()
        checked = _CHECKED.setdefault(self.domain, set())  # candidates recur every round: check each once
        wanted = []
        for s in subsets:
            s = tuple(s)
            if s not in checked:
                self.domain.check(s)
                if len(checked) >= 100_000:
                    checked.clear()
                checked.add(s)
            wanted.append(s)
        by_home: dict[int, list[frozenset[str]]] = {}
        keys = [frozenset(w) for w in wanted]
        for attrs in dict.fromkeys(keys):
            if attrs and attrs not in self._cache:
                home = self._home(attrs)
                if home is not None:
                    by_home.setdefault(home, []).append(attrs)
        for home, group in by_home.items():
            node = self.tree.nodes[home]
            targets = tuple(tuple(a for a in node if a in g) for g in group)
            belief = self.beliefs[home]
            for attrs, order, table in zip(group, targets, _read_plan(self.domain, node, targets).run(belief)):
                if not table.flags.c_contiguous or np.may_share_memory(table, belief):
                    table = np.array(table)  # own copy (never the node table), in the order asked
                table.flags.writeable = False
                self._cache[attrs] = order, table
        self._split_outside(keys)
        out = []
        for attrs, key in zip(wanted, keys):  # already checked: read the cache directly
            order, table = self._cached(key)
            out.append(table if order == attrs else np.transpose(table, [order.index(a) for a in attrs]))
        return out

    def _split_outside(self, wanted: list[frozenset[str]]) -> None:
        """Cache the out-of-node subsets of one component, split at cheap separators sharing their
        parts (pgm.kernels.split_queries); of a subset spanning several components, its per-component
        parts (which the per-query path then multiplies out)."""
        outside: dict[frozenset[str], None] = {}
        component = self._attr_component
        for attrs in dict.fromkeys(wanted):
            if len(attrs) < 2 or attrs in self._cache:
                continue
            if len({component[a] for a in attrs}) == 1:  # the common case: one part, the subset itself
                parts = [attrs]
            else:
                by_component: dict[int, set[str]] = {}
                for a in attrs:
                    by_component.setdefault(component[a], set()).add(a)
                parts = [frozenset(part) for _, part in sorted(by_component.items())]
            for part in parts:
                if len(part) > 1 and part not in self._cache and self._home(part) is None:
                    outside[part] = None
        if len(outside) > 1:
            # cells of the parts held for reuse (for the batch only): the model's, and at least
            # PARTS_CELLS (32 MB) so small models recompute no part
            budget = max(sum(b.size for b in self.beliefs), PARTS_CELLS)
            for attrs, (order, table) in split_marginals(self, list(outside), budget).items():
                table.flags.writeable = False
                self._cache[attrs] = order, table

    def _home(self, attrs: frozenset[str]) -> int | None:
        """The smallest node containing ``attrs`` (None when no node does); memoised."""
        found = self._homes.get(attrs, -1)
        if found != -1:
            return found
        common = -1  # the nodes holding every attribute of attrs, as a bitmask
        for a in attrs:
            common &= self._attr_node_mask[a]
        if common == -1:  # no attribute: every node holds the empty set
            common = (1 << len(self._node_sets)) - 1
        hosts = [i for i in range(common.bit_length()) if common >> i & 1]
        found = self._homes[attrs] = min(hosts, key=lambda i: (self._cells[i], i)) if hosts else None
        return found

    def _answer(self, attrs: frozenset[str]) -> tuple[Clique, np.ndarray]:
        if not attrs:
            return (), np.array(self.total)
        home = self._home(attrs)
        if home is not None:
            node = self.tree.nodes[home]
            summed = tuple(i for i, a in enumerate(node) if a not in attrs)
            table = sum_out(self.beliefs[home], summed) if summed else self.beliefs[home].copy()
            return tuple(a for a in node if a in attrs), table
        by_component: dict[int, set[str]] = {}
        for a in attrs:
            by_component.setdefault(self._attr_component[a], set()).add(a)
        if len(by_component) == 1:
            return self._component_query(attrs)
        # each component's part is itself a (cached) marginal query: shared by every query it appears in
        order: Clique = ()
        table = None
        for _, q in sorted(by_component.items()):
            part_order, part = self._share(frozenset(q))
            table = part if table is None else np.multiply.outer(table, part)
            order += part_order
        return order, table * self.total

    def _share(self, key: frozenset[str]) -> tuple[Clique, np.ndarray]:
        """(axis order, marginal / total) of a part inside one component: shared by every query holding it."""
        share = self._shares.get(key)
        if share is None:
            part_order, part = self._cached(key)
            share = self._shares[key] = part_order, part / self.total
        return share

    def _reduced(self, node: int, top: bool, attrs: Clique) -> np.ndarray:
        """The node's counts over ``attrs`` (top), or the conditional mu_attrs / mu_separator (cached).

        ``attrs`` holds the separator for a non-top node, so summing first and dividing after
        gives the same conditional as dividing the whole node table, at a fraction of the cost.
        """
        key = (node, top, attrs)
        if key not in self._reductions:
            summed = tuple(i for i, a in enumerate(self.tree.nodes[node]) if a not in attrs)
            table = self.beliefs[node]
            if summed:
                table = sum_out(table, summed)
            if not top:  # divide by the separator marginal (0 where it has no mass)
                sep = set(self.tree.separator(node))
                table = conditional(table, tuple(i for i, a in enumerate(attrs) if a not in sep))
            self._reductions[key] = table
        return self._reductions[key]

    def _path_to(self, node: int, targets: set[int]) -> list[int]:
        """Nodes on the tree path from ``node`` to the nearest member of the connected set ``targets``."""
        ancestors = self._chains[node]
        for k, anc in enumerate(ancestors):
            if anc in targets:
                return ancestors[: k + 1]
        # Otherwise the nearest target is the set's top node: go up to the common ancestor, then down.
        top = min(targets, key=lambda i: (self._depth[i], i))
        up = [top]
        while up[-1] not in ancestors:
            up.append(self.tree.parent[up[-1]])
        return ancestors[: ancestors.index(up[-1]) + 1] + list(reversed(up[:-1]))

    def _cover(self, attrs: frozenset[str]) -> frozenset[int]:
        """A small connected set of nodes of one component that covers ``attrs`` (memoised per tree shape)."""
        found = self._covers.get(attrs)
        if found is None:
            found = self._covers[attrs] = frozenset(self._find_cover(attrs))
        return found

    def _find_cover(self, attrs: frozenset[str]) -> set[int]:
        first = max(
            {i for a in attrs for i in self._attr_nodes[a]},
            key=lambda i: (len(attrs & self._node_sets[i]), -self._cells[i], -i),
        )
        chosen = {first}
        covered = set(attrs & self._node_sets[first])
        for a in sorted(attrs - covered, key=self._labels.__getitem__):
            if a in covered:
                continue
            best = min(
                (self._path_to(i, chosen) for i in self._attr_nodes[a]),
                key=lambda p: (len(p), sum(map(self._cells.__getitem__, p)), p[0]),
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
        labels = self._labels
        messages: dict[int, tuple[Clique, np.ndarray]] = {}
        below: dict[int, frozenset[int]] = {}  # cover nodes in each node's subtree
        for node in self._postorder(top, children):
            below[node] = frozenset().union(*(below[c] for c in children[node])) | {node}
            keep = set(attrs) | (set(self.tree.separator(node)) if node != top else set())
            scope = set(self.tree.nodes[node]).union(*(messages[c][0] for c in children[node]))
            out = tuple(a for a in self.domain.attrs if a in scope and a in keep)
            # A message depends only on (node, its cover subtree, the attributes it carries), so
            # it is shared by every query with the same subtree part (and never for the top node,
            # whose belief is not a conditional).
            key = (node, below[node], out) if node != top else None
            cached = self._messages.get(key) if key is not None else None
            if cached is not None:
                messages[node] = out, cached
                continue
            needed = keep.union(*(messages[c][0] for c in children[node]))
            own = tuple(a for a in self.tree.nodes[node] if a in needed)
            table = self._reduced(node, node == top, own)
            if node != top and not children[node] and out == own:
                result = table  # a leaf conditional kept whole: nothing to contract or sum
            else:
                operands: list = [table, [labels[a] for a in own]]
                for c in children[node]:
                    c_attrs, c_table = messages[c]
                    operands += [c_table, [labels[a] for a in c_attrs]]
                result = _einsum(operands, [labels[a] for a in out])
            if key is not None:
                self._messages[key] = result
            messages[node] = out, result
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


_CHECKED: dict = {}  # domain -> attribute tuples already validated against it
_PLANS: dict[tuple, MarginalPlan] = {}  # (domain, node, targets) -> its read plan, across trees and rounds


def _read_plan(domain, node: Clique, targets: tuple[Clique, ...]) -> MarginalPlan:
    """The plan reading ``targets`` out of a node's belief: it depends on the node's attributes and
    the targets only, so it carries over to every later tree (AIM round) that keeps the node."""
    key = (domain, node, targets)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= 20_000:
            _PLANS.clear()
        plan = _PLANS[key] = MarginalPlan(node, dict(zip(domain.attrs, domain.shape)), targets)
    return plan


_SHAPES: dict[tuple, dict[str, dict]] = {}  # tree shape -> its memo tables (the few latest shapes)


def _shape_plans(tree: JunctionTree) -> dict[str, dict]:
    """Memo tables (homes, covers, split points) of the tree's shape: its nodes
    and parents fix every one of them (node sizes are domain sizes), so models on one tree share them."""
    key = (tree.domain, tree.nodes, tree.parent)
    found = _SHAPES.pop(key, None)
    if found is None:
        found = {"homes": {}, "covers": {}, "splits": {}}
    while len(_SHAPES) >= 4:
        _SHAPES.pop(next(iter(_SHAPES)))  # the least recently used shape
    _SHAPES[key] = found
    return found


def _einsum(operands: list, output: list[int]) -> np.ndarray:
    """Contract tables given in einsum sublist form ``[t0, labels0, t1, labels1, ...]`` onto ``output``.

    Labels are renumbered into einsum's 52-label range. Tables are folded in one at a time
    (pairwise einsum, keeping only labels still needed later), after summing out of the first
    table what no other operand needs: the product space stays small and no contraction-path
    search runs per call.
    """
    mapping: dict[int, int] = {}
    tables = operands[0::2]
    subs = [[mapping.setdefault(lab, len(mapping)) for lab in item] for item in operands[1::2]]
    if len(mapping) > 52:
        raise ValueError("a marginal query touches more than 52 attributes in one contraction")
    out = [mapping[lab] for lab in output]
    acc, acc_sub = tables[0], subs[0]
    for k in range(1, len(tables)):
        needed = set(out).union(*subs[k:])
        if any(lab not in needed for lab in acc_sub):  # sum out early what nothing later needs
            kept = [lab for lab in acc_sub if lab in needed]
            acc, acc_sub = np.einsum(acc, acc_sub, kept), kept
        needed_after = set(out).union(*subs[k + 1 :])
        keep = [lab for lab in dict.fromkeys(acc_sub + subs[k]) if lab in needed_after]
        acc, acc_sub = contraction.pair(acc, acc_sub, tables[k], subs[k], keep), keep
    if acc_sub == out and len(tables) > 1:
        return acc  # already a fresh array in the requested axis order
    return np.einsum(acc, acc_sub, out)
