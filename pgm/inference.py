"""Belief propagation on a junction tree, in log space and float64.

`TreeEngine` compiles, once per (tree, potential cliques), everything the hot loop needs:
where each potential clique lands in its node (axis permutation and broadcast shape), which
axes each message sums out, and how each node belief projects back onto the potential cliques.
`calibrate` then runs the HUGIN two-pass schedule:

- collect (leaves -> root): message = logsumexp of the child's belief over non-separator axes;
- each root's belief is then complete: it is normalised to counts summing to ``total`` (per
  connected component) and exponentiated;
- distribute (root -> leaves): the parent already holds counts, so its separator marginal is a
  plain sum; the child adds log(that marginal) minus the message it sent up (``-inf - -inf`` is
  mapped to -inf: a separator state that is impossible in the child's subtree stays impossible)
  and is exponentiated: every node ends with its exact, normalised counts.

Stable with -inf potentials (structural zeros) and potentials far outside exp's range: every
log-space reduction is max-shifted per slice, and the distribute sums run over counts (<= total).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from marginals.domain import Domain

from .factor import logsumexp
from .junction_tree import Clique, JunctionTree


class TreeEngine:
    """Compiled belief propagation for potentials on ``cliques`` over the junction tree ``tree``."""

    def __init__(self, tree: JunctionTree, cliques: Sequence[Sequence[str]]) -> None:
        self.tree = tree
        domain = tree.domain
        self.domain = domain
        self.cliques: tuple[Clique, ...] = tuple(tuple(c) for c in cliques)
        self.node_shapes = [domain.project(n).shape for n in tree.nodes]
        # Each potential clique goes to the smallest node containing it (ties: first node).
        self.home: list[int] = []
        self._to_node: list[tuple[list[int], list[int]]] = []  # (permutation, broadcast shape)
        self._from_node: list[tuple[tuple[int, ...], list[int]]] = []  # (summed axes, permutation)
        for cl in self.cliques:
            hosts = tree.containing(cl)
            if not hosts:
                raise ValueError(f"clique {cl} is not covered by any junction-tree node")
            home = min(hosts, key=lambda i: (domain.size(tree.nodes[i]), i))
            node = tree.nodes[home]
            present = [a for a in node if a in cl]  # node order
            perm = [cl.index(a) for a in present]
            shape = [domain[a] if a in cl else 1 for a in node]
            self.home.append(home)
            self._to_node.append((None if perm == sorted(perm) else perm, shape))
            summed = tuple(i for i, a in enumerate(node) if a not in cl)
            back = [present.index(a) for a in cl]
            self._from_node.append((summed, back))
        # Messages: axes of the sender summed out, broadcast shape in the receiver.
        self._msg_axes: dict[int, tuple[int, ...]] = {}
        self._msg_shape_parent: dict[int, list[int]] = {}
        self._msg_axes_down: dict[int, tuple[int, ...]] = {}
        self._msg_shape_child: dict[int, list[int]] = {}
        for child, parent in tree.collect:
            sep = set(tree.separator(child))
            cnode, pnode = tree.nodes[child], tree.nodes[parent]
            self._msg_axes[child] = tuple(i for i, a in enumerate(cnode) if a not in sep)
            self._msg_shape_parent[child] = [domain[a] if a in sep else 1 for a in pnode]
            self._msg_axes_down[child] = tuple(i for i, a in enumerate(pnode) if a not in sep)
            self._msg_shape_child[child] = [domain[a] if a in sep else 1 for a in cnode]

    def node_potentials(self, log_potentials: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Sum the clique log-potentials into full node tables."""
        nodes = [np.zeros(s) for s in self.node_shapes]
        for value, home, (perm, shape) in zip(log_potentials, self.home, self._to_node):
            nodes[home] += (value if perm is None else value.transpose(perm)).reshape(shape)
        return nodes

    def calibrate(self, log_potentials: Sequence[np.ndarray], total: float) -> list[np.ndarray]:
        """Node marginals (counts summing to ``total`` in every component) for the given log-potentials."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._calibrate(log_potentials, total)

    def _calibrate(self, log_potentials: Sequence[np.ndarray], total: float) -> list[np.ndarray]:
        beliefs = self.node_potentials(log_potentials)
        up: dict[int, np.ndarray] = {}
        for child, parent in self.tree.collect:
            msg = _lse(beliefs[child], self._msg_axes[child])
            up[child] = msg
            beliefs[parent] += msg.reshape(self._msg_shape_parent[child])
        log_total = np.log(total)
        for root in self.tree.roots:  # each root belief is complete: normalise it to counts
            b = beliefs[root]
            log_z = float(logsumexp(b, None))
            if not np.isfinite(log_z):
                raise FloatingPointError("the model assigns zero probability to every state")
            b += log_total - log_z
            np.exp(b, out=b)
        for parent, child in self.tree.distribute:
            # The parent holds final counts, so the separator marginal is a plain sum (no
            # max-shift, exp or log over the parent table), and the HUGIN update
            # child += log(parent's separator counts) - (what the child sent up) leaves the child
            # with its counts, already normalised, after one exp.
            msg = np.log(beliefs[parent].sum(axis=self._msg_axes_down[child]))
            msg -= up[child]
            msg[np.isnan(msg)] = -np.inf  # -inf - -inf: the state is impossible in the child's subtree
            b = beliefs[child]
            b += msg.reshape(self._msg_shape_child[child])
            np.exp(b, out=b)
        return beliefs

    def clique_marginals(self, beliefs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Marginals of the potential cliques (axes in each clique's order) from calibrated beliefs."""
        out = []
        for home, (summed, back) in zip(self.home, self._from_node):
            table = beliefs[home].sum(axis=summed) if summed else beliefs[home]
            out.append(table.transpose(back) if back != sorted(back) else table)
        return out


def _lse(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """logsumexp over ``axes`` for the hot loop (caller silences divide warnings); all -inf -> -inf."""
    if not axes:
        return values.copy()
    peak = values.max(axis=axes, keepdims=True)
    np.maximum(peak, -1e300, out=peak)  # an all -inf slice: exp(-inf - (-1e300)) = 0, log 0 = -inf
    shifted = values - peak
    np.exp(shifted, out=shifted)
    out = np.log(shifted.sum(axis=axes, keepdims=True))
    out += peak
    return out.reshape([n for i, n in enumerate(values.shape) if i not in axes])


def brute_force_joint(domain: Domain, cliques: Sequence[Sequence[str]], log_potentials: Sequence[np.ndarray], total: float) -> np.ndarray:
    """The full joint table (counts) of a small model, for tests: exp(sum of potentials), normalised."""
    log_joint = np.zeros(domain.shape)
    for cl, value in zip(cliques, log_potentials):
        present = [a for a in domain.attrs if a in cl]
        arr = np.transpose(value, [list(cl).index(a) for a in present])
        log_joint = log_joint + arr.reshape([domain[a] if a in cl else 1 for a in domain.attrs])
    log_joint = log_joint - logsumexp(log_joint, None) + np.log(total)
    return np.exp(log_joint)
