"""Reference inference: the plain algorithms that the fast engine (`pgm.inference.TreeEngine`)
is tested against. Read these to learn what the engine computes.

`belief_propagation` is the textbook two-pass sum-product algorithm on a junction tree, in log
space, written with `Factor` operations only (no compiled plans, no caching, no threads):

1. each potential goes to one node that contains its clique; a node's log-potential is the sum
   of the potentials it holds (the empty sum: 0, a uniform table);
2. collect (leaves -> root): each node sends its parent the logsumexp, over the attributes not
   in their separator, of its log-potential plus the messages from its children;
3. distribute (root -> leaves): each node sends each child the same, from its log-potential
   plus every message it received except the one from that child;
4. a node's belief is its log-potential plus every message it received; exponentiated and
   normalised to ``total`` it gives the node's counts (per connected component of the forest).

`brute_force_joint` forms the whole joint table: only for tiny domains.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from marginals.domain import Domain

from .factor import Factor, logsumexp
from .junction_tree import JunctionTree


def belief_propagation(tree: JunctionTree, cliques: Sequence[Sequence[str]],
                       log_potentials: Sequence[np.ndarray], total: float) -> list[Factor]:
    """Calibrated node counts (one `Factor` per node of ``tree``, axes in node order) of the model
    with ``log_potentials`` on ``cliques``; every connected component sums to ``total``."""
    domain = tree.domain
    node_logs = [Factor.zeros(domain.project(node)) for node in tree.nodes]
    for clique, values in zip(cliques, log_potentials):
        hosts = tree.containing(clique)
        if not hosts:
            raise ValueError(f"clique {tuple(clique)} is not covered by any junction-tree node")
        node_logs[hosts[0]] = node_logs[hosts[0]] + Factor(domain.project(clique), values)
    inbox: list[dict[int, Factor]] = [{} for _ in tree.nodes]  # inbox[i][j]: the message j sent i

    def gathered(i: int, skip: int | None = None) -> Factor:
        """Node ``i``'s log-potential plus the messages it received, but the one from ``skip``."""
        table = node_logs[i]
        for sender, message in inbox[i].items():
            if sender != skip:
                table = table + message
        return table

    def send(sender: int, receiver: int) -> None:
        shared = set(tree.nodes[sender]) & set(tree.nodes[receiver])
        table = gathered(sender, skip=receiver)
        inbox[receiver][sender] = table.logsumexp([a for a in table.attrs if a not in shared])

    for child, parent in tree.collect:  # leaves first: a child has heard from all its children
        send(child, parent)
    for parent, child in tree.distribute:  # root first: a parent has heard from all its neighbours
        send(parent, child)
    return [gathered(i).normalize(total, log=True).exp() for i in range(len(tree.nodes))]


def brute_force_joint(domain: Domain, cliques: Sequence[Sequence[str]], log_potentials: Sequence[np.ndarray], total: float) -> np.ndarray:
    """The full joint table (counts) of a small model, for tests: exp(sum of potentials), normalised."""
    log_joint = np.zeros(domain.shape)
    for cl, value in zip(cliques, log_potentials):
        present = [a for a in domain.attrs if a in cl]
        arr = np.transpose(value, [list(cl).index(a) for a in present])
        log_joint = log_joint + arr.reshape([domain[a] if a in cl else 1 for a in domain.attrs])
    log_joint = log_joint - logsumexp(log_joint, None) + np.log(total)
    return np.exp(log_joint)
