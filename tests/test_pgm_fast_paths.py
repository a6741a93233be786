"""The hot-path shortcuts compute what the plain code computes: `plans.sum_plan` sums what it is
asked (the same bits on one thread and on several), the sparse `pgm.loss.Loss` is the loss taken
measurement by measurement, the plan caches hand out plans equal to fresh ones, and `Domain.check`
still refuses bad attribute lists once it has seen good ones."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm.kernels import threads
from pgm.kernels.plans import AdditionPlan, MarginalPlan, addition_plan, marginal_plan, sum_out, sum_plan
from pgm.loss import Loss, potential_cliques, smallest_containing

SHAPES = [(3,), (2, 5), (4, 1, 3), (2, 3, 4, 5), (64, 2, 32, 33)]  # the last is above threads.MIN_CELLS


@pytest.mark.parametrize("shape", SHAPES)
def test_sum_plan_sums_the_axes_into_the_order_asked(shape, monkeypatch):
    assert np.prod(SHAPES[-1]) >= threads.MIN_CELLS
    rng = np.random.default_rng(len(shape))
    values = rng.random(shape)
    ndim = len(shape)
    for r in range(ndim + 1):
        for axes in itertools.combinations(range(ndim), r):
            kept = [i for i in range(ndim) if i not in axes]
            for order in [None] + ([tuple(reversed(kept))] if len(kept) > 1 else []):
                want = values.sum(axis=axes) if axes else values
                if order is not None:
                    want = want.transpose([kept.index(i) for i in order])
                got = sum_plan(shape, axes, order)(values)
                assert got.shape == want.shape, (shape, axes, order)
                np.testing.assert_allclose(got, want, rtol=1e-12)
                assert np.array_equal(sum_out(values, list(axes), order), got)  # sum_out is sum_plan's choice
    # above threads.MIN_CELLS the slabs depend on the shape only: one thread gives the same bits
    big = rng.random(SHAPES[-1])
    plan = sum_plan(SHAPES[-1], (2,), (3, 0, 1))
    many = plan(big)
    monkeypatch.setenv("DP_MARGINALS_THREADS", "1")
    assert np.array_equal(plan(big), many)


def brute_loss(domain, cliques, measurements, mu):
    """Loss and per-clique gradient, one measurement at a time (inverse-variance weights)."""
    loss, grads = 0.0, [np.zeros(m.shape) for m in mu]
    for m in measurements:
        home = smallest_containing(domain, cliques, m.clique)
        pcl, w = cliques[home], 1.0 / m.sigma**2
        present = [a for a in pcl if a in m.clique]
        table = mu[home].sum(axis=tuple(i for i, a in enumerate(pcl) if a not in m.clique))
        resid = table.transpose([present.index(a) for a in m.clique]) - m.noisy_counts
        loss += 0.5 * w * float(np.sum(resid**2))
        grads[home] += (w * resid).transpose([m.clique.index(a) for a in present]).reshape(
            [domain[a] if a in m.clique else 1 for a in pcl])
    return loss, grads


def test_sparse_loss_equals_the_loss_measurement_by_measurement():
    domain = Domain(tuple("abcde"), (2, 3, 4, 2, 5))
    rng = np.random.default_rng(3)
    # repeats, a 1-way inside a pair, axes against domain order, a triple holding two pairs
    measured = [("a", "b"), ("b", "a"), ("b",), ("c", "d", "e"), ("e", "c"), ("d",), ("a", "b"), ("e", "d", "c")]
    meas = [Measurement(c, rng.normal(10, 3, [domain[a] for a in c]), float(rng.uniform(0.5, 3))) for c in measured]
    cliques = potential_cliques(domain, [m.clique for m in meas])
    loss = Loss(domain, cliques, meas, "inverse_variance")
    mu = [rng.random([domain[a] for a in c]) * 20 for c in cliques]
    value, flat = loss(mu)
    want_value, want_grads = brute_loss(domain, cliques, meas, mu)
    assert value == pytest.approx(want_value, rel=1e-12)
    for got, want in zip(loss.views(flat), want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_plan_caches_hand_out_equal_plans():
    sizes = {"a": 2, "b": 3, "c": 4, "d": 5}
    layout = tuple(sizes.items())
    items = (("a", "b"), ("b", "c", "d"), ("d",))
    assert addition_plan(layout, items) is addition_plan(layout, items)
    fresh, cached = AdditionPlan(tuple(sizes), sizes, items), addition_plan(layout, items)
    rng = np.random.default_rng(0)
    tables = [rng.random([sizes[a] for a in t]) for t in items]
    assert np.array_equal(fresh.run(tables), cached.run(tables))
    targets = (("a",), ("b", "d"), ("a", "b", "c", "d"), ("c", "d"))
    node = rng.random([2, 3, 4, 5])
    for want, got in zip(MarginalPlan(tuple(sizes), sizes, targets).run(node), marginal_plan(layout, targets).run(node)):
        assert np.array_equal(want, got)


def test_domain_check_refuses_bad_lists_after_good_ones():
    domain = Domain(("x", "y", "z"), (2, 3, 4))
    assert domain.check(["x", "y"]) == ("x", "y") and domain.size(("x", "y")) == 6
    assert domain.check(("x", "y")) == ("x", "y") and domain.size(["y", "z"]) == 12
    with pytest.raises(ValueError, match="repeated"):
        domain.check(("x", "x"))
    with pytest.raises(ValueError, match="unknown"):
        domain.check(("x", "w"))
    with pytest.raises(ValueError, match="unknown"):
        domain.check((["x"],))  # an unhashable name
    with pytest.raises(ValueError, match="repeated"):
        domain.check(("x", "x"))  # refused every time, never remembered
