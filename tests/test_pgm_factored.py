"""`pgm.kernels.factored.FactorPlan` (marginals of a product of factors, never formed) against the
formed product, and belief propagation with every node read out of its factors against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pgm.kernels.factored
import pgm.inference
from pgm.kernels import contract
from pgm.kernels.factored import FactorPlan, materialised_cost


def _formed(shape, scopes, tables):
    """The product of the factors, broadcast onto the node."""
    out = np.ones(shape)
    for scope, table in zip(scopes, tables):
        out = out * table.reshape([shape[a] if a in scope else 1 for a in range(len(shape))])
    return out


def _marginal(full, target):
    summed = tuple(a for a in range(full.ndim) if a not in target)
    kept = [a for a in range(full.ndim) if a in target]
    return np.transpose(full.sum(axis=summed), [kept.index(a) for a in target])


def _random_problem(rng, ndim, nfactors):
    shape = tuple(int(s) for s in rng.integers(1, 5, ndim))
    scopes = []
    for _ in range(nfactors):
        size = int(rng.integers(1, ndim + 1))
        scopes.append(tuple(sorted(int(a) for a in rng.choice(ndim, size, replace=False))))
    tables = [rng.random([shape[a] for a in s]) + 0.01 for s in scopes]
    return shape, scopes, tables


@pytest.mark.parametrize("seed", range(40))
def test_every_target_equals_the_formed_product(seed):
    # Random node shapes (with axes of length 1), overlapping factor scopes, targets of every size
    # in random axis order, repeated targets, the empty target (the total) and the whole node.
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(2, 7))
    shape, scopes, tables = _random_problem(rng, ndim, int(rng.integers(1, 5)))
    covered = sorted(set().union(*scopes))
    targets = [tuple(int(a) for a in rng.permutation(rng.choice(covered, int(rng.integers(0, len(covered) + 1)), replace=False)))
               for _ in range(6)]
    targets += [targets[0], (), tuple(covered[::-1])]
    plan = FactorPlan(shape, scopes, targets)
    full = _formed(shape, scopes, tables)
    broadcast = [t.reshape([shape[a] if a in s else 1 for a in range(ndim)]) for s, t in zip(scopes, tables)]
    for given in (tables, broadcast):  # compact or broadcast-shaped factors
        got = plan.run(given)
        assert len(got) == len(targets)
        for target, table in zip(targets, got):
            want = _marginal(full, target)
            assert table.shape == want.shape, target
            np.testing.assert_allclose(table, want, rtol=1e-12, atol=0)


def test_large_contractions_go_through_blas_and_stay_exact(monkeypatch):
    # Joint label spaces above contract.BLAS_CELLS take the batched-matmul path.
    monkeypatch.setattr(contract, "BLAS_CELLS", 16)
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        shape, scopes, tables = _random_problem(rng, 5, 3)
        covered = sorted(set().union(*scopes))
        targets = [tuple(rng.permutation(covered)[: k]) for k in range(len(covered) + 1)]
        full = _formed(shape, scopes, tables)
        for target, table in zip(targets, FactorPlan(shape, scopes, targets).run(tables)):
            np.testing.assert_allclose(table, _marginal(full, target), rtol=1e-12, atol=0)


def test_targets_share_contractions_and_read_out_of_marginals():
    # The shape of the largest root of adult at eps = 10: a message A over x and u, a factor B
    # over (u, h) and a factor C over (x, h); the targets are (a, h) for every attribute a of x
    # and u, and the message's axes. Three node-sized matrix products and three small products
    # serve all eight targets; every (a, h) is read out of the (x, h) or (u, h) marginal.
    shape = (2, 2, 5, 6, 7, 9, 15, 32)
    x, u, h = (0, 1, 2, 3, 4), (5, 6), (7,)
    scopes = [x + u, u + h, x + h]
    targets = [(a, 7) for a in range(7)] + [x + u]
    plan = FactorPlan(shape, scopes, targets)
    pairs = [s for s in plan.steps if s[1] is not None]
    assert len(pairs) == 6
    assert sum(math.prod(shape[a] for a in set(plan.labels[p]) | set(plan.labels[q])) > contract.BLAS_CELLS
               for p, q, _ in pairs) == 3
    assert all(len(plan.labels[p]) == 3 or len(plan.labels[p]) == 6 for p, q, _ in plan.steps if q is None)
    cells = math.prod(shape)
    assert plan.cost < 0.3 * materialised_cost(cells, 3, 3, collect=False)
    rng = np.random.default_rng(3)
    tables = [rng.random([shape[a] for a in s]) for s in scopes]
    full = _formed(shape, scopes, tables)
    for target, table in zip(targets, plan.run(tables)):
        np.testing.assert_allclose(table, _marginal(full, target), rtol=1e-12, atol=0)


def test_a_plan_needs_a_factor():
    with pytest.raises(ValueError, match="at least one factor"):
        FactorPlan((2, 3), [], [(0,)])


@pytest.fixture(autouse=True)
def _fresh_choices():
    """The engine caches its per-node choice by structure: forced choices must not leak either way."""
    pgm.kernels.factored.choose_reading.cache_clear()
    yield
    pgm.kernels.factored.choose_reading.cache_clear()


def _force_factored(monkeypatch):
    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)
    monkeypatch.setattr(pgm.inference, "_FACTOR_CELLS", 0)
    monkeypatch.setattr(pgm.kernels.factored, "materialised_cost", lambda *args, **kwargs: math.inf)


def test_belief_propagation_with_every_node_factored_equals_brute_force(random_model, monkeypatch):
    # Every node with factors and targets is read out of its factors: messages up, read-outs
    # down with the owed factor, roots normalised at read-out, tables formed only when asked;
    # and the fallbacks (underflowing slices, roots whose bound is too loose) on the cases below.
    import test_pgm_inference as inference_tests

    _force_factored(monkeypatch)
    from marginals.domain import Domain
    from pgm import TreeEngine, build_junction_tree

    dom = Domain(tuple("abcdef"), (6, 5, 4, 3, 2, 2))
    engine = TreeEngine(build_junction_tree(dom, [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "f"), ("e", "f")]),
                        [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "f"), ("e", "f")])
    assert len(engine._factored) == len(engine.tree.nodes)  # the forcing reaches every node here
    for seed in range(2):
        for structure in ("tree", "five_cycle_and_triple", "disconnected", "mixed_orders_and_subcliques"):
            inference_tests.test_marginals_equal_brute_force(structure, seed, random_model)
        inference_tests.test_marginals_with_structural_zeros(seed, random_model)
        inference_tests.test_potentials_that_disagree_by_far_more_than_exp_range_stay_exact(seed, random_model)
        for scale in (1.5, 400.0):
            inference_tests.test_node_layouts_unlike_domain_order_give_brute_force_beliefs(seed, scale, random_model)
    inference_tests.test_marginals_with_peaked_potentials_are_stable(400.0, random_model)
    inference_tests.test_propagate_gives_marginals_now_and_beliefs_on_demand(random_model, monkeypatch)


def test_mirror_descent_through_factored_nodes_matches_the_formed_tables(monkeypatch):
    # The same fit with every node formed and with every node factored: equal to rounding.
    from marginals.domain import Domain
    from marginals.measurement import Measurement
    from pgm import estimate

    rng = np.random.default_rng(11)
    dom = Domain(tuple("abcdef"), (4, 3, 5, 2, 3, 4))
    cliques = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "c")]
    measurements = [Measurement(c, rng.random(dom.project(c).shape) * 50, 2.0) for c in cliques]
    formed = estimate(dom, measurements, iters=60)
    _force_factored(monkeypatch)
    reads = []
    read = pgm.inference.TreeEngine._read_factored
    monkeypatch.setattr(pgm.inference.TreeEngine, "_read_factored", lambda self, i, *a: reads.append(i) or read(self, i, *a))
    factored = estimate(dom, measurements, iters=60)
    assert len(reads) > 60  # every propagation read nodes out of their factors
    for p, q in zip(formed.potentials.values(), factored.potentials.values()):
        np.testing.assert_allclose(p.values, q.values, rtol=0, atol=1e-8)
    for p, q in zip(formed.beliefs, factored.beliefs):
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-9)


def test_a_plan_refuses_the_wrong_number_of_factors():
    plan = FactorPlan((2, 3), [(0,), (1,)], [(0, 1)])
    with pytest.raises(ValueError, match="multiplies 2 factors, got 1"):
        plan.run([np.ones(2)])


def test_nodes_read_out_of_factors_only_when_cheaper_and_plannable(monkeypatch):
    # A star node: a large hub message and small pairs around it. Reading it out of its factors
    # is estimated far cheaper than forming it; a node with more factors than MAX_FACTORS is formed.
    layout = (("a", 8), ("b", 9), ("c", 10), ("d", 11), ("e", 12), ("h", 16))
    items = (("a", "b", "c", "d", "e"), ("a", "h"), ("b", "h"), ("c", "h"), ("d", "h"), ("e", "h"))
    targets = tuple((k, 5) for k in range(5)) + ((0, 1, 2, 3, 4),)
    choice = pgm.kernels.factored.choose_reading(layout, items, targets, None, None, 3)
    assert choice is not None
    merges, up, down = choice
    assert up is None and len(down.outputs) == len(targets)
    pgm.kernels.factored.choose_reading.cache_clear()
    monkeypatch.setattr(pgm.kernels.factored, "MAX_FACTORS", 1)
    assert pgm.kernels.factored.choose_reading(layout, items, targets, None, None, 3) is None
