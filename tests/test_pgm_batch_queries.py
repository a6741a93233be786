"""Batched marginals (`Model.marginals`: in-node plans and `pgm.kernels.split_queries`) give the per-query
path's answers (and brute force's) to 1e-10."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from marginals.domain import Domain
from pgm.reference import brute_force_joint
from pgm.kernels.plans import MarginalPlan
from pgm.queries import MarginalOracle
from pgm.kernels.split_queries import split_marginals


def random_structure(rng, n_attrs, n_cliques, max_size=5, max_k=3):
    """A random domain (1..max_size levels per attribute) and up to ``n_cliques`` distinct cliques of 1..max_k attributes."""
    sizes = tuple(int(s) for s in rng.integers(1, max_size + 1, n_attrs))
    domain = Domain(tuple(f"a{i}" for i in range(n_attrs)), sizes)
    cliques = set()
    for _ in range(n_cliques):
        k = int(rng.integers(1, max_k + 1))
        cliques.add(domain.canonical(tuple(rng.choice(domain.attrs, size=k, replace=False))))
    return domain, sorted(cliques)


def random_structured_model(random_model, rng, n_attrs, n_cliques, zeros=False, **structure):
    """A random structure with N(0, 1.5^2) log-potentials (15% structural zeros with ``zeros``)."""
    domain, cliques = random_structure(rng, n_attrs, n_cliques, **structure)
    total = float(rng.uniform(100, 10_000))
    return random_model(domain, cliques, rng, total=total, scale=1.5, zeros=0.15 if zeros else 0.0)


def _per_query(model, attrs):
    """The per-query path alone, on a fresh oracle (no batch, no shared cache)."""
    oracle = MarginalOracle(model.tree, model.beliefs, model.total)
    return oracle.marginal(attrs)


@pytest.mark.parametrize("seed", range(40))
def test_batched_pairs_and_triples_equal_per_query_path_and_brute_force(seed, random_model):
    rng = np.random.default_rng(seed)
    model = random_structured_model(random_model, rng, int(rng.integers(4, 9)), int(rng.integers(2, 9)), zeros=seed % 4 == 0)
    dom = model.domain
    queries = list(itertools.combinations(dom.attrs, 2)) + list(itertools.combinations(dom.attrs, 3))
    batch = model.marginals(queries)
    joint = None
    if dom.size(dom.attrs) <= 200_000:
        joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], model.total)
    scale = model.total
    for q, table in zip(queries, batch):
        np.testing.assert_allclose(table, _per_query(model, q), rtol=1e-10, atol=1e-10 * scale)
        if joint is not None:
            axes = tuple(i for i, a in enumerate(dom.attrs) if a not in q)
            truth = joint.sum(axis=axes)
            order = [a for a in dom.attrs if a in q]
            truth = np.transpose(truth, [order.index(a) for a in q])
            np.testing.assert_allclose(table, truth, rtol=1e-9, atol=1e-10 * scale)


@pytest.mark.parametrize("seed", range(6))
def test_split_queries_serve_the_out_of_node_queries_on_a_wide_model(seed, random_model):
    rng = np.random.default_rng(100 + seed)
    model = random_structured_model(random_model, rng, 25, 30, max_size=6, max_k=2)
    dom = model.domain
    node_sets = [set(n) for n in model.tree.nodes]
    pairs = [frozenset(p) for p in itertools.combinations(dom.attrs, 2) if not any(set(p) <= n for n in node_sets)]
    comp = {a: model.tree.component(i) for i, n in enumerate(model.tree.nodes) for a in n}
    same_component = [p for p in pairs if len({comp[a] for a in p}) == 1]
    answers = split_marginals(MarginalOracle(model.tree, model.beliefs, model.total), same_component, 10**6)
    assert set(answers) == set(same_component)
    for q, (order, table) in answers.items():
        np.testing.assert_allclose(table, _per_query(model, order), rtol=1e-10, atol=1e-10 * model.total)




@pytest.mark.parametrize("seed", range(8))
def test_triples_with_no_two_attributes_in_one_node(seed, random_model):
    rng = np.random.default_rng(300 + seed)
    model = random_structured_model(random_model, rng, 12, 14, max_size=4, max_k=2)
    dom = model.domain
    node_sets = [set(n) for n in model.tree.nodes]
    comp = {a: model.tree.component(i) for i, n in enumerate(model.tree.nodes) for a in n}
    spread = [
        frozenset(t) for t in itertools.combinations(dom.attrs, 3)
        if len({comp[a] for a in t}) == 1 and not any(len(set(t) & n) >= 2 for n in node_sets)
    ]
    answers = split_marginals(MarginalOracle(model.tree, model.beliefs, model.total), spread, 10**6)
    assert set(answers) == set(spread)
    for q, (order, table) in answers.items():
        np.testing.assert_allclose(table, _per_query(model, order), rtol=1e-10, atol=1e-10 * model.total)


@pytest.mark.parametrize("seed", range(12))
def test_blas_contractions_give_the_einsum_answers(seed, random_model, monkeypatch):
    # Every contraction through pgm.kernels.contract (the path large models take): same answers as brute force.
    import pgm.kernels.contract

    monkeypatch.setattr(pgm.kernels.contract, "BLAS_CELLS", 0)
    rng = np.random.default_rng(500 + seed)
    model = random_structured_model(random_model, rng, int(rng.integers(5, 9)), int(rng.integers(3, 9)), zeros=seed % 3 == 0)
    dom = model.domain
    queries = list(itertools.combinations(dom.attrs, 2)) + list(itertools.combinations(dom.attrs, 3))
    joint = brute_force_joint(dom, model.cliques, [f.values for f in model.potentials.values()], model.total)
    for q, table in zip(queries, model.marginals(queries)):
        axes = tuple(i for i, a in enumerate(dom.attrs) if a not in q)
        order = [a for a in dom.attrs if a in q]
        truth = np.transpose(joint.sum(axis=axes), [order.index(a) for a in q])
        np.testing.assert_allclose(table, truth, rtol=1e-9, atol=1e-10 * model.total)
        np.testing.assert_allclose(table, _per_query(model, q), rtol=1e-10, atol=1e-10 * model.total)


@pytest.mark.parametrize("seed", range(6))
def test_models_on_one_tree_share_its_plans_but_not_their_answers(seed, random_model):
    # Homes, covers and cuts are memoised per tree shape (in-node read plans per node): the next model on the
    # same tree (as AIM's rounds that add no edge) reuses them and must still get its own answers.
    rng = np.random.default_rng(900 + seed)
    domain, cliques = random_structure(rng, 8, 9)
    queries = list(itertools.combinations(domain.attrs, 2)) + list(itertools.combinations(domain.attrs, 3))
    first = random_model(domain, cliques, rng, total=700.0, scale=1.5)
    second = random_model(domain, cliques, rng, total=300.0, scale=1.5)
    assert second.tree == first.tree
    for model in (first, second, first):
        joint = brute_force_joint(domain, model.cliques, [f.values for f in model.potentials.values()], model.total)
        for q, table in zip(queries, model.marginals(queries)):
            axes = tuple(i for i, a in enumerate(domain.attrs) if a not in q)
            np.testing.assert_allclose(table, joint.sum(axis=axes), rtol=1e-9, atol=1e-10 * model.total)


@pytest.mark.parametrize("seed", range(6))
def test_plans_carried_across_growing_trees_give_the_fresh_answers(seed, random_model, monkeypatch):
    """AIM-like rounds: each model adds a clique (its tree changes locally) and the read plans of the
    nodes it kept carry over; every answer equals, bit for bit, that of a run with no carried plan."""
    import pgm.queries as queries

    rng = np.random.default_rng(1300 + seed)
    domain, _ = random_structure(rng, 9, 1, max_size=4)
    pairs = list(itertools.combinations(domain.attrs, 2))
    cliques = [(a,) for a in domain.attrs]
    models = []
    for _ in range(7):  # the rounds' models: one more random pair each
        cliques = cliques + [pairs[int(rng.integers(len(pairs)))]]
        cliques = list(dict.fromkeys(cliques))
        models.append(random_model(domain, cliques, rng, total=500.0, scale=1.5))
    queries_asked = pairs + list(itertools.combinations(domain.attrs, 3))[::5]
    monkeypatch.setattr(queries, "_PLANS", {})
    built = []
    monkeypatch.setattr(queries, "MarginalPlan", lambda *args: built.append(args) or MarginalPlan(*args))
    asked = []
    read_plan = queries._read_plan
    monkeypatch.setattr(queries, "_read_plan", lambda *args: asked.append(args) or read_plan(*args))
    carried = [model.marginals(queries_asked) for model in models]  # one process: plans carried round to round
    assert len({m.tree.nodes for m in models}) > 1
    assert len(built) < len(asked)  # later trees reused read plans of nodes they kept
    for model, answers in zip(models, carried):
        monkeypatch.setattr(queries, "_PLANS", {})
        monkeypatch.setattr(queries, "_SHAPES", {})
        again = type(model)(domain, model.cliques, [f.values for f in model.potentials.values()], model.total,
                            beliefs=model.beliefs)
        joint = brute_force_joint(domain, model.cliques, [f.values for f in model.potentials.values()], model.total)
        for q, got, want in zip(queries_asked, answers, again.marginals(queries_asked)):
            assert got.shape == want.shape and np.array_equal(got, want), q
            axes = tuple(i for i, a in enumerate(domain.attrs) if a not in q)
            np.testing.assert_allclose(got, joint.sum(axis=axes), rtol=1e-9, atol=1e-10 * model.total)


def test_batched_marginals_still_reject_bad_subsets_after_good_ones(random_model):
    rng = np.random.default_rng(5)
    domain, cliques = random_structure(rng, 5, 4)
    model = random_model(domain, cliques, rng, total=100.0)
    model.marginals([("a0", "a1"), ("a2",)])  # validated once, then remembered
    with pytest.raises(ValueError, match="unknown"):
        model.marginals([("a0", "a1"), ("a0", "zz")])
    with pytest.raises(ValueError, match="repeated"):
        model.marginals([("a1", "a1")])
    assert model.marginals([["a1", "a0"]])[0].shape == (domain["a1"], domain["a0"])
