"""The reference belief propagation (`pgm.reference`) against the brute-force joint on tiny
domains, and the engine (`TreeEngine` beliefs, `Model` marginals) against the reference on random
models: forests, single-node trees, structural zeros, product-built and factored nodes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pgm.inference
import pgm.kernels.factored
from marginals.domain import Domain
from pgm import Model, TreeEngine, build_junction_tree
from pgm.reference import belief_propagation, brute_force_joint

REL = 1e-9  # agreement, relative to the total


def random_model(rng: np.random.Generator, sizes: tuple[int, int], attrs: int, zeros: float = 0.0,
                 scale: float = 1.0, cliques: list | None = None):
    """A random domain, clique set (0 to ``attrs`` cliques of 1-3 attributes in random order, so
    some attributes sit in no clique and the tree is often a forest) and log-potentials."""
    names = tuple("abcdefghij"[:attrs])
    domain = Domain(names, tuple(int(s) for s in rng.integers(sizes[0], sizes[1] + 1, attrs)))
    if cliques is None:
        drawn = {tuple(rng.permutation(rng.choice(names, int(rng.integers(1, min(3, attrs) + 1)), replace=False)))
                 for _ in range(int(rng.integers(0, attrs + 1)))}
        cliques = sorted(drawn)
    potentials = []
    for clique in cliques:
        values = rng.normal(scale=scale, size=domain.project(clique).shape)
        values[rng.random(values.shape) < zeros] = -np.inf
        potentials.append(values)
    total = float(rng.integers(10, 100_000))
    return domain, [tuple(str(a) for a in c) for c in cliques], potentials, total


def marginal(joint: np.ndarray, domain: Domain, attrs) -> np.ndarray:
    """The brute-force marginal over ``attrs``, axes in the order given."""
    table = joint.sum(axis=tuple(i for i, a in enumerate(domain.attrs) if a not in attrs))
    present = [a for a in domain.attrs if a in attrs]
    return np.transpose(table, [present.index(a) for a in attrs])


def assert_close(got: np.ndarray, want: np.ndarray, total: float) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=REL, atol=REL * total)


SHAPES = {
    "one_attribute": (1, [("a",)]),
    "no_cliques": (3, []),
    "single_clique": (4, [("c", "a", "d", "b")]),
    "isolated_attributes": (4, [("a",), ("c",)]),
    "chain": (5, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]),
    "cycle": (5, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a")]),
    "two_components": (6, [("b", "a"), ("a", "c"), ("d", "e"), ("f", "e", "d")]),
}


@pytest.mark.parametrize("seed", range(16))
def test_reference_equals_brute_force_on_random_models(seed):
    rng = np.random.default_rng(seed)
    domain, cliques, potentials, total = random_model(rng, (1, 4), int(rng.integers(2, 7)),
                                                      zeros=0.2 if seed % 3 == 0 else 0.0,
                                                      scale=(1.0, 5.0, 50.0)[seed % 3])
    tree = build_junction_tree(domain, cliques)
    joint = brute_force_joint(domain, cliques, potentials, total)
    beliefs = belief_propagation(tree, cliques, potentials, total)
    assert len(beliefs) == len(tree.nodes)
    for node, belief in zip(tree.nodes, beliefs):
        assert belief.attrs == node
        assert belief.values.sum() == pytest.approx(total, rel=1e-12)  # every component
        assert_close(belief.values, marginal(joint, domain, node), total)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_reference_equals_brute_force_on_special_shapes(shape):
    attrs, cliques = SHAPES[shape]
    rng = np.random.default_rng(len(shape))
    domain, cliques, potentials, total = random_model(rng, (2, 4), attrs, zeros=0.1, cliques=cliques)
    tree = build_junction_tree(domain, cliques)
    joint = brute_force_joint(domain, cliques, potentials, total)
    for node, belief in zip(tree.nodes, belief_propagation(tree, cliques, potentials, total)):
        assert_close(belief.values, marginal(joint, domain, node), total)
        assert np.array_equal(belief.values == 0, marginal(joint, domain, node) == 0)  # zeros stay zeros


def test_reference_refuses_a_clique_outside_the_tree():
    domain = Domain(("a", "b", "c"), (2, 2, 2))
    tree = build_junction_tree(domain, [("a", "b"), ("b", "c")])
    with pytest.raises(ValueError, match="not covered"):
        belief_propagation(tree, [("a", "c")], [np.zeros((2, 2))], 1.0)


def check_engine_against_reference(domain, cliques, potentials, total, rng) -> TreeEngine:
    """`TreeEngine` beliefs and clique marginals (fresh and slot buffers), and `Model.marginals`
    of attribute subsets inside the nodes, against the reference beliefs."""
    tree = build_junction_tree(domain, cliques)
    reference = belief_propagation(tree, cliques, potentials, total)
    engine = TreeEngine(tree, cliques)
    for slot in (None, 0, 0):  # the slot's buffers are reused on the second call
        beliefs, clique_marginals = engine.calibrate_marginals(potentials, total, slot=slot)
        for got, want in zip(beliefs, reference):
            assert_close(got, want.values, total)
        for clique, got in zip(cliques, clique_marginals):
            assert_close(got, reference[tree.containing(clique)[0]].project(clique).values, total)
    subsets, wanted = [], []
    for node, belief in zip(tree.nodes, reference):
        for size in range(1, len(node) + 1):
            subset = tuple(str(a) for a in rng.permutation(rng.choice(node, size, replace=False)))
            subsets.append(subset)
            wanted.append(belief.project(subset).values)
    model = Model(domain, cliques, potentials, total)
    for got, want in zip(model.marginals(subsets), wanted):
        assert_close(got, want, total)
    return engine


@pytest.mark.parametrize("seed", range(16))
def test_engine_equals_reference_on_random_models(seed):
    rng = np.random.default_rng(100 + seed)
    domain, cliques, potentials, total = random_model(rng, (1, 6), int(rng.integers(2, 9)),
                                                      zeros=0.15 if seed % 4 == 0 else 0.0,
                                                      scale=(1.0, 3.0, 30.0, 300.0)[seed % 4])
    check_engine_against_reference(domain, cliques, potentials, total, rng)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_engine_equals_reference_on_special_shapes(shape):
    attrs, cliques = SHAPES[shape]
    rng = np.random.default_rng(200 + len(shape))
    model = random_model(rng, (2, 5), attrs, zeros=0.1, cliques=cliques)
    check_engine_against_reference(*model, rng)


@pytest.mark.parametrize("seed", range(3))
def test_engine_equals_reference_on_product_built_and_naturally_factored_nodes(seed):
    # A root of 1.5M cells, a large separator message and pairs around it: read out of its factors
    # without forcing; nodes of >= 2^14 cells built as products of exponentials and owing factors.
    rng = np.random.default_rng(300 + seed)
    domain = Domain(tuple("hxyzuvw"), (16, 8, 9, 10, 11, 12, 2))
    star = [("x", "y", "z", "u", "v"), ("x", "h"), ("y", "h"), ("z", "h"), ("u", "h"), ("v", "h"), ("v", "w")]
    potentials = [rng.normal(scale=2.0, size=domain.project(c).shape) for c in star]
    engine = check_engine_against_reference(domain, star, potentials, 5e4, rng)
    assert engine._factored and any(cells >= pgm.inference._PRODUCT_CELLS for cells in engine._cells)
    big = Domain(tuple("abcdef"), (12, 11, 10, 13, 3, 2))
    chain = [("a", "b", "c", "d"), ("c", "d", "e"), ("e", "f"), ("f",)]
    potentials = [rng.normal(scale=(1.0, 40.0, 400.0)[seed], size=big.project(c).shape) for c in chain]
    engine = check_engine_against_reference(big, chain, potentials, 1e6, rng)
    assert max(engine._cells) >= pgm.inference._PRODUCT_CELLS


@pytest.fixture
def every_node_factored(monkeypatch):
    """Every node with factors and targets read out of them (messages, read-outs, deferred roots)."""
    pgm.kernels.factored.choose_reading.cache_clear()
    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)
    monkeypatch.setattr(pgm.inference, "_FACTOR_CELLS", 0)
    monkeypatch.setattr(pgm.kernels.factored, "materialised_cost", lambda *args, **kwargs: math.inf)
    yield
    pgm.kernels.factored.choose_reading.cache_clear()


@pytest.mark.parametrize("seed", range(10))
def test_engine_with_every_node_factored_equals_reference(seed, every_node_factored):
    rng = np.random.default_rng(400 + seed)
    domain, cliques, potentials, total = random_model(rng, (1, 5), int(rng.integers(3, 8)),
                                                      zeros=0.15 if seed % 2 else 0.0,
                                                      scale=(1.0, 300.0)[seed % 2])
    engine = check_engine_against_reference(domain, cliques, potentials, total, rng)
    assert engine._factored or not cliques


@pytest.mark.parametrize("seed", range(6))
def test_engine_with_every_node_product_built_equals_reference(seed, monkeypatch):
    # Large-node paths on small trees: tables as products of exponentials, owed factors, roots
    # normalised at read-out (and their exact fallbacks when a bound is too loose).
    monkeypatch.setattr(pgm.inference, "_PRODUCT_CELLS", 0)
    monkeypatch.setattr(pgm.inference, "_FACTOR_CELLS", 1 << 60)
    rng = np.random.default_rng(500 + seed)
    model = random_model(rng, (1, 5), int(rng.integers(3, 8)), zeros=0.15 if seed % 2 else 0.0,
                         scale=(2.0, 500.0)[seed % 2])
    check_engine_against_reference(*model, rng)
