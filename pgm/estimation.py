"""Fit a graphical model to noisy marginals: entropic mirror descent over the marginal polytope.

Loss: L(mu) = sum_i w_i ||mu_{C_i} - y_i||^2 / 2 with w_i = 1/sigma_i^2 (the Gaussian likelihood;
default) or 1/sigma_i (the AIM paper's text). Mirror descent runs in potential space:
theta <- theta - alpha * grad_mu L(mu(theta)), mu(theta) from belief propagation with the total
fixed to N. The step starts at 2 / (L_ip N), with L_ip = max over potential cliques C of
sum_{i -> C} w_i |C| / |C_i|, measurement i read off its smallest containing clique (the exact
Lipschitz constant of the gradient for marginal measurements, see `pgm.loss.Loss`), grows after every accepted
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
from .loss import LOSS_WEIGHTS, Loss, clique_set, flatten, potential_cliques, smallest_containing  # noqa: F401 (re-exported)
from .model import Model

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
    loss: Loss
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
    loss = Loss(domain, cliques, measurements, loss_weight)
    total = minimum_variance_total(measurements) if total is None else float(total)
    if not total > 0:
        raise ValueError(f"total must be > 0, got {total}")
    theta = [np.zeros(s) for s in loss.shapes]
    if warm_start is not None:
        for old_clique, factor in warm_start.potentials.items():
            need = clique_set(old_clique)
            home = next(i for i, c in enumerate(cliques) if need <= clique_set(c))
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
    loss, grad_flat = problem.loss(calibration.marginals, mu_flat)
    return _Iterate(theta, calibration, calibration.marginals, loss, theta_flat, mu_flat, grad_flat)


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
