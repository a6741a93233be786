"""The node tables of one belief propagation (`pgm.inference.TreeEngine.propagate`).

`PassState` is what the two passes read and write per node: its table, its message up, the
separator sums that message came from, and what a large table still owes (a factor not yet
applied in place). `Calibration` is what a propagation hands back: the potential cliques'
marginals at once, the node counts only when asked (owed factors applied then, once).
"""

from __future__ import annotations

import numpy as np

from .kernels import threads


class PassState:
    """The working tables of one propagation over a tree of ``nodes`` nodes; ``buffers`` are the
    arrays node tables are written into (None entries: allocate fresh)."""

    __slots__ = ("buffers", "beliefs", "up", "sums", "positive", "deferred", "factors", "owed")

    def __init__(self, buffers: list[np.ndarray | None], nodes: int) -> None:
        self.buffers = buffers
        self.beliefs: list[np.ndarray | None] = [None] * nodes
        self.up: dict[int, np.ndarray] = {}  # log message to the parent
        self.sums: dict[int, np.ndarray] = {}  # separator sums of a child's exponentials
        self.positive: set[int] = set()  # children whose separator sums are all > 0
        self.deferred: dict[int, tuple[list[np.ndarray], float]] = {}  # roots normalised at read-out
        self.factors: dict[int, list[np.ndarray]] = {}  # factored nodes: their exponentiated factors
        self.owed: list[np.ndarray | float | None] = [None] * nodes  # factors not yet applied in place


class Calibration:
    """The result of one belief propagation: the potential cliques' marginals (counts), and the
    node tables, of which large ones may still owe a factor (applied in place on first request)."""

    def __init__(self, tables: list, owed: list, to_node: list, marginals: list[np.ndarray], unformed: dict | None = None) -> None:
        self.marginals = marginals
        self._tables, self._owed, self._to_node = tables, owed, to_node
        self._unformed = unformed or {}  # node -> (its AdditionPlan, its exponentiated factors)

    def beliefs(self) -> list[np.ndarray]:
        """Calibrated node counts, axes in node order (views of the engine's buffers for a slot)."""
        for i, (plan, exps) in sorted(self._unformed.items()):
            self._tables[i] = plan.product(exps, out=self._tables[i])
        self._unformed = {}
        for i, factor in enumerate(self._owed):
            if factor is not None:
                threads.scale(self._tables[i], factor)
                self._owed[i] = None
        return [b if p is None else b.transpose(p) for b, p in zip(self._tables, self._to_node)]
