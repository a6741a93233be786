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
log-space reduction is max-shifted (one shift for the whole table, redone per slice when a
slice's shifted sum underflows), and the distribute sums run over counts (<= total).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from marginals.domain import Domain

from .factor import logsumexp
from .junction_tree import Clique, JunctionTree
from .plans import AdditionPlan, MarginalPlan, reduce_axes


class TreeEngine:
    """Compiled belief propagation for potentials on ``cliques`` over the junction tree ``tree``."""

    def __init__(self, tree: JunctionTree, cliques: Sequence[Sequence[str]]) -> None:
        self.tree = tree
        domain = tree.domain
        self.domain = domain
        self.cliques: tuple[Clique, ...] = tuple(tuple(c) for c in cliques)
        sizes = dict(zip(domain.attrs, domain.shape))
        # Each potential clique goes to the smallest node containing it (ties: first node).
        self.home: list[int] = []
        hosted: list[list[int]] = [[] for _ in tree.nodes]
        for k, cl in enumerate(self.cliques):
            hosts = tree.containing(cl)
            if not hosts:
                raise ValueError(f"clique {cl} is not covered by any junction-tree node")
            home = min(hosts, key=lambda i: (domain.size(tree.nodes[i]), i))
            self.home.append(home)
            hosted[home].append(k)
        children: list[list[int]] = [[] for _ in tree.nodes]
        for child, parent in tree.collect:
            children[parent].append(child)
        self._hosted = hosted
        self._children = children
        # Potentials arrive in clique order; the plans work in node (domain) order.
        self._to_node_order = []
        for cl in self.cliques:
            node_order = [a for a in domain.attrs if a in cl]
            perm = tuple(cl.index(a) for a in node_order)
            self._to_node_order.append(None if perm == tuple(range(len(cl))) else perm)
        self._add_plans, self._marg_plans, self._up_axes = [], [], []
        for i, node in enumerate(tree.nodes):
            items = [tuple(a for a in node if a in self.cliques[k]) for k in hosted[i]]
            items += [tree.separator(c) for c in children[i]]
            self._add_plans.append(AdditionPlan(node, sizes, items))
            targets = [self.cliques[k] for k in hosted[i]] + [tree.separator(c) for c in children[i]]
            self._marg_plans.append(MarginalPlan(node, sizes, targets))
            sep = set(tree.separator(i))
            self._up_axes.append(tuple(j for j, a in enumerate(node) if a not in sep))
        self._down_shape = {
            c: [domain[a] if a in set(tree.separator(c)) else 1 for a in tree.nodes[c]]
            for c, _ in tree.collect
        }
        # Post-order over every node (children before parents, each root after its tree).
        self._collect_order = [child for child, _ in tree.collect] + list(tree.roots)
        self._slots: dict[int, list[np.ndarray]] = {}
        self._scratch_flat: np.ndarray | None = None
        self._distribute_order = list(reversed(self._collect_order))

    def calibrate(self, log_potentials: Sequence[np.ndarray], total: float) -> list[np.ndarray]:
        """Node marginals (counts summing to ``total`` in every component) for the given log-potentials."""
        return self.calibrate_marginals(log_potentials, total)[0]

    def calibrate_marginals(
        self, log_potentials: Sequence[np.ndarray], total: float, slot: int | None = None
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Calibrated node counts and the marginals of the potential cliques, in one pass.

        With ``slot`` (any small int) the node tables live in buffers the engine keeps for that
        slot and reuses on the next call with the same slot: the results stay valid until then.
        Without it, fresh tables are allocated.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._calibrate(log_potentials, total, slot)

    def _buffers(self, slot: int | None) -> list[np.ndarray | None]:
        if slot is None:
            return [None] * len(self.tree.nodes)
        if slot not in self._slots:
            self._slots[slot] = [np.empty(p.shape) for p in self._add_plans]
        return self._slots[slot]

    def _scratch(self, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        if self._scratch_flat is None or self._scratch_flat.size < size:
            self._scratch_flat = np.empty(max(size, max(math.prod(p.shape) for p in self._add_plans)))
        return self._scratch_flat[:size].reshape(shape)

    def _calibrate(self, log_potentials, total, slot):
        tree = self.tree
        buffers = self._buffers(slot)
        in_node_order = [
            v if perm is None else v.transpose(perm) for v, perm in zip(log_potentials, self._to_node_order)
        ]
        beliefs: list[np.ndarray | None] = [None] * len(tree.nodes)
        up: dict[int, np.ndarray] = {}
        for i in self._collect_order:
            tables = [in_node_order[k] for k in self._hosted[i]] + [up[c] for c in self._children[i]]
            belief = self._add_plans[i].run(tables, out=buffers[i])
            beliefs[i] = belief
            if tree.parent[i] is not None:
                up[i] = _lse(belief, self._up_axes[i], self._scratch(belief.shape))
            else:  # a root's belief is complete: turn it into counts summing to total
                peak = belief.max()
                if not np.isfinite(peak):
                    raise FloatingPointError("the model assigns zero probability to every state")
                belief -= peak
                np.exp(belief, out=belief)
                belief *= total / belief.sum()
        marginals: list[np.ndarray | None] = [None] * len(self.cliques)
        for i in self._distribute_order:
            # Node i holds final counts: read out its potentials' marginals and, for each child,
            # the separator counts; the HUGIN update child += log(separator counts) - (what the
            # child sent up) leaves the child with its counts after one exp.
            outs = self._marg_plans[i].run(beliefs[i])
            hosted = self._hosted[i]
            for k, table in zip(hosted, outs):
                marginals[k] = table
            for c, sep_counts in zip(self._children[i], outs[len(hosted) :]):
                msg = np.log(sep_counts)
                msg -= up[c]
                msg[np.isnan(msg)] = -np.inf  # -inf - -inf: impossible in the child's subtree
                b = beliefs[c]
                b += msg.reshape(self._down_shape[c])
                np.exp(b, out=b)
        return beliefs, marginals

    def clique_marginals(self, beliefs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Marginals of the potential cliques (axes in each clique's order) from calibrated beliefs."""
        out: list[np.ndarray | None] = [None] * len(self.cliques)
        for i, hosted in enumerate(self._hosted):
            if hosted:
                for k, table in zip(hosted, self._marg_plans[i].run(beliefs[i])):
                    out[k] = table
        return out


#: a slice whose shifted sum falls below this has lost precision to underflow: redo it exactly.
_UNDERFLOW = 1e-290


def _lse(values: np.ndarray, axes: tuple[int, ...], scratch: np.ndarray | None = None) -> np.ndarray:
    """logsumexp over ``axes`` for the hot loop (caller silences divide warnings); all -inf -> -inf.

    One global max shift serves every slice; a slice whose shifted sum underflows (or a table with
    -inf entries, which yields zero sums) is recomputed with a max shift per slice. ``scratch``
    (same shape as ``values``) receives the shifted exponentials instead of a new array.
    """
    if not axes:
        return values.copy()
    keep = [n for i, n in enumerate(values.shape) if i not in axes]
    peak = float(values.max())
    if np.isfinite(peak):
        shifted = np.subtract(values, peak, out=scratch)
        np.exp(shifted, out=shifted)
        sums = reduce_axes(np.sum, shifted, axes)
        if sums.min() >= _UNDERFLOW:
            out = np.log(sums)
            out += peak
            return out.reshape(keep)
    slice_peak = reduce_axes(np.max, values, axes)
    np.maximum(slice_peak, -1e300, out=slice_peak)  # an all -inf slice: exp(-inf) = 0, log 0 = -inf
    shifted = np.subtract(values, slice_peak, out=scratch)
    np.exp(shifted, out=shifted)
    out = np.log(reduce_axes(np.sum, shifted, axes))
    out += slice_peak
    return out.reshape(keep)


def brute_force_joint(domain: Domain, cliques: Sequence[Sequence[str]], log_potentials: Sequence[np.ndarray], total: float) -> np.ndarray:
    """The full joint table (counts) of a small model, for tests: exp(sum of potentials), normalised."""
    log_joint = np.zeros(domain.shape)
    for cl, value in zip(cliques, log_potentials):
        present = [a for a in domain.attrs if a in cl]
        arr = np.transpose(value, [list(cl).index(a) for a in present])
        log_joint = log_joint + arr.reshape([domain[a] if a in cl else 1 for a in domain.attrs])
    log_joint = log_joint - logsumexp(log_joint, None) + np.log(total)
    return np.exp(log_joint)
