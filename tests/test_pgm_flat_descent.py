"""`pgm.estimate` keeps every table in one flat vector and computes the loss and its gradient as
two sparse products over it; these tests hold it to the plain descent (one numpy call per clique
and per measurement, as the module docstring states it): the same potentials, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm import Model, estimate
from pgm.estimation import _set_up, initial_stepsize
from pgm.loss import smallest_containing

DOM = Domain(tuple("abcdef"), (2, 3, 4, 2, 3, 5))


def reference_fit(domain, measurements, iters, warm_start=None, momentum=0.95, growth=1.05, armijo=0.5):
    """Mirror descent with heavy-ball momentum and the Armijo test, written per clique."""
    problem = _set_up(domain, measurements, None, warm_start, "inverse_variance")
    cliques = problem.cliques

    def evaluate(theta, slot):
        mu = problem.engine.propagate(theta, problem.total, slot=slot).marginals
        loss, grads = 0.0, [np.zeros(m.shape) for m in mu]
        for m in measurements:  # each measurement against its home's marginal, in order
            home = smallest_containing(domain, cliques, m.clique)
            pcl, w = cliques[home], 1.0 / m.sigma**2
            summed = tuple(i for i, a in enumerate(pcl) if a not in m.clique)
            table = mu[home].sum(axis=summed) if summed else mu[home]
            present = [a for a in pcl if a in m.clique]
            resid = table.transpose([present.index(a) for a in m.clique]) - m.noisy_counts
            loss += 0.5 * w * float(np.vdot(resid, resid))
            resid *= w
            grads[home] += resid.transpose([m.clique.index(a) for a in present]).reshape(
                [domain[a] if a in m.clique else 1 for a in pcl])
        return theta, mu, loss, grads

    alpha = initial_stepsize(problem.loss.lipschitz, problem.total, warm_start)
    current, slot, velocity = evaluate(problem.theta, 0), 0, None
    for _ in range(iters):
        theta, mu, loss, grads = current
        if velocity is not None:
            proposal = [t - alpha * g + momentum * v for t, g, v in zip(theta, grads, velocity)]
        else:
            proposal = [t - alpha * g for t, g in zip(theta, grads)]
        candidate = evaluate(proposal, 1 - slot)
        decrease = sum(float(np.vdot(g, m - c)) for g, m, c in zip(grads, mu, candidate[1]))
        if loss - candidate[2] >= armijo * decrease and candidate[2] <= loss:
            velocity = [c - t for c, t in zip(candidate[0], theta)]
            current, slot = candidate, 1 - slot
            alpha *= growth
        else:
            if velocity is None:
                alpha *= 0.5
            velocity = None
    return cliques, current[0]


def noisy(truth, cliques, sigma, seed):
    rng = np.random.default_rng(seed)
    out = []
    for c in cliques:
        values = truth.project(c).values
        out.append(Measurement(tuple(c), values + rng.normal(0, sigma, values.shape), sigma))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_flat_descent_equals_the_per_clique_descent(seed, random_model):
    truth = random_model(DOM, [("a", "b", "c"), ("c", "d"), ("d", "e", "f")], seed)
    # alone on a home; several on one home (a repeat, a 1-way inside a pair); axes in another order
    measured = [("a", "b"), ("c", "b"), ("b",), ("d", "e"), ("f", "d"), ("c", "d"), ("c", "d"), ("e",)]
    meas = noisy(truth, measured, 3.0, seed)
    cliques, want = reference_fit(DOM, meas, 30)
    got = estimate(DOM, meas, iters=30)
    assert got.info["iterations"] == 30
    for c, table in zip(cliques, want):
        assert np.array_equal(got.potentials[c].values, table), c


def test_flat_descent_equals_the_per_clique_descent_from_a_warm_start(random_model):
    truth = random_model(DOM, [("a", "b", "c"), ("c", "d"), ("d", "e", "f")], 7)
    first = noisy(truth, [("a", "b"), ("d", "e"), ("c",)], 2.0, 1)
    start = estimate(DOM, first, iters=15)
    more = first + noisy(truth, [("b", "c"), ("e", "f"), ("d", "e")], 1.0, 2)
    cliques, want = reference_fit(DOM, more, 25, warm_start=start)
    got = estimate(DOM, more, iters=25, warm_start=start)
    assert isinstance(got, Model)
    for c, table in zip(cliques, want):
        assert np.array_equal(got.potentials[c].values, table), c
