"""Belief propagation on a junction tree, in log space and float64.

`TreeEngine` compiles, once per (tree, potential cliques), everything the hot loop needs:
where each potential clique lands in its node (axis permutation and broadcast shape), which
axes each message sums out, and how each node belief projects back onto the potential cliques.
`calibrate` / `propagate` then run the HUGIN two-pass schedule:

- collect (leaves -> root): message = logsumexp of the child's belief over non-separator axes;
- each root's belief is then complete: it is normalised to counts summing to ``total`` (per
  connected component) and exponentiated;
- the collect pass leaves each non-root node holding exp(belief - shift) and the sums of that
  over its separator states (the message is their log plus the shift);
- distribute (root -> leaves): the parent already holds counts, so its separator marginal is a
  plain sum; the child is multiplied by (that marginal / its own separator sums), i.e. its
  conditional given the separator times the separator counts (0 where its sum is 0: a separator
  state impossible in the child's subtree, whose count is 0 too). Every node ends with its
  exact, normalised counts, after one exp per cell.

Large nodes (the product-built ones) skip the rescaling passes: a child keeps the factor it owes
(separator counts / its separator sums) and reads its marginals out of table x factor in one
two-operand sum each; a root is normalised at read-out (its mass is the sum of a read-out, its
read-outs are rescaled, not the table). `propagate` returns a `Calibration` (`pgm.calibration`):
the potential cliques' marginals at once, the node counts only when asked (`Calibration.beliefs`
applies what is owed, once) — mirror descent asks for them once per fit, not per step. The
passes over large tables run on every core (`pgm.kernels.threads`).

Large nodes whose factors (merged summands, exponentiated) overlap little are not formed at all
while propagating: their message up and their read-outs (with the owed factor) are contractions
of the factors, a few BLAS matrix products (`pgm.kernels.factored`), chosen per node at compile time when
their estimated cost is below that of forming the table and reading it out. Their tables are
formed only when `Calibration.beliefs` is asked for.

Stable with -inf potentials (structural zeros) and potentials far outside exp's range: a node's
table is built directly as exp(log-table - bound), the product of its summands' exponentials
each shifted by its own max (bound: the sum of those maxima, >= the table's max; no exp pass
over the node), and redone from the log-table with its own max (root) or per-slice maxima
(other nodes) when the bound was too loose for full precision; the distribute sums run over counts
(<= total). Node tables are stored with their attributes by increasing size (long inner loops
for numpy) and handed out as views in node order. Sums over axes go through `plans.sum_out`
(one einsum pass where numpy's axis sums are slow), its choices made once per table shape
(`plans.sum_plan`).

Per node, the collect step is `_collect_factored` (read out of its factors) or `_collect_formed`
(its table built, then `_collect`, or `_normalise` for a root); the distribute step reads it out
(`_read_out`: `_read_factored`, `_read_root` or its marginal plan) and `_send_down` hands each
child its factor. The textbook algorithm without any of this is
`pgm.reference.belief_propagation`; the tests tie the two together.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .calibration import Calibration, PassState
from .junction_tree import Clique, JunctionTree
from .kernels import threads
from .kernels.factored import FactorPlan, choose_reading
from .kernels.plans import AdditionPlan, addition_plan, marginal_plan, reduce_axes, sum_plan


class TreeEngine:
    """Compiled belief propagation for potentials on ``cliques`` over the junction tree ``tree``."""

    def __init__(self, tree: JunctionTree, cliques: Sequence[Sequence[str]]) -> None:
        self.tree = tree
        domain = tree.domain
        self.domain = domain
        self.cliques: tuple[Clique, ...] = tuple(tuple(c) for c in cliques)
        sizes = dict(zip(domain.attrs, domain.shape))
        self.home, self._hosted = self._place_cliques()
        self._children: list[list[int]] = [[] for _ in tree.nodes]
        for child, parent in tree.collect:
            self._children[parent].append(child)
        # Node tables live in a layout of their own: attributes by increasing size (ties: domain
        # order), so the innermost axes are long and numpy's broadcasts and sums run long inner
        # loops. Beliefs are handed out as views in node (domain) order.
        rank = {a: k for k, a in enumerate(domain.attrs)}
        self.layouts = [tuple(sorted(node, key=lambda a: (sizes[a], rank[a]))) for node in tree.nodes]
        self._to_node = [_perm(lay, node) for lay, node in zip(self.layouts, tree.nodes)]
        self._from_node = [_perm(node, lay) for lay, node in zip(self.layouts, tree.nodes)]
        # Potentials arrive in clique order: a transposed view puts each in its node's layout.
        self._to_layout = [_perm(cl, [a for a in self.layouts[h] if a in cl]) for cl, h in zip(self.cliques, self.home)]
        self._compile_separators(sizes)
        self._cells = [domain.size(node) for node in tree.nodes]
        self._add_plans, self._marg_plans, self._up_axes, self._up_sums = [], [], [], []
        # Large nodes whose factors overlap little: contracted, never formed (`pgm.kernels.factored`).
        self._factored: dict[int, tuple[AdditionPlan, FactorPlan | None, FactorPlan]] = {}
        for i, layout in enumerate(self.layouts):
            hosted, children = self._hosted[i], self._children[i]
            items = [tuple(a for a in layout if a in self.cliques[k]) for k in hosted]
            items += [self._sep_order[c] for c in children]
            shape = tuple((a, sizes[a]) for a in layout)
            self._add_plans.append(addition_plan(shape, tuple(items)))
            targets = [self.cliques[k] for k in hosted] + [self._sep_order[c] for c in children]
            self._marg_plans.append(marginal_plan(shape, tuple(targets)))
            sep = set(tree.separator(i))
            self._up_axes.append(tuple(j for j, a in enumerate(layout) if a not in sep))
            sep_axes = self._sep_axes.get(i)
            self._up_sums.append(sum_plan(tuple(sizes[a] for a in layout), self._up_axes[-1],
                                          None if sep_axes is None else tuple(sep_axes)))
            chosen = self._factor_plans(i, items, targets, sizes)
            if chosen is not None:
                self._factored[i] = chosen
        # Post-order over every node (children before parents, each root after its tree).
        self._collect_order = [child for child, _ in tree.collect] + list(tree.roots)
        self._slots: dict[int, list[np.ndarray]] = {}
        self._distribute_order = list(reversed(self._collect_order))

    def _place_cliques(self) -> tuple[list[int], list[list[int]]]:
        """Each potential clique's home node, the smallest node containing it (ties: the first),
        and the cliques each node hosts."""
        tree = self.tree
        home: list[int] = []
        hosted: list[list[int]] = [[] for _ in tree.nodes]
        for k, cl in enumerate(self.cliques):
            hosts = tree.containing(cl)
            if not hosts:
                raise ValueError(f"clique {cl} is not covered by any junction-tree node")
            home.append(min(hosts, key=lambda i: (self.domain.size(tree.nodes[i]), i)))
            hosted[home[-1]].append(k)
        return home, hosted

    def _compile_separators(self, sizes: dict[str, int]) -> None:
        """Each child's separator in its parent's layout order (the message axes), and the ways
        between that order and the child's own layout."""
        self._sep_order: dict[int, Clique] = {}
        self._sep_axes: dict[int, list[int]] = {}  # message axes, as axes of the child's table
        self._sep_back: dict[int, tuple[int, ...] | None] = {}  # parent's separator order -> child's
        self._sep_there: dict[int, tuple[int, ...] | None] = {}  # and back
        self._down_shape: dict[int, list[int]] = {}
        for c, parent in self.tree.collect:
            sep = set(self.tree.separator(c))
            order = tuple(a for a in self.layouts[parent] if a in sep)
            own = [a for a in self.layouts[c] if a in sep]
            self._sep_order[c] = order
            self._sep_axes[c] = [self.layouts[c].index(a) for a in order]
            self._sep_back[c] = _perm(order, own)
            self._sep_there[c] = _perm(own, order)
            self._down_shape[c] = [sizes[a] if a in sep else 1 for a in self.layouts[c]]

    def _factor_plans(self, i: int, items: list[Clique], targets: list[Clique],
                      sizes: dict[str, int]) -> tuple[AdditionPlan, FactorPlan | None, FactorPlan] | None:
        """(summand merges, message-up plan or None for a root, read-out plan) that read node ``i``
        out of its factors, when that is estimated cheaper than forming its table; else None."""
        if self._cells[i] < _FACTOR_CELLS or not items or not targets:
            return None
        layout, is_child = self.layouts[i], self.tree.parent[i] is not None
        chosen = choose_reading(
            tuple((a, sizes[a]) for a in layout),
            tuple(items),
            tuple(tuple(layout.index(a) for a in t) for t in targets),
            tuple(self._sep_axes[i]) if is_child else None,
            tuple(a for a, n in enumerate(self._down_shape[i]) if n != 1) if is_child else None,
            sum(source == 0 for source, _ in self._marg_plans[i].steps),
        )
        if chosen is None:
            return None
        merges, up, down = chosen
        return (self._add_plans[i] if merges is None else merges), up, down

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
        calibration = self.propagate(log_potentials, total, slot)
        return calibration.beliefs(), calibration.marginals

    def propagate(self, log_potentials: Sequence[np.ndarray], total: float, slot: int | None = None) -> Calibration:
        """One belief propagation: the potential cliques' marginals now, the node counts on demand
        (`Calibration.beliefs`). ``slot`` as in `calibrate_marginals`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._calibrate(log_potentials, total, slot)

    def _buffers(self, slot: int | None) -> list[np.ndarray | None]:
        if slot is None:
            return [None] * len(self.tree.nodes)
        if slot not in self._slots:
            self._slots[slot] = [np.empty(p.shape) for p in self._add_plans]
        return self._slots[slot]

    def _calibrate(self, log_potentials: Sequence[np.ndarray], total: float, slot: int | None) -> Calibration:
        """The two passes. Collect (leaves first): each node is built from its potentials and its
        children's messages and sends its own message up. Distribute (root first): each node's
        counts are final (up to what it owes), so its read-outs give its potentials' marginals
        and its children's separator counts, which each child takes as the factor it owes."""
        run = PassState(self._buffers(slot), len(self.tree.nodes))
        in_layout = [v if perm is None else v.transpose(perm) for v, perm in zip(log_potentials, self._to_layout)]
        for i in self._collect_order:
            tables = [in_layout[k] for k in self._hosted[i]] + [run.up[c] for c in self._children[i]]
            if not (i in self._factored and self._collect_factored(i, tables, run)):
                self._collect_formed(i, tables, run, total)
        marginals: list[np.ndarray | None] = [None] * len(self.cliques)
        for i in self._distribute_order:
            outs = self._read_out(i, run, total)
            hosted = self._hosted[i]
            for k, table in zip(hosted, outs):
                marginals[k] = table
            for c, sep_counts in zip(self._children[i], outs[len(hosted) :]):
                self._send_down(c, sep_counts, run)
        return Calibration(run.beliefs, run.owed, self._to_node, marginals,
                           {i: (self._factored[i][0], exps) for i, exps in run.factors.items()})

    def _read_out(self, i: int, run: PassState, total: float) -> list[np.ndarray]:
        """Node ``i``'s read-outs (its potentials' marginals, then its children's separator
        counts), from its factors, as a root's counts, or from its table; notes what it owes."""
        if i in run.factors:
            outs, run.owed[i] = self._read_factored(i, run, total)
        elif i in run.deferred:
            outs, run.owed[i] = self._read_root(i, *run.deferred[i], run.beliefs[i], total)
        else:
            outs = self._marg_plans[i].run(run.beliefs[i], run.owed[i])
        return outs

    def _collect_factored(self, i: int, tables: list[np.ndarray], run: PassState) -> bool:
        """Collect at a node read out of its factors: its message is a contraction of its
        exponentiated factors (a root waits for its read-out); its table is formed only when a
        separator sum underflows. False (nothing done) when a summand has no finite maximum."""
        merges, plan, _ = self._factored[i]
        exps, bound = merges.exp_factors(tables)
        if bound is None:
            return False
        if plan is None:  # a root: read out (and normalised) on the way down
            run.factors[i], run.deferred[i] = exps, (tables, bound)
            run.beliefs[i] = run.buffers[i]
            return True
        total_up = plan.run(exps)[0]
        if total_up.min() >= _UNDERFLOW:
            run.positive.add(i)
            run.factors[i], run.beliefs[i] = exps, run.buffers[i]
            run.up[i], run.sums[i] = np.log(total_up) + bound, total_up
            return True
        # underflow: form the table and take the exact path
        run.beliefs[i] = merges.product(exps, out=run.buffers[i])
        run.up[i], run.sums[i] = self._collect(i, tables, run.beliefs[i], bound, run.positive)
        return True

    def _collect_formed(self, i: int, tables: list[np.ndarray], run: PassState, total: float) -> None:
        """Collect at a node whose table is formed. Large nodes: exp(log-table - bound) as the
        product of the summands' shifted exponentials, one pass over the node and no exp of it
        (bound: the sum of the summands' maxima); a large root is normalised at read-out. Small
        ones (or a summand with no finite maximum): the log-table, shifted by its max in
        `_collect` (fewer numpy calls); a small root is turned into counts at once."""
        bound = None
        if self._cells[i] >= _PRODUCT_CELLS:
            run.beliefs[i], bound = self._add_plans[i].run_exp(tables, out=run.buffers[i])
        if bound is None:
            run.beliefs[i] = self._add_plans[i].run(tables, out=run.buffers[i])
        if self.tree.parent[i] is not None:
            run.up[i], run.sums[i] = self._collect(i, tables, run.beliefs[i], bound, run.positive)
        elif bound is not None:
            run.deferred[i] = (tables, bound)
        else:  # a root's belief is complete: turn it into counts summing to total
            self._normalise(i, tables, run.beliefs[i], bound, total)

    def _send_down(self, c: int, sep_counts: np.ndarray, run: PassState) -> None:
        """Child ``c`` holds exp(belief - shift) with separator sums ``run.sums[c]``: times
        (separator counts / sums) it holds its counts (0 where the sum is 0, a separator state
        impossible in its subtree, whose counts are 0 too). Large tables are not rescaled in
        place: they keep that factor as owed, their read-outs include it, and
        `Calibration.beliefs` applies it if anyone asks."""
        factor = np.divide(sep_counts, run.sums[c])
        if c not in run.positive:
            factor[run.sums[c] == 0] = 0.0
        if self._sep_back[c] is not None:
            factor = factor.transpose(self._sep_back[c])
        factor = factor.reshape(self._down_shape[c])
        if self._cells[c] >= _PRODUCT_CELLS:
            run.owed[c] = factor
        else:
            run.beliefs[c] *= factor

    def _read_factored(self, i: int, run: PassState, total: float) -> tuple[list[np.ndarray], np.ndarray | float | None]:
        """Read-outs of factored node ``i`` and the factor its table owes: contracted from its
        factors (and what it owes, for a child). A root whose mass is too small for the bound is
        formed and normalised exactly (and leaves ``run.factors``: its table is then complete)."""
        merges, _, plan = self._factored[i]
        if i not in run.deferred:
            return plan.run(run.factors[i] + [run.owed[i]]), run.owed[i]
        outs = plan.run(run.factors[i])
        mass = float(outs[0].sum())
        if mass >= _ROOT_MASS and np.isfinite(mass):
            scale = total / mass
            return [table * scale for table in outs], scale
        tables, bound = run.deferred[i]
        run.beliefs[i] = merges.product(run.factors.pop(i), out=run.beliefs[i])
        self._normalise(i, tables, run.beliefs[i], bound, total)
        return self._marg_plans[i].run(run.beliefs[i]), None

    def _read_root(
        self, i: int, tables: list[np.ndarray], bound: float, belief: np.ndarray, total: float
    ) -> tuple[list[np.ndarray], float | None]:
        """Read-outs of root ``i``, which holds exp(log-belief - ``bound``), as counts summing to
        ``total``, and the factor its table owes (None: normalised in place, when the bound was
        too loose for full precision)."""
        outs = self._marg_plans[i].run(belief)
        mass = float(outs[0].sum()) if outs else float(belief.sum())
        if mass >= _ROOT_MASS and np.isfinite(mass):
            scale = total / mass
            return [table * scale for table in outs], scale
        self._normalise(i, tables, belief, bound, total)
        return self._marg_plans[i].run(belief), None

    def _collect(self, i: int, tables: list[np.ndarray], belief: np.ndarray, bound: float | None,
                 positive: set[int]) -> tuple[np.ndarray, np.ndarray]:
        """Node ``i``'s table as exp(log-belief - shift), in place (it holds that already, with
        shift = ``bound``, unless ``bound`` is None: then it holds the log-belief); returns its log
        message to the parent and the separator sums of the exponentials (``i`` joins ``positive``
        when every sum is > 0).

        One global shift (``bound``, else the table's max) serves every separator slice; when a
        slice's shifted sum underflows (or -inf entries empty a slice) the log table is rebuilt
        and shifted by each slice's own max instead.
        """
        axes = self._up_axes[i]
        if not axes:
            raise ValueError(f"junction-tree node {i} lies inside its parent: the tree's nodes must be maximal cliques")
        if bound is None:
            peak = float(belief.max())
            if np.isfinite(peak):
                belief -= peak
                np.exp(belief, out=belief)
                bound = peak
        if bound is not None:
            sums = self._up_sums[i](belief)
            if sums.min() >= _UNDERFLOW:
                positive.add(i)
                return np.log(sums) + bound, sums
        belief = self._add_plans[i].run(tables, out=belief)
        shift = reduce_axes(np.max, belief, axes)
        np.maximum(shift, -1e300, out=shift)  # an all -inf slice: exp(-inf) = 0, log 0 = -inf
        belief -= shift
        np.exp(belief, out=belief)
        sums = self._up_sums[i](belief)
        shift = shift.reshape([belief.shape[j] for j in sorted(self._sep_axes[i])])  # the child's order
        there = self._sep_there[i]
        return np.log(sums) + (shift if there is None else shift.transpose(there)), sums

    def _normalise(self, i: int, tables: list[np.ndarray], belief: np.ndarray, bound: float | None, total: float) -> None:
        """Root ``i``'s table (exp(log-belief - ``bound``), or the log-belief when ``bound`` is None)
        into counts summing to ``total``, in place; redone with the table's own max when the bound
        is too loose for full precision."""
        if bound is not None:
            mass = float(belief.sum())
            if mass >= _ROOT_MASS:
                threads.scale(belief, total / mass)
                return
            self._add_plans[i].run(tables, out=belief)
        peak = belief.max()
        if not np.isfinite(peak):
            raise FloatingPointError("the model assigns zero probability to every state")
        belief -= peak
        np.exp(belief, out=belief)
        belief *= total / belief.sum()

    def clique_marginals(self, beliefs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Marginals of the potential cliques (axes in each clique's order) from calibrated beliefs."""
        out: list[np.ndarray | None] = [None] * len(self.cliques)
        for i, hosted in enumerate(self._hosted):
            if hosted:
                node = beliefs[i] if self._from_node[i] is None else beliefs[i].transpose(self._from_node[i])
                for k, table in zip(hosted, self._marg_plans[i].run(node)):
                    out[k] = table
        return out


#: a slice whose shifted sum falls below this has lost precision to underflow: redo it exactly.
_UNDERFLOW = 1e-290
#: nodes with at least this many cells are built as products of exponentials (see `_collect_formed`).
_PRODUCT_CELLS = 1 << 14
#: nodes with at least this many cells may be contracted from their factors instead (see `_factor_plans`).
_FACTOR_CELLS = threads.MIN_CELLS
#: a root whose exponentials (shifted by the summands' bound) sum to less than this is redone with its max.
_ROOT_MASS = 1e-100


def _perm(source: Sequence[str], target: Sequence[str]) -> tuple[int, ...] | None:
    """The axis permutation taking a table over ``source`` to ``target`` order (None: identity)."""
    perm = tuple(list(source).index(a) for a in target)
    return None if perm == tuple(range(len(perm))) else perm
