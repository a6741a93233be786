"""Many out-of-node marginal queries from one calibrated junction tree, sharing the messages.

A query Q that no node contains, but that splits as Q = {x} + R with R inside some node, is
answered by an *anchor pass* of x: starting at a node h holding x, walk the tree outwards,
carrying the joint table of x with the separator towards the next node. At a node n entered
through separator S, the joint of x with the attributes n needs (S, the separators to the
nodes further out, and the R's of the queries answered at n) is

    J_n = M_n[x, S] * mu_n[needed] / mu_n[S]

(x lies in S whenever it lies in n, by the running-intersection property). Every query answered
at n and every message to a node further out is a marginal of J_n, read through one shared
`MarginalPlan`. So one pass per anchor answers all of its queries: the pairs (and triples) touching
an attribute cost one walk over the part of the tree they span instead of one contraction per
query. Anchors are chosen greedily (the attribute that answers most pending queries first).
Queries that no anchor can answer this way, that span several components, or whose joint tables
would exceed ``max_cells`` are left to the caller (the per-query path of `MarginalOracle`).
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

import numpy as np

from .junction_tree import Clique, JunctionTree
from .plans import reduce_axes


def _neighbours(tree: JunctionTree) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in tree.nodes]
    for child, parent in tree.collect:
        out[child].append(parent)
        out[parent].append(child)
    return out


def anchored_marginals(
    tree: JunctionTree,
    beliefs: Sequence[np.ndarray],
    queries: Sequence[frozenset[str]],
) -> dict[frozenset[str], tuple[Clique, np.ndarray]]:
    """Answers (axis order, counts) for the ``queries`` an anchor pass can serve; the others are left out."""
    domain = tree.domain
    sizes = dict(zip(domain.attrs, domain.shape))
    node_sets = [frozenset(n) for n in tree.nodes]
    cells = [b.size for b in beliefs]
    comp = [tree.component(i) for i in range(len(tree.nodes))]
    attr_comp = {a: comp[i] for i, n in enumerate(tree.nodes) for a in n}
    hosts_of: dict[frozenset[str], list[int]] = {}

    def hosts(rest: frozenset[str]) -> list[int]:
        if rest not in hosts_of:
            hosts_of[rest] = [i for i, s in enumerate(node_sets) if rest <= s]
        return hosts_of[rest]

    # which anchors can serve which query
    options: dict[str, list[frozenset[str]]] = {}
    for q in queries:
        if len(q) < 2 or len({attr_comp[a] for a in q}) > 1:
            continue
        for x in q:
            if hosts(q - {x}):
                options.setdefault(x, []).append(q)
    pending = {q for qs in options.values() for q in qs}
    rank = {a: i for i, a in enumerate(domain.attrs)}
    neighbours = _neighbours(tree)
    cache: dict[tuple, np.ndarray] = {}

    def conditionals(node: int, entry: Clique, wanted: Clique) -> np.ndarray:
        """mu_node over ``wanted`` (node order) divided by mu_node over ``entry`` (0 where that is 0); cached."""
        key = (node, entry, wanted)
        if key not in cache:
            attrs = tree.nodes[node]
            summed = tuple(i for i, v in enumerate(attrs) if v not in wanted)
            table = reduce_axes(np.sum, beliefs[node], summed) if summed else beliefs[node]
            table = table.reshape([sizes[v] for v in wanted])
            if entry:
                axes = tuple(i for i, v in enumerate(wanted) if v not in entry)
                denom = reduce_axes(np.sum, table, axes) if axes else table
                with np.errstate(divide="ignore", invalid="ignore"):
                    table = np.where(denom > 0, table / denom, 0.0)
            cache[key] = table
        return cache[key]
    answers: dict[frozenset[str], tuple[Clique, np.ndarray]] = {}
    while pending:
        x = max(options, key=lambda a: (sum(q in pending for q in options[a]), -sizes[a], -rank[a]))
        mine = [q for q in options.pop(x) if q in pending]
        if not mine:
            break
        pending.difference_update(mine)
        answers.update(_anchor_pass(tree, x, mine, cells, neighbours, hosts, conditionals))
    return answers


def _anchor_pass(tree, x, mine, cells, neighbours, hosts, conditionals):
    """Answers of the queries ``mine`` (each {x} + R, R inside a node) by one walk from a node holding x."""
    home = min((i for i, n in enumerate(tree.nodes) if x in n), key=lambda i: (cells[i], i))
    towards: dict[int, int | None] = {home: None}  # breadth-first tree from home: node -> previous node
    dist = {home: 0}
    queue = deque([home])
    while queue:
        node = queue.popleft()
        for nb in neighbours[node]:
            if nb not in towards:
                towards[nb], dist[nb] = node, dist[node] + 1
                queue.append(nb)
    at: dict[int, list[frozenset[str]]] = {}
    for q in mine:
        target = min(hosts(q - {x}), key=lambda i: (dist[i], cells[i], i))
        at.setdefault(target, []).append(q)
    nexts: dict[int, list[int]] = {}
    for target in at:  # the subtree spanned by home and the targets
        node = target
        while node != home and node not in nexts:
            nexts[node] = []
            node = towards[node]
    nexts.setdefault(home, [])
    for node in nexts:
        if node != home:
            nexts[towards[node]].append(node)

    def sep(a: int, b: int) -> Clique:
        return tuple(v for v in tree.nodes[a] if v in tree.nodes[b])

    answers = {}
    # (node, message) pairs still to expand; the home node starts from its own belief
    stack: list[tuple[int, np.ndarray | None, Clique]] = [(home, None, ())]
    while stack:
        node, message, message_labels = stack.pop()
        if message is None:  # home: every message out is a marginal of the belief (x included)
            for c in nexts[node]:
                want = tuple(v for v in tree.nodes[node] if v == x or v in sep(node, c))
                stack.append((c, conditionals(node, (), want), want))
            continue
        entry = sep(node, towards[node])
        outs = [(c, sep(node, c)) for c in nexts[node]] + [(None, tuple(q - {x})) for q in at.get(node, [])]
        for c, part in outs:
            wanted = tuple(v for v in tree.nodes[node] if v in entry or v in part)
            table = conditionals(node, entry, wanted)
            result_labels = tuple(dict.fromkeys((x,) + tuple(v for v in wanted if v in part)))
            index = {v: k for k, v in enumerate(dict.fromkeys(message_labels + wanted))}
            big = message.size * table.size > 1 << 22
            result = np.einsum(message, [index[v] for v in message_labels], table, [index[v] for v in wanted],
                               [index[v] for v in result_labels], optimize=big)
            if c is not None:
                stack.append((c, result, result_labels))
            else:
                answers[frozenset(result_labels)] = (result_labels, np.array(result))
    return answers
