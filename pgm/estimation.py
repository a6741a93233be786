"""Fit a graphical model to noisy marginals: entropic mirror descent over the marginal polytope.

Loss: L(mu) = sum_i w_i ||mu_{C_i} - y_i||^2 / 2 with w_i = 1/sigma_i^2 (the Gaussian likelihood;
default) or 1/sigma_i (the AIM paper's text). Mirror descent runs in potential space:
theta <- theta - alpha * grad_mu L(mu(theta)), mu(theta) from belief propagation with the total
fixed to N. The step starts at 2 / (L_ip N), with L_ip = max over potential cliques C of
sum_{i -> C} w_i |C| / |C_i|, measurement i read off its smallest containing clique (the exact
Lipschitz constant of the gradient for marginal measurements, see `_Loss`), grows after every accepted
step (x1.05) and halves after a rejected one; a step is accepted when it passes the Armijo
test L(mu) - L(mu') >= c <grad L(mu), mu - mu'> along the mirror-descent arc and does not raise
the loss, so the loss never increases. Accepted steps carry heavy-ball momentum
(theta_{k+1} = theta_k - alpha grad + 0.95 (theta_k - theta_{k-1})); a rejected step drops the
momentum, or halves the step when there was none. On adult this reaches the loss that mbi 2.0
attains in 1000 iterations in about 160 (benchmarks/pgm_speed.py). N is the minimum-variance
unbiased combination of the measurements' totals.

`estimate` is the set-up (`_set_up`: clique set, loss, total, warm-start potentials, junction
tree) followed by the descent loop (`_mirror_descent`). The step size the descent ends with is
returned as ``Model.stepsize``; a warm start resumes from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from marginals.domain import Domain
from marginals.measurement import Measurement

from .calibration import Calibration
from .factor import Factor
from .inference import TreeEngine
from .junction_tree import Clique, JunctionTree, build_junction_tree
from .kernels.blas import blas_single_threaded
from .model import Model

LOSS_WEIGHTS = ("inverse_variance", "inverse_sigma")
#: iterations over which ``stall`` (an absolute loss decrease) is measured.
STALL_WINDOW = 5


def minimum_variance_total(measurements: Sequence[Measurement]) -> float:
    """MVU estimate of the number of rows: inverse-variance weighted mean of each table's sum (>= 1)."""
    if not measurements:
        raise ValueError("at least one measurement is needed to estimate the total")
    sums = np.array([m.noisy_counts.sum() for m in measurements])
    variances = np.array([m.sigma**2 * m.noisy_counts.size for m in measurements])
    total = float(np.sum(sums / variances) / np.sum(1.0 / variances))
    return max(1.0, total)


def potential_cliques(domain: Domain, cliques: Sequence[Sequence[str]]) -> list[Clique]:
    """The maximal cliques among ``cliques``, each in domain order, in first-appearance order."""
    canon = list(dict.fromkeys(domain.canonical(cl) for cl in cliques))
    sets = [_as_set(c) for c in canon]
    holders: dict[str, list[int]] = {}  # attribute -> the cliques holding it (a superset holds them all)
    for j, c in enumerate(canon):
        for a in c:
            holders.setdefault(a, []).append(j)
    everything = range(len(canon))
    return [c for c, s in zip(canon, sets)
            if not any(s < sets[j] for j in (holders[c[0]] if c else everything))]


_SETS: dict[Clique, frozenset[str]] = {}  # cliques recur in every fit of a run


def _as_set(clique: Clique) -> frozenset[str]:
    found = _SETS.get(clique)
    if found is None:
        if len(_SETS) >= 1 << 16:
            _SETS.clear()
        found = _SETS[clique] = frozenset(clique)
    return found


def _canonical_key(domain: Domain, clique: Clique) -> tuple:
    return tuple(domain.attrs.index(a) for a in clique)


def smallest_containing(domain: Domain, cliques: Sequence[Clique], attrs: Sequence[str]) -> int:
    """Index of the clique with the fewest cells among ``cliques`` that contain ``attrs`` (ties: the
    first in domain order), so the choice never depends on the order of the list."""
    need = set(attrs)
    holding = [i for i, c in enumerate(cliques) if need <= _as_set(c)]
    return min(holding, key=lambda i: (domain.size(cliques[i]), _canonical_key(domain, cliques[i])))


class _Loss:
    """Squared-error loss of the measurements against the potential-clique marginals.

    Each measurement is read off one potential clique, its *home*: the smallest clique containing
    it. The loss is separable over the homes' tables, and on one table the Hessian
    sum_i w_i A_i^T A_i (A_i sums the table down to measurement i) has the constant table as a
    common top eigenvector with eigenvalue sum_i w_i |C| / |C_i|: so the Lipschitz constant of the
    gradient is the largest such sum. The smallest home makes it as small as one home per
    measurement allows and independent of the order of the measurements.
    """

    def __init__(self, domain: Domain, cliques: list[Clique], measurements: Sequence[Measurement], weight: str):
        if weight not in LOSS_WEIGHTS:
            raise ValueError(f"loss_weight must be one of {LOSS_WEIGHTS}, got {weight!r}")
        items = [self._item(domain, cliques, m, weight) for m in measurements]
        self.shapes = [domain.project(c).shape for c in cliques]
        sizes = [domain.size(c) for c in cliques]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)  # each clique's cells in the flat layout
        lip = np.zeros(len(cliques))
        for home, _, _, _, _, y, w in items:
            lip[home] += w * sizes[home] / y.size
        self.lipschitz = float(lip.max())
        # A measurement over its home's own table (no sum, no transpose) that no other measurement
        # shares: its residual is a slice of the flat marginals, all of them in one vector pass.
        count = np.bincount([item[0] for item in items], minlength=len(cliques))
        sole = [k for k, item in enumerate(items) if not item[1] and item[2] is None and count[item[0]] == 1]
        chosen = set(sole)
        self.items = [item for k, item in enumerate(items) if k not in chosen]
        homes = [items[k][0] for k in sole]
        self.sole_index = np.concatenate([np.arange(self.offsets[h], self.offsets[h + 1]) for h in homes] or [np.zeros(0, np.intp)])
        self.sole_y = np.concatenate([np.ravel(items[k][5]) for k in sole] or [np.zeros(0)]).astype(np.float64)
        self.sole_w = np.concatenate([np.full(sizes[h], items[k][6]) for k, h in zip(sole, homes)] or [np.zeros(0)])

    @staticmethod
    def _item(domain: Domain, cliques: list[Clique], m: Measurement, weight: str) -> tuple:
        """(home, axes summed, transposes, broadcast shape, counts, weight) of one measurement."""
        mcl = domain.check(m.clique)
        if m.noisy_counts.shape != domain.project(mcl).shape:
            raise ValueError(
                f"measurement over {mcl}: counts have shape {m.noisy_counts.shape}, "
                f"the domain says {domain.project(mcl).shape}"
            )
        home = smallest_containing(domain, cliques, mcl)
        pcl = cliques[home]
        summed = tuple(i for i, a in enumerate(pcl) if a not in mcl)
        present = [a for a in pcl if a in mcl]
        to_meas = [present.index(a) for a in mcl]  # axes after summing -> measurement order
        to_pot = [mcl.index(a) for a in present]  # measurement axes -> potential order
        if to_meas == sorted(to_meas):
            to_meas = to_pot = None  # same axis order: no transposes in the hot loop
        bshape = [domain[a] if a in mcl else 1 for a in pcl]
        w = 1.0 / m.sigma**2 if weight == "inverse_variance" else 1.0 / m.sigma
        return home, summed, to_meas, to_pot, bshape, m.noisy_counts, w

    def __call__(self, mu: Sequence[np.ndarray], mu_flat: np.ndarray | None = None) -> tuple[float, np.ndarray, list[np.ndarray]]:
        """(loss, its gradient in the flat layout, the same per clique as views); ``mu_flat``: the
        marginals concatenated in that layout (made here when not given)."""
        if mu_flat is None:
            mu_flat = flatten(mu)
        flat = np.zeros(int(self.offsets[-1]))
        grads = self.views(flat)
        resid = mu_flat[self.sole_index] - self.sole_y
        weighted = self.sole_w * resid
        loss = 0.5 * float(np.dot(weighted, resid))
        flat[self.sole_index] = weighted
        for home, summed, to_meas, to_pot, bshape, y, w in self.items:
            table = mu[home].sum(axis=summed) if summed else mu[home]
            resid = (table if to_meas is None else table.transpose(to_meas)) - y
            loss += 0.5 * w * float(np.vdot(resid, resid))
            resid *= w
            grads[home] += (resid if to_pot is None else resid.transpose(to_pot)).reshape(bshape)
        return loss, flat, grads

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each clique's table as a view of the flat layout."""
        offsets = self.offsets
        return [flat[offsets[k]:offsets[k + 1]].reshape(shape) for k, shape in enumerate(self.shapes)]


def flatten(tables: Sequence[np.ndarray]) -> np.ndarray:
    """The tables' cells one after another (each in C order): the flat layout of the descent."""
    return np.concatenate([np.ravel(t) for t in tables]) if tables else np.zeros(0)


def _step(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """new - old for the momentum term, 0 where both are -inf (structural zeros from a warm start:
    -inf - -inf would be NaN and poison every later iterate)."""
    with np.errstate(invalid="ignore"):
        diff = new - old
    return np.where(np.isnan(diff) & np.isneginf(old), 0.0, diff)


@dataclass
class _Problem:
    """What the descent works on: the clique set, its loss, the total, the starting potentials and
    the compiled junction tree."""

    cliques: list[Clique]
    loss: _Loss
    total: float
    theta: list[np.ndarray]
    tree: JunctionTree
    engine: TreeEngine


@dataclass
class _Iterate:
    """One point of the descent: potentials, the calibration they give, loss and gradient."""

    theta: list[np.ndarray]  # views of theta_flat
    calibration: Calibration
    mu: list[np.ndarray]
    loss: float
    grads: list[np.ndarray]  # views of grad_flat
    theta_flat: np.ndarray
    mu_flat: np.ndarray
    grad_flat: np.ndarray


@dataclass(frozen=True)
class _Schedule:
    """The step-size rule: growth after an accepted step, Armijo constant, momentum, stopping."""

    iters: int
    tol: float | None
    stall: float | None
    step_growth: float
    armijo: float
    momentum: float
    callback: Callable[[int, float], None] | None


def _set_up(domain: Domain, measurements: list[Measurement], total: float | None, warm_start: Model | None,
            loss_weight: str, zeros: Sequence = ()) -> _Problem:
    """Clique set (the measurements', the warm start's and the structural zeros' maximal cliques),
    loss, total and the starting potentials: zeros, plus each warm-start potential added into a new
    clique holding it (where a potential sits does not change the model: the log-density is their
    sum), and -inf on every forbidden cell (`_forbid`)."""
    wanted = [m.clique for m in measurements] + [tuple(z.attrs) for z in zeros]
    if warm_start is not None:
        if warm_start.domain != domain:
            raise ValueError("warm_start model has a different domain")
        wanted += list(warm_start.cliques)
    cliques = potential_cliques(domain, wanted)
    loss = _Loss(domain, cliques, measurements, loss_weight)
    total = minimum_variance_total(measurements) if total is None else float(total)
    if not total > 0:
        raise ValueError(f"total must be > 0, got {total}")
    theta = [np.zeros(s) for s in loss.shapes]
    if warm_start is not None:
        for old_clique, factor in warm_start.potentials.items():
            need = _as_set(old_clique)
            home = next(i for i, c in enumerate(cliques) if need <= _as_set(c))
            theta[home] += factor.expand(domain.project(cliques[home]))
    _forbid(domain, cliques, theta, zeros)
    tree = build_junction_tree(domain, cliques)
    return _Problem(cliques, loss, total, theta, tree, TreeEngine(tree, cliques))


def _forbid(domain: Domain, cliques: list[Clique], theta: list[np.ndarray], zeros: Sequence) -> None:
    """Put -inf on the cells each structural zero forbids, in the first clique holding its
    attributes: the start (uniform on the allowed cells) and every later iterate (a finite step
    keeps -inf) give them probability exactly 0."""
    for z in zeros:
        attrs = domain.check(z.attrs)
        allowed = np.asarray(z.allowed, dtype=bool)
        if allowed.shape != domain.project(attrs).shape:
            raise ValueError(f"structural zero over {attrs}: table of shape {allowed.shape}, the domain says "
                             f"{domain.project(attrs).shape}")
        home = next(i for i, c in enumerate(cliques) if set(attrs) <= set(c))
        block = np.where(allowed, 0.0, -np.inf)
        theta[home] = theta[home] + Factor(domain.project(attrs), block).expand(domain.project(cliques[home]))


def initial_stepsize(lipschitz: float, total: float, warm_start: Model | None = None) -> float:
    """2 / (L N), or the warm start's adapted step when that is larger (the line search halves a
    step that is too long)."""
    alpha = 2.0 / (lipschitz * total)
    if warm_start is not None and warm_start.stepsize is not None and warm_start.stepsize > 0:
        alpha = max(alpha, float(warm_start.stepsize))
    return alpha


def _evaluate(problem: _Problem, theta_flat: np.ndarray, slot: int) -> _Iterate:
    """Calibrate the potentials ``theta_flat`` (the flat layout) into buffer ``slot`` and evaluate the loss there."""
    theta = problem.loss.views(theta_flat)
    calibration = problem.engine.propagate(theta, problem.total, slot=slot)
    mu_flat = flatten(calibration.marginals)
    loss, grad_flat, grads = problem.loss(calibration.marginals, mu_flat)
    return _Iterate(theta, calibration, calibration.marginals, loss, grads, theta_flat, mu_flat, grad_flat)


def _accepts(current: _Iterate, candidate: _Iterate, armijo: float) -> bool:
    """The Armijo test along the mirror-descent arc, and the loss does not rise."""
    decrease = float(np.dot(current.grad_flat, current.mu_flat - candidate.mu_flat))
    return current.loss - candidate.loss >= armijo * decrease and candidate.loss <= current.loss


def _converged(history: list[float], schedule: _Schedule) -> bool:
    """The relative rule (``tol`` over the last 10 iterations) or the absolute one (``stall`` over
    the last `STALL_WINDOW`) says the loss stopped improving."""
    it, loss = len(history) - 1, history[-1]
    if schedule.tol is not None and it >= 10 and history[-11] - loss <= schedule.tol * max(abs(history[-11]), 1e-300):
        return True
    return schedule.stall is not None and it >= STALL_WINDOW and history[-1 - STALL_WINDOW] - loss <= schedule.stall


def _mirror_descent(problem: _Problem, alpha: float, schedule: _Schedule) -> tuple[_Iterate, float, dict]:
    """Run the descent from ``problem.theta``: (last accepted iterate, final step size, counters)."""
    # Two buffer slots: the accepted iterate's tables live in one, each candidate is computed in the other.
    slot = 0
    # every table lives in one flat vector (its views per clique): a step is a few vector passes
    current = _evaluate(problem, flatten(problem.theta), slot)
    history = [current.loss]
    bp_calls, accepted, it = 1, 0, 0
    velocity = None  # heavy-ball momentum (theta_k - theta_{k-1}); dropped after a failed step
    zeros = bool(np.isneginf(current.theta_flat).any())  # steps keep finite entries finite
    for it in range(1, schedule.iters + 1):
        if current.loss == 0.0:
            break
        proposal = current.theta_flat - alpha * current.grad_flat
        if velocity is not None and schedule.momentum > 0:
            proposal += schedule.momentum * velocity
        candidate = _evaluate(problem, proposal, 1 - slot)
        bp_calls += 1
        if _accepts(current, candidate, schedule.armijo):
            if zeros:  # structural zeros (-inf) came with the warm start: -inf - -inf must be 0
                velocity = _step(candidate.theta_flat, current.theta_flat)
            else:
                velocity = candidate.theta_flat - current.theta_flat
            current, slot = candidate, 1 - slot
            alpha *= schedule.step_growth
            accepted += 1
        else:
            if velocity is None:
                alpha *= 0.5
            velocity = None
        history.append(current.loss)
        if schedule.callback is not None:
            schedule.callback(it, current.loss)
        if _converged(history, schedule):
            break
    counters = {"iterations": it, "accepted": accepted, "bp_calls": bp_calls, "loss": current.loss, "history": history}
    return current, alpha, counters


@blas_single_threaded
def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    total: float | None = None,
    iters: int = 1000,
    tol: float | None = None,
    stall: float | None = None,
    warm_start: Model | None = None,
    loss_weight: str = "inverse_variance",
    stepsize: float | None = None,
    step_growth: float = 1.05,
    armijo: float = 0.5,
    callback: Callable[[int, float], None] | None = None,
    momentum: float = 0.95,
    resume_stepsize: bool = True,
    zeros: Sequence = (),
) -> Model:
    """Fit a `Model` to ``measurements`` by mirror descent (see the module docstring).

    ``tol``: stop when the loss improved by less than ``tol`` (relative) over the last 10 iterations;
    ``stall``: stop when it improved by less than ``stall`` (absolute, in loss units: with inverse-variance
    weights 1 is one unit of noise variance) over the last `STALL_WINDOW` iterations.
    ``warm_start``: start from a previous model's potentials, each added into a new clique
    containing it (its cliques join the clique set, so nothing is dropped), and from its adapted
    step size (``Model.stepsize``) when that is larger than 2 / (L N);
    ``resume_stepsize=False`` restarts at 2 / (L N) instead, as mbi does on every call.
    The returned model's ``stepsize`` is the step the descent ended with.
    ``zeros``: structural zeros (`marginals.rules.StructuralZero`, or any objects with ``attrs``
    and a boolean ``allowed`` table over them): their cliques join the clique set and the cells
    they forbid get log-potential -inf, so the model gives them probability exactly 0.
    """
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    measurements = list(measurements)
    if not measurements:
        raise ValueError("estimate needs at least one measurement")
    start = time.perf_counter()
    problem = _set_up(domain, measurements, total, warm_start, loss_weight, tuple(zeros))
    if stepsize is not None:
        alpha = stepsize
    else:
        alpha = initial_stepsize(problem.loss.lipschitz, problem.total, warm_start if resume_stepsize else None)
    if stall is not None and not stall >= 0:
        raise ValueError(f"stall must be >= 0, got {stall}")
    schedule = _Schedule(iters, tol, stall, step_growth, armijo, momentum, callback)
    final, alpha, info = _mirror_descent(problem, alpha, schedule)
    info.update(lipschitz=problem.loss.lipschitz, seconds=time.perf_counter() - start)
    return Model(domain, problem.cliques, final.theta, problem.total, tree=problem.tree, beliefs=final.calibration.beliefs(),
                 info=info, stepsize=alpha)
