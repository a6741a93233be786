"""Fit a graphical model to noisy marginals: entropic mirror descent over the marginal polytope.

Loss: L(mu) = sum_i w_i ||mu_{C_i} - y_i||^2 / 2 with w_i = 1/sigma_i^2 (the Gaussian likelihood;
default) or 1/sigma_i (the AIM paper's text). Mirror descent runs in potential space:
theta <- theta - alpha * grad_mu L(mu(theta)), mu(theta) from belief propagation with the total
fixed to N. The step starts at 2 / (L_ip N), with L_ip = max over potential cliques C of
sum_{i -> C} w_i |C| / |C_i| (exact for marginal measurements), grows after every accepted
step (x1.05) and halves after a rejected one; a step is accepted when it passes the Armijo
test L(mu) - L(mu') >= c <grad L(mu), mu - mu'> along the mirror-descent arc and does not raise
the loss, so the loss never increases. Accepted steps carry heavy-ball momentum
(theta_{k+1} = theta_k - alpha grad + 0.95 (theta_k - theta_{k-1})); a rejected step drops the
momentum, or halves the step when there was none. On adult this reaches the loss that mbi 2.0
attains in 1000 iterations in about 160 (benchmarks/pgm_speed.py). N is the minimum-variance
unbiased combination of the measurements' totals.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from marginals.domain import Domain
from marginals.mechanisms import Measurement

from .inference import TreeEngine
from .junction_tree import Clique, build_junction_tree
from .model import Model

LOSS_WEIGHTS = ("inverse_variance", "inverse_sigma")


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
    canon = []
    for cl in cliques:
        c = domain.canonical(cl)
        if c not in canon:
            canon.append(c)
    return [c for c in canon if not any(set(c) < set(o) for o in canon)]


class _Loss:
    """Squared-error loss of the measurements against the potential-clique marginals."""

    def __init__(self, domain: Domain, cliques: list[Clique], measurements: Sequence[Measurement], weight: str):
        if weight not in LOSS_WEIGHTS:
            raise ValueError(f"loss_weight must be one of {LOSS_WEIGHTS}, got {weight!r}")
        self.items = []
        for m in measurements:
            mcl = domain.check(m.clique)
            if m.noisy_counts.shape != domain.project(mcl).shape:
                raise ValueError(
                    f"measurement over {mcl}: counts have shape {m.noisy_counts.shape}, "
                    f"the domain says {domain.project(mcl).shape}"
                )
            home = next(i for i, c in enumerate(cliques) if set(mcl) <= set(c))
            pcl = cliques[home]
            summed = tuple(i for i, a in enumerate(pcl) if a not in mcl)
            present = [a for a in pcl if a in mcl]
            to_meas = [present.index(a) for a in mcl]  # axes after summing -> measurement order
            to_pot = [mcl.index(a) for a in present]  # measurement axes -> potential order
            if to_meas == sorted(to_meas):
                to_meas = to_pot = None  # same axis order: no transposes in the hot loop
            bshape = [domain[a] if a in mcl else 1 for a in pcl]
            w = 1.0 / m.sigma**2 if weight == "inverse_variance" else 1.0 / m.sigma
            self.items.append((home, summed, to_meas, to_pot, bshape, m.noisy_counts, w))
        self.shapes = [domain.project(c).shape for c in cliques]
        sizes = [domain.size(c) for c in cliques]
        lip = np.zeros(len(cliques))
        for home, _, _, _, _, y, w in self.items:
            lip[home] += w * sizes[home] / y.size
        self.lipschitz = float(lip.max())

    def __call__(self, mu: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss = 0.0
        grads = [np.zeros(s) for s in self.shapes]
        for home, summed, to_meas, to_pot, bshape, y, w in self.items:
            table = mu[home].sum(axis=summed) if summed else mu[home]
            resid = (table if to_meas is None else table.transpose(to_meas)) - y
            loss += 0.5 * w * float(np.vdot(resid, resid))
            resid *= w
            grads[home] += (resid if to_pot is None else resid.transpose(to_pot)).reshape(bshape)
        return loss, grads


def _step(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """new - old for the momentum term, 0 where both are -inf (structural zeros from a warm start:
    -inf - -inf would be NaN and poison every later iterate)."""
    with np.errstate(invalid="ignore"):
        diff = new - old
    return np.where(np.isnan(diff) & np.isneginf(old), 0.0, diff)


def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    total: float | None = None,
    iters: int = 1000,
    tol: float | None = None,
    warm_start: Model | None = None,
    loss_weight: str = "inverse_variance",
    stepsize: float | None = None,
    step_growth: float = 1.05,
    armijo: float = 0.5,
    callback: Callable[[int, float], None] | None = None,
    momentum: float = 0.95,
    resume_stepsize: bool = True,
) -> Model:
    """Fit a `Model` to ``measurements`` by mirror descent (see the module docstring).

    ``tol``: stop when the loss improved by less than ``tol`` (relative) over the last 10 iterations.
    ``warm_start``: start from a previous model's potentials, each added into the first new clique
    containing it (its cliques join the clique set, so nothing is dropped), and from its adapted
    step size when that is larger than 2 / (L N) (the line search halves it if it is too long);
    ``resume_stepsize=False`` restarts at 2 / (L N) instead, as mbi does on every call.
    """
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    measurements = list(measurements)
    if not measurements:
        raise ValueError("estimate needs at least one measurement")
    start = time.perf_counter()
    wanted = [m.clique for m in measurements]
    if warm_start is not None:
        if warm_start.domain != domain:
            raise ValueError("warm_start model has a different domain")
        wanted += list(warm_start.cliques)
    cliques = potential_cliques(domain, wanted)
    loss_fn = _Loss(domain, cliques, measurements, loss_weight)
    total = minimum_variance_total(measurements) if total is None else float(total)
    if not total > 0:
        raise ValueError(f"total must be > 0, got {total}")

    theta = [np.zeros(s) for s in loss_fn.shapes]
    if warm_start is not None:
        for old_clique, factor in warm_start.potentials.items():
            home = next(i for i, c in enumerate(cliques) if set(old_clique) <= set(c))
            theta[home] += factor.expand(domain.project(cliques[home]))

    tree = build_junction_tree(domain, cliques)
    engine = TreeEngine(tree, cliques)

    # Two buffer slots: the accepted iterate's tables live in one, each candidate is computed in the other.
    slot = 0

    def marginals(th, which):
        return engine.calibrate_marginals(th, total, slot=which)

    beliefs, mu = marginals(theta, slot)
    loss, grads = loss_fn(mu)
    history = [loss]
    alpha = 2.0 / (loss_fn.lipschitz * total)
    if stepsize is not None:
        alpha = stepsize
    elif resume_stepsize and warm_start is not None and warm_start.info.get("stepsize", 0) > 0:
        alpha = max(alpha, float(warm_start.info["stepsize"]))  # resume the adapted step
    bp_calls, accepted = 1, 0
    velocity = None  # heavy-ball momentum (theta_k - theta_{k-1}); dropped after a failed step
    it = 0
    for it in range(1, iters + 1):
        if loss == 0.0:
            break
        if velocity is not None and momentum > 0:
            cand_theta = [t - alpha * g + momentum * v for t, g, v in zip(theta, grads, velocity)]
        else:
            cand_theta = [t - alpha * g for t, g in zip(theta, grads)]
        cand_beliefs, cand_mu = marginals(cand_theta, 1 - slot)
        bp_calls += 1
        cand_loss, cand_grads = loss_fn(cand_mu)
        decrease = sum(float(np.vdot(g, m - c)) for g, m, c in zip(grads, mu, cand_mu))
        if loss - cand_loss >= armijo * decrease and cand_loss <= loss:
            velocity = [_step(c, t) for c, t in zip(cand_theta, theta)]
            theta, beliefs, mu, loss, grads = cand_theta, cand_beliefs, cand_mu, cand_loss, cand_grads
            slot = 1 - slot
            alpha *= step_growth
            accepted += 1
        else:
            if velocity is None:
                alpha *= 0.5
            velocity = None
        history.append(loss)
        if callback is not None:
            callback(it, loss)
        if tol is not None and it >= 10 and history[-11] - loss <= tol * max(abs(history[-11]), 1e-300):
            break
    info = {
        "iterations": it,
        "accepted": accepted,
        "bp_calls": bp_calls,
        "loss": loss,
        "history": history,
        "stepsize": alpha,
        "lipschitz": loss_fn.lipschitz,
        "seconds": time.perf_counter() - start,
    }
    return Model(domain, cliques, theta, total, tree=tree, beliefs=beliefs, info=info)
