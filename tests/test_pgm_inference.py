"""Belief propagation (`TreeEngine`) and marginal queries (`Model.project`, `Model.marginals`)
against the brute-force joint, on small random models of many shapes."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import pgm
from marginals.domain import Domain
from pgm import Model, TreeEngine, brute_force_joint, build_junction_tree

TOL = 1e-10  # relative to the total

STRUCTURES = {
    "chain": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")],
    "tree": [("a", "b"), ("a", "c"), ("a", "d"), ("d", "e"), ("d", "f")],
    "four_cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e", "f"), ("f", "a")],
    "five_cycle_and_triple": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"), ("b", "e", "f")],
    "disconnected": [("a", "b"), ("b", "c"), ("d", "e"), ("f",)],
    "isolated_attribute": [("b", "a"), ("c", "b", "d"), ("d", "e")],  # f appears in no clique
    "mixed_orders_and_subcliques": [("c", "a"), ("a",), ("d", "b", "a"), ("f", "e"), ("e", "d"), ("b", "d")],
}


def domain6(rng: np.random.Generator) -> Domain:
    return Domain(tuple("abcdef"), tuple(int(s) for s in rng.integers(2, 5, 6)))


def log_potentials(model: Model) -> list[np.ndarray]:
    """The model's log-potential tables, in clique order (what brute force multiplies out)."""
    return [f.values for f in model.potentials.values()]


def bf_marginal(joint: np.ndarray, domain: Domain, attrs) -> np.ndarray:
    attrs = tuple(attrs)
    summed = tuple(i for i, a in enumerate(domain.attrs) if a not in attrs)
    table = joint.sum(axis=summed)
    present = [a for a in domain.attrs if a in attrs]
    return np.transpose(table, [present.index(a) for a in attrs])


def all_subsets(domain: Domain, rng: np.random.Generator):
    """Every 1-, 2- and 3-way subset, each in a random attribute order."""
    for k in (1, 2, 3):
        for s in itertools.combinations(domain.attrs, k):
            yield tuple(rng.permutation(s))


def check_against_brute_force(model: Model, potentials, rng) -> None:
    dom = model.domain
    joint = brute_force_joint(dom, model.cliques, potentials, model.total)
    assert joint.sum() == pytest.approx(model.total, rel=1e-12)
    subsets = list(all_subsets(dom, rng))
    batch = model.marginals(subsets)
    for attrs, got in zip(subsets, batch):
        want = bf_marginal(joint, dom, attrs)
        assert got.shape == want.shape, attrs
        assert np.max(np.abs(got - want)) <= TOL * model.total, attrs
        proj = model.project(attrs)
        assert proj.attrs == attrs
        np.testing.assert_array_equal(proj.values, got)
    # The full joint through the out-of-clique path (touches every node and component).
    full = model.project(dom.attrs).values
    assert np.max(np.abs(full - joint)) <= TOL * model.total


@pytest.mark.parametrize("structure", sorted(STRUCTURES))
@pytest.mark.parametrize("seed", range(3))
def test_marginals_equal_brute_force(structure, seed, random_model):
    rng = np.random.default_rng(1000 * seed + len(structure))
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES[structure], rng, total=float(rng.integers(100, 100_000)))
    potentials = log_potentials(model)
    check_against_brute_force(model, potentials, rng)


@pytest.mark.parametrize("seed", range(3))
def test_marginals_with_structural_zeros(seed, random_model):
    rng = np.random.default_rng(50 + seed)
    dom = domain6(rng)
    cliques = STRUCTURES["five_cycle_and_triple"]
    model = random_model(dom, cliques, rng, zeros=0.25)
    potentials = log_potentials(model)
    joint = brute_force_joint(dom, cliques, potentials, model.total)
    assert (joint == 0).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 or -inf - -inf warnings leak out
        check_against_brute_force(model, potentials, rng)
    for attrs in [("a", "b"), ("c", "f"), ("e", "b", "d")]:
        got = model.project(attrs).values
        want = bf_marginal(joint, dom, attrs)
        assert not np.isnan(got).any()
        np.testing.assert_array_equal(got == 0, want == 0)  # impossible states stay exactly impossible


@pytest.mark.parametrize("scale", [40.0, 400.0])  # exp(+-120); exp(+-1200) overflows float64
def test_marginals_with_peaked_potentials_are_stable(scale, random_model):
    rng = np.random.default_rng(9)
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES["four_cycle"], rng, scale=scale)
    potentials = log_potentials(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_against_brute_force(model, potentials, rng)


def test_calibrated_beliefs_are_consistent_and_sum_to_total(random_model):
    rng = np.random.default_rng(3)
    dom = domain6(rng)
    cliques = STRUCTURES["disconnected"]
    model = random_model(dom, cliques, rng, total=500.0)
    potentials = log_potentials(model)
    tree = build_junction_tree(dom, cliques)
    engine = TreeEngine(tree, cliques)
    beliefs = engine.calibrate(potentials, 500.0)
    joint = brute_force_joint(dom, cliques, potentials, 500.0)
    for node, belief in zip(tree.nodes, beliefs):
        assert belief.sum() == pytest.approx(500.0, rel=1e-12)  # every component normalised
        np.testing.assert_allclose(belief, bf_marginal(joint, dom, node), rtol=0, atol=TOL * 500)
    for clique, mu in zip(cliques, engine.clique_marginals(beliefs)):
        np.testing.assert_allclose(mu, bf_marginal(joint, dom, clique), rtol=0, atol=TOL * 500)


def test_engine_refuses_a_clique_outside_the_tree():
    dom = Domain(("a", "b", "c"), (2, 2, 2))
    tree = build_junction_tree(dom, [("a", "b"), ("b", "c")])
    with pytest.raises(ValueError, match="not covered"):
        TreeEngine(tree, [("a", "c")])


def test_all_impossible_model_raises():
    dom = Domain(("a", "b"), (2, 2))
    model = Model(dom, [("a", "b")], [np.full((2, 2), -np.inf)], 10.0)
    with pytest.raises(FloatingPointError):
        model.project(("a",))


def test_empty_query_and_unknown_attributes(random_model):
    rng = np.random.default_rng(4)
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES["chain"], rng, total=321.0)
    assert float(model.marginals([()])[0]) == pytest.approx(321.0)
    with pytest.raises(ValueError, match="unknown"):
        model.project(("a", "zz"))
    with pytest.raises(ValueError, match="repeated"):
        model.project(("a", "a"))


def test_model_validation_and_basic_properties(random_model):
    rng = np.random.default_rng(5)
    dom = domain6(rng)
    cliques = STRUCTURES["chain"]
    model = random_model(dom, cliques, rng)
    potentials = log_potentials(model)
    assert model.cliques == tuple(cliques)
    assert list(model.potentials) == list(cliques)
    assert model.size_mb == pgm.model_size_mb(dom, cliques)
    assert model.total == 1000.0
    with pytest.raises(ValueError, match="potential tables"):
        Model(dom, cliques, potentials[:-1], 10.0)


def test_repeated_queries_are_cached_and_transposed(random_model):
    rng = np.random.default_rng(6)
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES["four_cycle"], rng)
    potentials = log_potentials(model)
    ab = model.project(("c", "e")).values
    ba = model.project(("e", "c")).values
    np.testing.assert_array_equal(ab.T, ba)
    again = model.marginals([("c", "e"), ("e", "c")])
    np.testing.assert_array_equal(again[0], ab)
    np.testing.assert_array_equal(again[1], ba)
    joint = brute_force_joint(dom, model.cliques, potentials, model.total)
    assert np.max(np.abs(ab - bf_marginal(joint, dom, ("c", "e")))) <= TOL * model.total


def test_handed_over_beliefs_are_used_as_is(random_model):
    rng = np.random.default_rng(8)
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES["tree"], rng)
    potentials = log_potentials(model)
    other = Model(dom, model.cliques, potentials, model.total, tree=model.tree, beliefs=model.beliefs)
    assert other.tree is model.tree
    assert all(x is y for x, y in zip(other.beliefs, model.beliefs))
    np.testing.assert_allclose(other.project(("b", "f")).values, model.project(("b", "f")).values, rtol=1e-14)


def test_repeated_cliques_are_refused_rather_than_silently_dropped():
    dom = Domain(("a", "b"), (2, 2))
    p1, p2 = np.array([[0.0, 1.0], [2.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 3.0]])
    with pytest.raises(ValueError, match="repeated clique"):
        Model(dom, [("a", "b"), ("a", "b")], [p1, p2], 10.0)
    # The same attribute set in two orders is two cliques, and both potentials count.
    model = Model(dom, [("a", "b"), ("b", "a")], [p1, p2.T], 10.0)
    joint = brute_force_joint(dom, [("a", "b"), ("a", "b")], [p1, p2], 10.0)
    np.testing.assert_allclose(model.project(("a", "b")).values, joint, rtol=1e-12)


def test_returned_marginals_cannot_corrupt_the_cache(random_model):
    rng = np.random.default_rng(12)
    dom = domain6(rng)
    model = random_model(dom, STRUCTURES["four_cycle"], rng)
    potentials = log_potentials(model)
    joint = brute_force_joint(dom, model.cliques, potentials, model.total)
    for attrs in [("a", "b"), ("c", "e"), ("e", "c"), ("f",)]:
        table = model.marginals([attrs])[0]
        with pytest.raises(ValueError, match="read-only"):
            table *= 0
        again = model.marginals([attrs])[0]
        np.testing.assert_allclose(again, bf_marginal(joint, dom, attrs), rtol=0, atol=TOL * model.total)
    # Copies are ordinary arrays.
    copy = model.project(("c", "e")).copy()
    copy.values[...] = 0.0
    assert model.project(("c", "e")).values.sum() == pytest.approx(model.total)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale", [1.5, 400.0])  # 400: slices underflow and take the per-slice shift
def test_node_layouts_unlike_domain_order_give_brute_force_beliefs(seed, scale, random_model):
    # Decreasing domain sizes: every node's internal layout (by increasing size) reverses its
    # domain order, and parent and child order their separators differently.
    rng = np.random.default_rng(70 + seed)
    dom = Domain(tuple("abcdef"), (6, 5, 4, 3, 2, 2))
    cliques = [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "f"), ("e", "f")]
    model = random_model(dom, cliques, rng, total=1000.0, scale=scale, zeros=0.1 if seed % 2 else 0.0)
    potentials = log_potentials(model)
    tree = build_junction_tree(dom, cliques)
    engine = TreeEngine(tree, cliques)
    joint = brute_force_joint(dom, cliques, potentials, 1000.0)
    for slot in (None, 0, 0):  # the slot's buffers are reused on the second call
        beliefs, mu = engine.calibrate_marginals(potentials, 1000.0, slot=slot)
        for node, belief in zip(tree.nodes, beliefs):
            np.testing.assert_allclose(belief, bf_marginal(joint, dom, node), rtol=0, atol=TOL * 1000)
        for clique, table in zip(cliques, mu):
            np.testing.assert_allclose(table, bf_marginal(joint, dom, clique), rtol=0, atol=TOL * 1000)


@pytest.mark.parametrize("seed", range(3))
def test_potentials_that_disagree_by_far_more_than_exp_range_stay_exact(seed, random_model):
    # In the root (a, b, c) and in the leaf (d, e), one summand is huge where another is hugely
    # negative: the sum of the summands' maxima overshoots the log-table's max by ~1000, so the
    # bound shift underflows and both the root and the leaf must fall back to exact shifts.
    rng = np.random.default_rng(90 + seed)
    dom = Domain(tuple("abcde"), (3, 4, 2, 3, 2))
    cliques = [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d"), ("d", "e"), ("e",)]
    model = random_model(dom, cliques, rng, total=100.0)
    potentials = [p.copy() for p in log_potentials(model)]
    potentials[0][0, 1:] += 1000.0
    potentials[1][0, :] += 1000.0  # (a, b) peaks where b > 0, (b, c) where b = 0: no cell gets both
    potentials[4][:, 0] += 1000.0
    potentials[5][0] -= 1000.0
    model = Model(dom, cliques, potentials, 100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_against_brute_force(model, potentials, rng)


@pytest.mark.parametrize("path", ["product", "log"])
def test_both_ways_of_building_node_tables_give_brute_force_marginals(path, random_model, monkeypatch):
    # Nodes of at least _PRODUCT_CELLS cells are built as products of exponentials, smaller ones
    # from the log-table: force every node through one way, on the cases above.
    import pgm.inference

    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0 if path == "product" else 1 << 62)
    for seed in range(2):
        for structure in ("five_cycle_and_triple", "disconnected", "mixed_orders_and_subcliques"):
            test_marginals_equal_brute_force(structure, seed, random_model)
        test_marginals_with_structural_zeros(seed, random_model)
        test_potentials_that_disagree_by_far_more_than_exp_range_stay_exact(seed, random_model)
        test_node_layouts_unlike_domain_order_give_brute_force_beliefs(seed, 400.0, random_model)
    test_marginals_with_peaked_potentials_are_stable(400.0, random_model)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_large_table_paths_on_every_core_give_brute_force_marginals(threads, random_model, monkeypatch):
    # Force every node through the large-node path (product build, owed factors read out without
    # rescaling, root normalised at read-out) and every pass through the slabbed thread pool.
    import pgm.inference
    import pgm.kernels.threads

    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)
    monkeypatch.setattr(pgm.kernels.threads, "MIN_CELLS", 1)
    monkeypatch.setattr(pgm.kernels.threads, "MIN_RUN", 1)
    monkeypatch.setenv("DP_MARGINALS_THREADS", threads)
    for seed in range(2):
        for structure in ("tree", "five_cycle_and_triple", "disconnected", "mixed_orders_and_subcliques"):
            test_marginals_equal_brute_force(structure, seed, random_model)
        test_marginals_with_structural_zeros(seed, random_model)
        test_potentials_that_disagree_by_far_more_than_exp_range_stay_exact(seed, random_model)
        test_node_layouts_unlike_domain_order_give_brute_force_beliefs(seed, 400.0, random_model)


def test_propagate_gives_marginals_now_and_beliefs_on_demand(random_model, monkeypatch):
    import pgm.inference

    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)  # every non-root node owes a factor
    rng = np.random.default_rng(5)
    dom = Domain(tuple("abcdef"), (6, 5, 4, 3, 2, 2))
    cliques = [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "f"), ("e", "f")]
    model = random_model(dom, cliques, rng, total=300.0)
    potentials = log_potentials(model)
    tree = build_junction_tree(dom, cliques)
    engine = TreeEngine(tree, cliques)
    joint = brute_force_joint(dom, cliques, potentials, 300.0)
    calibration = engine.propagate(potentials, 300.0, slot=0)
    for clique, table in zip(cliques, calibration.marginals):
        np.testing.assert_allclose(table, bf_marginal(joint, dom, clique), rtol=0, atol=TOL * 300)
    first = [b.copy() for b in calibration.beliefs()]
    again = calibration.beliefs()  # the owed factors are applied once
    for node, b1, b2 in zip(tree.nodes, first, again):
        np.testing.assert_array_equal(b1, b2)
        np.testing.assert_allclose(b1, bf_marginal(joint, dom, node), rtol=0, atol=TOL * 300)
