"""`pgm.estimation`: mirror descent recovers exact marginals, never increases the loss, warm
starts without losing information, weights the loss as asked, and validates its inputs; and
the minimum-variance total."""

from __future__ import annotations

import numpy as np
import pytest

import pgm
from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm import Model, estimate, minimum_variance_total, potential_cliques

DOM = Domain(tuple("abcde"), (2, 3, 4, 2, 3))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d", "e"), ("a", "e")]


def exact_measurements(model, cliques):
    return [Measurement(tuple(c), model.project(c).values, 1.0) for c in cliques]


def noisy_measurements(model, cliques, sigma, seed):
    rng = np.random.default_rng(seed)
    return [
        Measurement(tuple(c), model.project(c).values + rng.normal(0, sigma, model.project(c).values.shape), sigma)
        for c in cliques
    ]


# --- recovery ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_recovers_exact_marginals_of_a_factorizing_distribution(seed, random_model):
    truth = random_model(DOM, CLIQUES, seed)
    # Full cliques (some in non-domain order) plus measurements on strict subsets of a clique.
    measured = [("b", "a"), ("c", "b"), ("e", "c", "d"), ("a", "e"), ("d",), ("e", "c")]
    model = estimate(DOM, exact_measurements(truth, measured), iters=600)
    assert model.total == pytest.approx(1000.0, rel=1e-12)
    for c in measured:
        err = np.max(np.abs(model.project(c).values - truth.project(c).values))
        assert err < 1e-6 * truth.total, c
    # The max-entropy fit of the clique marginals is the generating model: out-of-clique marginals agree too.
    for c in [("a", "c"), ("d", "b", "a")]:
        assert np.max(np.abs(model.project(c).values - truth.project(c).values)) < 1e-6 * truth.total
    assert set(model.cliques) == {("a", "b"), ("b", "c"), ("c", "d", "e"), ("a", "e")}


def test_recovers_a_model_with_disconnected_parts_and_an_isolated_attribute(random_model):
    dom = Domain(tuple("abcdef"), (3, 2, 4, 2, 3, 5))
    cliques = [("a", "b"), ("b", "c"), ("e", "d")]
    truth = random_model(dom, cliques, 11, total=250.0)
    measured = cliques + [("f",)]
    model = estimate(dom, exact_measurements(truth, measured), iters=600)
    for c in measured + [("a", "e"), ("f", "c")]:
        assert np.max(np.abs(model.project(c).values - truth.project(c).values)) < 1e-6 * truth.total, c


# --- the optimisation path -----------------------------------------------------------------------


def test_loss_history_never_increases_and_callback_sees_every_iteration(random_model):
    truth = random_model(DOM, CLIQUES, 3)
    meas = noisy_measurements(truth, CLIQUES + [("b",)], sigma=5.0, seed=0)
    seen = []
    model = estimate(DOM, meas, iters=150, callback=lambda it, loss: seen.append((it, loss)))
    history = model.info["history"]
    assert len(history) == 151 and model.info["iterations"] == 150
    assert all(b <= a for a, b in zip(history, history[1:]))
    assert history[-1] < history[0]
    assert [it for it, _ in seen] == list(range(1, 151))
    assert [loss for _, loss in seen] == history[1:]
    assert model.info["loss"] == history[-1]
    # The reported loss is sum 0.5 * ||(mu - y) / sigma||^2 on the returned model.
    direct = sum(0.5 * np.sum(((model.project(m.clique).values - m.noisy_counts) / m.sigma) ** 2) for m in meas)
    assert history[-1] == pytest.approx(direct, rel=1e-9)


def test_warm_start_resumes_at_the_previous_optimum(random_model):
    truth = random_model(DOM, CLIQUES, 4)
    meas = noisy_measurements(truth, CLIQUES, sigma=3.0, seed=1)
    first = estimate(DOM, meas, iters=40)
    second = estimate(DOM, meas, iters=40, warm_start=first)
    h1, h2 = first.info["history"], second.info["history"]
    assert h2[0] == pytest.approx(h1[-1], rel=1e-12)
    assert max(h2) <= h1[-1] * (1 + 1e-12)
    assert h2[-1] < h1[-1]
    cold = estimate(DOM, meas, iters=0)
    assert cold.info["history"][0] > h1[-1]  # a cold start does not begin there


def test_warm_start_resumes_or_restarts_the_step_size(random_model):
    truth = random_model(DOM, CLIQUES, 4)
    meas = noisy_measurements(truth, CLIQUES, sigma=3.0, seed=1)
    first = estimate(DOM, meas, iters=40, momentum=0.0, step_growth=1.5)
    initial = 2.0 / (first.info["lipschitz"] * minimum_variance_total(meas))
    assert first.stepsize > initial  # it grew
    resumed = estimate(DOM, meas, iters=0, warm_start=first)
    restarted = estimate(DOM, meas, iters=0, warm_start=first, resume_stepsize=False)
    assert resumed.stepsize == first.stepsize
    assert restarted.stepsize == pytest.approx(initial, rel=1e-12)


def test_warm_start_into_a_larger_clique_set_keeps_the_old_information(random_model):
    truth = random_model(DOM, CLIQUES, 5)
    old_meas = noisy_measurements(truth, [("a", "b"), ("b", "c"), ("c", "d")], sigma=2.0, seed=2)
    old = estimate(DOM, old_meas, iters=100)
    # New cliques: one swallows two old ones, one adds a new attribute.
    new_meas = noisy_measurements(truth, [("c", "b", "a"), ("d", "e")], sigma=2.0, seed=3)
    grown = estimate(DOM, new_meas, iters=0, warm_start=old, total=old.total)
    assert {("a", "b", "c"), ("d", "e")} <= set(grown.cliques)
    assert all(any(set(c) <= set(g) for g in grown.cliques) for c in old.cliques)
    for c in [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "b", "a")]:
        np.testing.assert_allclose(grown.project(c).values, old.project(c).values, rtol=1e-10, atol=1e-9)
    with pytest.raises(ValueError, match="domain"):
        estimate(Domain(tuple("abcde"), (2, 3, 4, 2, 4)), new_meas, iters=0, warm_start=old)


@pytest.mark.parametrize("weighting", ["inverse_variance", "inverse_sigma"])
def test_loss_weight_sets_the_weighted_mean_of_conflicting_measurements(weighting):
    dom = Domain(("a",), (4,))
    y1 = np.array([10.0, 20.0, 30.0, 40.0])
    y2 = np.array([40.0, 30.0, 20.0, 10.0])  # same total (100), so the weighted mean is feasible
    s1, s2 = 1.0, 3.0
    meas = [Measurement(("a",), y1, s1), Measurement(("a",), y2, s2)]
    model = estimate(dom, meas, total=100.0, iters=500, loss_weight=weighting)
    w1, w2 = (1 / s1**2, 1 / s2**2) if weighting == "inverse_variance" else (1 / s1, 1 / s2)
    expected = (w1 * y1 + w2 * y2) / (w1 + w2)
    np.testing.assert_allclose(model.project(("a",)).values, expected, rtol=0, atol=1e-6 * 100)


def test_the_two_weightings_differ():
    dom = Domain(("a",), (4,))
    meas = [
        Measurement(("a",), np.array([10.0, 20.0, 30.0, 40.0]), 1.0),
        Measurement(("a",), np.array([40.0, 30.0, 20.0, 10.0]), 3.0),
    ]
    iv = estimate(dom, meas, total=100.0, iters=300).project(("a",)).values
    isg = estimate(dom, meas, total=100.0, iters=300, loss_weight="inverse_sigma").project(("a",)).values
    assert np.max(np.abs(iv - isg)) > 1.0


def test_tol_stops_early(random_model):
    truth = random_model(DOM, CLIQUES, 6)
    meas = noisy_measurements(truth, CLIQUES, sigma=5.0, seed=4)
    model = estimate(DOM, meas, iters=5000, tol=1e-4)
    it = model.info["iterations"]
    assert 10 <= it < 5000
    h = model.info["history"]
    assert len(h) == it + 1
    assert h[-11] - h[-1] <= 1e-4 * h[-11]
    assert all(h[k - 10] - h[k] > 1e-4 * h[k - 10] for k in range(10, it))  # it did not stop any sooner


def test_iters_zero_returns_the_starting_model(random_model):
    truth = random_model(DOM, CLIQUES, 7)
    meas = exact_measurements(truth, CLIQUES)
    model = estimate(DOM, meas, iters=0)
    assert model.info["iterations"] == 0 and len(model.info["history"]) == 1
    uniform = model.project(("a", "b")).values
    np.testing.assert_allclose(uniform, np.full((2, 3), model.total / 6), rtol=1e-12)


def test_bad_inputs_raise(random_model):
    truth = random_model(DOM, CLIQUES, 8)
    good = exact_measurements(truth, CLIQUES)
    with pytest.raises(ValueError, match="shape"):
        estimate(DOM, good + [Measurement(("a", "b"), np.ones((3, 2)), 1.0)], iters=1)
    with pytest.raises(ValueError, match="unknown"):
        estimate(DOM, good + [Measurement(("a", "zz"), np.ones((2, 2)), 1.0)], iters=1)
    with pytest.raises(ValueError, match="iters"):
        estimate(DOM, good, iters=-1)
    with pytest.raises(ValueError, match="loss_weight"):
        estimate(DOM, good, iters=1, loss_weight="inverse")
    with pytest.raises(ValueError, match="total"):
        estimate(DOM, good, iters=1, total=0.0)
    with pytest.raises(ValueError, match="at least one measurement"):
        estimate(DOM, [], iters=1)
    with pytest.raises(ValueError, match="at least one measurement"):
        estimate(DOM, [], iters=1, total=10.0, warm_start=random_model(DOM, CLIQUES, 9))


# --- total and clique bookkeeping ----------------------------------------------------------------


def test_minimum_variance_total_by_hand():
    m1 = Measurement(("a",), np.array([10.0, 20.0, 30.0, 40.0]), 1.0)  # sum 100, var 1 * 4 = 4
    m2 = Measurement(("b", "c"), np.array([[60.0, 70.0]]), 2.0)  # sum 130, var 4 * 2 = 8
    # (100/4 + 130/8) / (1/4 + 1/8) = 41.25 / 0.375 = 110
    assert minimum_variance_total([m1, m2]) == pytest.approx(110.0, rel=1e-14)
    assert minimum_variance_total([m1]) == pytest.approx(100.0, rel=1e-14)
    negative = Measurement(("a",), np.array([-30.0, -20.0]), 1.0)
    assert minimum_variance_total([negative]) == 1.0
    with pytest.raises(ValueError):
        minimum_variance_total([])


def test_estimate_uses_the_minimum_variance_total_unless_given():
    m1 = Measurement(("a",), np.array([10.0, 20.0, 30.0, 40.0]), 1.0)
    m2 = Measurement(("a",), np.array([30.0, 40.0, 30.0, 30.0]), 2.0)
    dom = Domain(("a",), (4,))
    assert estimate(dom, [m1, m2], iters=0).total == pytest.approx(minimum_variance_total([m1, m2]))
    assert estimate(dom, [m1, m2], iters=0, total=77.0).total == 77.0


def test_potential_cliques_keeps_maximal_cliques_in_domain_order():
    got = potential_cliques(DOM, [("b", "a"), ("a",), ("e", "c", "d"), ("c", "d"), ("a", "b"), ("e", "a")])
    assert got == [("a", "b"), ("c", "d", "e"), ("a", "e")]


def test_lipschitz_and_initial_step_follow_the_metadata_formula(random_model):
    truth = random_model(DOM, CLIQUES, 9)
    meas = [
        Measurement(("a", "b"), truth.project(("a", "b")).values, 2.0),
        Measurement(("a",), truth.project(("a",)).values, 1.0),
    ]
    model = estimate(DOM, meas, iters=0)
    # Both measurements land on clique (a, b) (6 cells): 1/4 * 6/6 + 1/1 * 6/2 = 3.25.
    assert model.info["lipschitz"] == pytest.approx(3.25, rel=1e-14)
    assert model.stepsize == pytest.approx(2.0 / (3.25 * model.total), rel=1e-12)
    assert isinstance(model, pgm.Model)


def test_warm_start_from_structural_zeros_stays_finite(random_model):
    # a model with -inf log-potentials (cells that can never occur) warm-starts the next fit;
    # the momentum step used to form (-inf) - (-inf) = NaN and poison every later iterate
    truth = random_model(DOM, CLIQUES, 6)
    potentials = [f.values.copy() for f in truth.potentials.values()]
    potentials[0][1, 2] = -np.inf  # a = 1, b = 2 never occurs
    potentials[2][0, :, 1] = -np.inf
    zeros = Model(DOM, CLIQUES, potentials, truth.total)
    meas = noisy_measurements(zeros, CLIQUES, sigma=1.0, seed=4)
    for momentum in (0.95, 0.0):
        model = estimate(DOM, meas, iters=60, warm_start=zeros, momentum=momentum)
        history = model.info["history"]
        assert np.all(np.isfinite(history)) and history[-1] <= history[0]
        assert model.info["accepted"] > 10  # it did move (momentum included)
        for factor in model.potentials.values():
            assert not np.isnan(factor.values).any()
        ab = model.project(("a", "b")).values
        assert np.all(np.isfinite(ab)) and ab[1, 2] == 0.0  # the structural zero is kept
        assert model.project(("c", "d", "e")).values[0, :, 1].sum() == 0.0
