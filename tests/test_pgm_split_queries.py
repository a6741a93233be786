"""`pgm.kernels.split_queries`: out-of-node marginals split at separators equal brute force and the
per-query path to 1e-10, on random models with big and small nodes, distant attributes, several
components, with and without memoised parts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from marginals.domain import Domain
from pgm.reference import brute_force_joint
from pgm.queries import MarginalOracle
from pgm.kernels.split_queries import split_marginals


def _model(random_model, rng, n_attrs, n_cliques, zeros):
    # small and large attributes (no single-level ones with structural zeros: all could be impossible)
    sizes = tuple(int(s) for s in rng.choice([2, 3, 5, 7] if zeros else [1, 2, 3, 5, 7], n_attrs))
    domain = Domain(tuple(f"v{i}" for i in range(n_attrs)), sizes)
    cliques = {domain.canonical(tuple(rng.choice(domain.attrs, size=int(rng.integers(1, 4)), replace=False)))
               for _ in range(n_cliques)}
    return random_model(domain, sorted(cliques), rng, total=float(rng.uniform(10, 1e4)), scale=1.5,
                        zeros=0.15 if zeros else 0.0)


def _truth(joint, dom, q):
    axes = tuple(i for i, a in enumerate(dom.attrs) if a not in q)
    return joint.sum(axis=axes)  # axes in domain order, as split_marginals answers


@pytest.mark.parametrize("budget", [0, 10**9])
@pytest.mark.parametrize("seed", range(25))
def test_split_answers_equal_brute_force_and_the_per_query_path(seed, budget, random_model):
    rng = np.random.default_rng(700 + seed)
    model = _model(random_model, rng, int(rng.integers(5, 10)), int(rng.integers(3, 12)), zeros=seed % 4 == 1)
    dom, tree = model.domain, model.tree
    oracle = MarginalOracle(tree, model.beliefs, model.total)
    comp = {a: tree.component(i) for i, n in enumerate(tree.nodes) for a in n}
    queries = [
        frozenset(q) for k in (2, 3, 4) for q in itertools.combinations(dom.attrs, k)
        if len({comp[a] for a in q}) == 1 and not tree.containing(q)
    ]
    answers = split_marginals(oracle, queries, budget)
    assert set(answers) == set(queries)
    joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], model.total)
    fresh = MarginalOracle(tree, model.beliefs, model.total)
    for q, (order, table) in answers.items():
        assert order == tuple(a for a in dom.attrs if a in q)
        np.testing.assert_allclose(table, _truth(joint, dom, q), rtol=1e-9, atol=1e-10 * model.total)
        np.testing.assert_allclose(table, fresh.marginal(order), rtol=1e-10, atol=1e-10 * model.total)


@pytest.mark.parametrize("seed", range(6))
def test_a_chain_of_large_nodes_answers_far_apart_pairs_and_triples(seed, random_model):
    # A chain a0 - a1 - ... with 3-attribute links: every pair/triple spans several nodes.
    rng = np.random.default_rng(800 + seed)
    n = 8
    dom = Domain(tuple(f"a{i}" for i in range(n)), tuple(int(s) for s in rng.integers(2, 5, n)))
    cliques = [(f"a{i}", f"a{i + 1}", f"a{i + 2}") for i in range(n - 2)]
    model = random_model(dom, cliques, rng, total=1000.0, scale=2.0)
    queries = list(itertools.combinations(dom.attrs, 2)) + list(itertools.combinations(dom.attrs, 3))
    joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], model.total)
    for q, table in zip(queries, model.marginals(queries)):
        axes = tuple(i for i, a in enumerate(dom.attrs) if a not in q)
        np.testing.assert_allclose(table, joint.sum(axis=axes), rtol=1e-9, atol=1e-10 * 1000)


def test_queries_over_several_components_are_left_to_the_per_query_path(random_model):
    rng = np.random.default_rng(5)
    dom = Domain(tuple("abcdef"), (2, 3, 4, 2, 3, 2))
    cliques = [("a", "b"), ("b", "c"), ("d", "e"), ("e", "f")]
    model = random_model(dom, cliques, rng, total=500.0)
    queries = [("a", "c"), ("a", "d"), ("a", "c", "f"), ("d", "f"), ("c", "d", "f")]
    joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], 500.0)
    for q, table in zip(queries, model.marginals(queries)):
        axes = tuple(i for i, a in enumerate(dom.attrs) if a not in q)
        np.testing.assert_allclose(table, joint.sum(axis=axes), rtol=1e-9, atol=1e-10 * 500)


def test_queries_sharing_a_lower_part_are_answered_by_one_batched_contraction(random_model, monkeypatch):
    # nodes (a, s) and (s, b, c, d): every query (a, x) or (a, s, x), x in {b, c, d}, is cut at s with the lower part (a, s)
    import pgm.kernels.contract

    rng = np.random.default_rng(9)
    dom = Domain(tuple("asbcd"), (3, 4, 2, 5, 3))
    model = random_model(dom, [("a", "s"), ("s", "b", "c", "d")], rng, total=300.0)
    calls = []
    original = pgm.kernels.contract.pair_many
    monkeypatch.setattr(pgm.kernels.contract, "pair_many", lambda *args: calls.append(len(args[2])) or original(*args))
    queries = [frozenset(q) for q in (("a", "b"), ("a", "c"), ("a", "d"), ("a", "s", "b"), ("a", "s", "c"))]
    answers = split_marginals(MarginalOracle(model.tree, model.beliefs, model.total), queries, 0)
    assert sorted(calls) == [2, 3]  # (a, s) below s with s summed out, and with s kept
    joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], 300.0)
    for q, (order, table) in answers.items():
        assert order == tuple(a for a in dom.attrs if a in q)
        np.testing.assert_allclose(table, _truth(joint, dom, q), rtol=1e-9, atol=1e-10 * 300)
