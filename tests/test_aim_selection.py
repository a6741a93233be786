"""AIM's selection step: the model-size filter, the exponential-mechanism scores, and annealing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import aim.mechanism as mech
from aim import AIM, candidates, normalize_workload
from marginals import cdp_rho
from marginals.datasets import demo_dataset
from marginals.domain import Domain
from pgm.junction_tree import model_size_mb
from pgm.model import Model

EXPECTED_L1 = math.sqrt(2 / math.pi)


def _zero_model(domain, cliques):
    return Model(domain, cliques, [np.zeros(domain.project(c).shape) for c in cliques], total=100.0)


# --- AIM._filter on a hand-made model ---------------------------------------------------------------


def test_filter_keeps_free_candidates_and_small_ones_only():
    dom = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 60, 2))
    model = _zero_model(dom, [("a", "b"), ("b", "c"), ("d",), ("e",)])
    base = list(model.cliques)
    assert model_size_mb(dom, base) == pytest.approx((6 + 12 + 60 + 2) * 8 / 2**20)
    cand = [("a",), ("d",), ("b", "c"), ("c", "d"), ("a", "e"), ("a", "c")]
    small = model_size_mb(dom, base + [("a", "e")])  # ab, bc, ae, d: 82 cells
    assert model_size_mb(dom, base + [("c", "d")]) > small  # a new 240-cell node
    assert model_size_mb(dom, base + [("a", "c")]) > small  # closes a triangle: an abc node (24 cells)

    assert AIM._filter(dom, model, cand, small) == [("a",), ("d",), ("b", "c"), ("a", "e")]
    # just below the small candidate's size, only the free ones (inside a junction-tree node) stay
    below = math.nextafter(small, 0.0)
    assert AIM._filter(dom, model, cand, below) == [("a",), ("d",), ("b", "c")]
    # free candidates stay even when the limit is far below the current model's size
    assert AIM._filter(dom, model, cand, 1e-12) == [("a",), ("d",), ("b", "c")]
    assert AIM._filter(dom, model, cand, 1.0) == cand


def test_filter_free_means_inside_a_junction_tree_node_not_a_measured_clique():
    dom = Domain(("a", "b", "c", "d"), (5, 5, 5, 5))
    # a 4-cycle triangulates with a chord: nodes {a,b,c} and {a,c,d} (or the b-d chord)
    model = _zero_model(dom, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    nodes = [set(n) for n in model.tree.nodes]
    chord = next(c for c in [("a", "c"), ("b", "d")] if any(set(c) <= n for n in nodes))
    other = ({("a", "c"), ("b", "d")} - {chord}).pop()
    kept = AIM._filter(dom, model, [chord, other], 1e-12)
    assert kept == [chord]


# --- a recorded run ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded_run():
    """Run AIM with exponential_mechanism and estimate wrapped to record their inputs and outputs."""
    data = demo_dataset(n=3000, seed=4)
    dom = data.domain
    workload = [(c, 1.0) for c in itertools.combinations(dom.attrs, 2)]
    workload += [(("age", "education", "hours"), 3.0), (("sector", "region", "children"), 2.0)]
    mp = pytest.MonkeyPatch()
    calls, models = [], []
    real_em, real_estimate = mech.exponential_mechanism, mech.estimate

    def em(scores, epsilon, sensitivity, rng, accountant, label="select"):
        spent_before = accountant.spent
        choice = real_em(scores, epsilon, sensitivity, rng, accountant, label=label)
        calls.append(dict(scores=np.array(scores), eps=epsilon, sensitivity=sensitivity, spent=spent_before, choice=choice))
        return choice

    def est(*args, **kwargs):
        model = real_estimate(*args, **kwargs)
        models.append(model)
        return model

    mp.setattr(mech, "exponential_mechanism", em)
    mp.setattr(mech, "estimate", est)
    try:
        params = dict(epsilon=3.0, delta=1e-9, workload=workload, max_model_size=0.004, max_iters=15, final_iters=15,
                      anneal_iters=None, insecure_seed=5)  # one estimate per round: no anneal confirmation fits
        release = AIM(**params).run(data)
    finally:
        mp.undo()
    return data, params, release, calls, models


def _allowed(domain, model, cand, limit):
    """Independent statement of the filter: inside a tree node, or the hypothetical model fits."""
    nodes = [set(n) for n in model.tree.nodes]
    return [r for r in cand if any(set(r) <= n for n in nodes) or model_size_mb(domain, list(model.cliques) + [r]) <= limit]


def test_every_round_calls_the_exponential_mechanism_once_and_estimate_once(recorded_run):
    data, params, release, calls, models = recorded_run
    assert len(calls) == len(release.rounds) >= 3
    assert len(models) == len(release.rounds) + 1  # initial fit, one per round except the last (the final fit covers it)
    assert models[-1] is release.model


def test_selection_scores_sensitivity_and_eps(recorded_run):
    data, params, release, calls, models = recorded_run
    dom = data.domain
    cand = candidates(dom, normalize_workload(dom, params["workload"]))
    rho = cdp_rho(params["epsilon"], params["delta"])
    filtered_rounds = 0
    for i, (call, entry) in enumerate(zip(calls, release.rounds)):
        before = models[i]
        sigma = entry["sigma"]
        assert call["eps"] == entry["eps_select"]
        rho_used = call["spent"] + 0.5 / sigma**2 + call["eps"] ** 2 / 8
        assert rho_used == pytest.approx(entry["rho_used"], rel=1e-6)  # the charged variance is rounded up
        allowed = _allowed(dom, before, list(cand), params["max_model_size"] * rho_used / rho)
        filtered_rounds += len(allowed) < len(cand)
        assert call["sensitivity"] == max(cand[r] for r in allowed)
        expected = np.array(
            [
                cand[r] * (np.abs(data.marginal(r) - before.marginals([r])[0]).sum() - EXPECTED_L1 * sigma * dom.size(r))
                for r in allowed
            ]
        )
        assert call["scores"].shape == expected.shape
        np.testing.assert_allclose(call["scores"], expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
        assert tuple(entry["clique"]) == allowed[call["choice"]]
        assert entry["candidates"] == len(allowed)
    assert filtered_rounds >= 1  # the size filter was binding in this run


def test_selected_cliques_respect_the_size_limit(recorded_run):
    data, params, release, calls, models = recorded_run
    dom = data.domain
    rho = cdp_rho(params["epsilon"], params["delta"])
    grew = 0
    for i, entry in enumerate(release.rounds):
        before, after = models[i], models[i + 1]
        r = tuple(entry["clique"])
        limit = params["max_model_size"] * entry["rho_used"] / rho
        assert after.size_mb == entry["model_size_mb"]
        if any(set(r) <= set(n) for n in before.tree.nodes):
            continue  # free: may exceed the limit
        grew += 1
        assert model_size_mb(dom, list(before.cliques) + [r]) <= limit * (1 + 1e-12)
        assert entry["model_size_mb"] <= limit * (1 + 1e-12)
    assert grew >= 1
    assert release.model.size_mb <= params["max_model_size"]


def test_annealing_flag_follows_the_rule(recorded_run):
    data, params, release, calls, models = recorded_run
    for i, entry in enumerate(release.rounds):
        r = tuple(entry["clique"])
        moved = np.abs(models[i + 1].marginals([r])[0] - models[i].marginals([r])[0]).sum()
        expected = moved <= EXPECTED_L1 * entry["sigma"] * data.domain.size(r)
        assert entry["annealed"] == expected
