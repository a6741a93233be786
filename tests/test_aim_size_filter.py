"""`aim.size_filter`: the same sizes and the same allowed sets as the full re-triangulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from aim.size_filter import SizeFilter, filter_candidates
from marginals.domain import Domain
from pgm.junction_tree import _size_cells, build_junction_tree, model_size_mb


class _Stub:
    """The two attributes of a Model the filter reads: cliques and junction tree."""

    def __init__(self, domain, cliques):
        self.cliques = tuple(cliques)
        self.tree = build_junction_tree(domain, cliques)


def reference_filter(domain, model, cand_list, size_limit):
    """The filter as it was: a full greedy elimination of model + candidate for every candidate."""
    nodes = [set(n) for n in model.tree.nodes]
    base = list(model.cliques)
    return [r for r in cand_list if any(set(r) <= n for n in nodes) or model_size_mb(domain, base + [r]) <= size_limit]


def _random_case(rng, n_attrs, n_cliques, max_k=3):
    sizes = [int(s) for s in np.exp(rng.uniform(0, np.log(60), n_attrs)).round().clip(1, 60)]
    domain = Domain(tuple(f"v{i}" for i in range(n_attrs)), tuple(sizes))
    cliques = set()
    for _ in range(n_cliques):
        k = int(rng.integers(1, max_k + 1))
        cliques.add(domain.canonical(tuple(rng.choice(domain.attrs, size=k, replace=False))))
    cliques |= {(a,) for a in domain.attrs if not any(a in c for c in cliques)}
    return domain, sorted(cliques)


@pytest.mark.parametrize("seed", range(60))
def test_hypothetical_sizes_equal_full_elimination(seed):
    rng = np.random.default_rng(seed)
    domain, cliques = _random_case(rng, int(rng.integers(3, 16)), int(rng.integers(1, 25)))
    sf = SizeFilter(domain, cliques, build_junction_tree(domain, cliques).nodes)
    assert sf.size_cells == _size_cells(domain, frozenset(frozenset(c) for c in cliques))
    cands = list(itertools.combinations(domain.attrs, 2)) + list(itertools.combinations(domain.attrs, 3))[:80]
    for r in cands:
        want = _size_cells(domain, frozenset(frozenset(c) for c in cliques + [r]))
        assert sf.with_candidate(r) == want, (cliques, r)


@pytest.mark.parametrize("seed", range(40))
def test_allowed_sets_equal_reference_filter(seed):
    rng = np.random.default_rng(1000 + seed)
    domain, cliques = _random_case(rng, int(rng.integers(4, 25)), int(rng.integers(2, 40)))
    model = _Stub(domain, cliques)
    cands = list(itertools.combinations(domain.attrs, 2))
    if len(domain) <= 14:
        cands += list(itertools.combinations(domain.attrs, 3))
    current = model_size_mb(domain, cliques)
    for factor in [0.0, 0.5, 1.0, 1.05, 1.5, 3.0, 1e9]:
        limit = current * factor
        assert filter_candidates(domain, model, cands, limit) == reference_filter(domain, model, cands, limit)
    # limits exactly at a candidate's size (the comparison is <=) and just below it
    for r in cands[:: max(1, len(cands) // 5)]:
        size = model_size_mb(domain, cliques + [r])
        for limit in (size, math.nextafter(size, 0.0)):
            assert filter_candidates(domain, model, cands, limit) == reference_filter(domain, model, cands, limit)


def test_structural_cases():
    dom = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 60, 2))
    base = [("a", "b"), ("b", "c"), ("d",), ("e",)]
    sf = SizeFilter(dom, base, build_junction_tree(dom, base).nodes)
    assert sf.with_candidate(("a", "e")) == 6 + 12 + 60 + 4
    assert sf.with_candidate(("a", "c")) == 24 + 60 + 2  # closes a triangle: one abc node
    assert sf.with_candidate(("b", "c")) == sf.size_cells  # already an edge
    assert sf.inside_node(sf.mask(("b", "c"))) and not sf.inside_node(sf.mask(("a", "c")))


@pytest.mark.parametrize("seed", range(4))
def test_allowed_sets_equal_reference_filter_on_a_growing_wide_model(seed):
    """AIM-like: 30 attributes, the model grows by one random candidate per step (pairs and triples)."""
    rng = np.random.default_rng(50 + seed)
    n = 30
    sizes = [int(s) for s in np.exp(rng.uniform(np.log(2), np.log(120), n)).round()]
    domain = Domain(tuple(f"v{i:02d}" for i in range(n)), tuple(sizes))
    cands = list(itertools.combinations(domain.attrs, 2)) + [
        domain.canonical(tuple(rng.choice(domain.attrs, 3, replace=False))) for _ in range(60)
    ]
    cliques = [(a,) for a in domain.attrs]
    for step in range(30):
        model = _Stub(domain, cliques)
        sf = SizeFilter(domain, cliques, model.tree.nodes)
        want = {r: _size_cells(domain, frozenset(frozenset(c) for c in cliques + [r])) for r in cands[::7]}
        assert {r: sf.with_candidate(r) for r in cands[::7]} == want
        limit = model_size_mb(domain, cliques) * float(rng.uniform(1.0, 3.0))
        allowed = filter_candidates(domain, model, cands, limit)
        if step % 6 == 0:
            assert allowed == reference_filter(domain, model, cands, limit)
        cliques = cliques + [allowed[int(rng.integers(len(allowed)))]]


def test_candidate_cells_are_reused_only_for_the_same_graph_and_nodes():
    from aim.size_filter import candidate_cells

    dom = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 5, 6))
    cands = list(itertools.combinations(dom.attrs, 2)) + list(itertools.combinations(dom.attrs, 3))
    base = [("a", "b"), ("b", "c"), ("d",), ("e",)]
    nodes = build_junction_tree(dom, base).nodes
    cells = candidate_cells(dom, base, nodes, cands)
    # the same interaction graph from other cliques (a sub-clique added): the same answers, reused
    assert candidate_cells(dom, base + [("a",)], nodes, cands) is cells
    for r, got in zip(cands, cells):
        inside = any(set(r) <= set(n) for n in nodes)
        assert got == (None if inside else _size_cells(dom, frozenset(frozenset(c) for c in base + [r])))
    grown = base + [("c", "d")]
    other = candidate_cells(dom, grown, build_junction_tree(dom, grown).nodes, cands)
    assert other is not cells
    assert other[cands.index(("a", "e"))] == _size_cells(dom, frozenset(frozenset(c) for c in grown + [("a", "e")]))


def test_masks_memoised_per_domain_follow_each_domains_attribute_order():
    from aim.size_filter import candidate_cells

    # the same attribute names in another order (and sizes): the memoised bitmasks must not mix them up
    one = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))
    two = Domain(("d", "c", "b", "a"), (5, 4, 3, 2))
    base = [("a", "b"), ("c",), ("d",)]
    cands = [("a", "c"), ("b", "d"), ("c", "d"), ("a", "b")]
    for dom in (one, two, one):
        cliques = [dom.canonical(c) for c in base]
        nodes = build_junction_tree(dom, cliques).nodes
        got = candidate_cells(dom, cliques, nodes, [dom.canonical(r) for r in cands])
        for r, cells in zip(cands, got):
            r = dom.canonical(r)
            inside = any(set(r) <= set(n) for n in nodes)
            assert cells == (None if inside else _size_cells(dom, frozenset(frozenset(c) for c in cliques + [r])))


@pytest.mark.parametrize("seed", range(3))
def test_sizes_with_tied_keys_on_one_large_component(seed):
    """Sizes from {2, 3, 4} (many equal keys: ties go by attribute index) and one component holding
    most attributes, so candidates take the replay-and-diverge path."""
    rng = np.random.default_rng(900 + seed)
    n = 24
    domain = Domain(tuple(f"v{i:02d}" for i in range(n)), tuple(int(s) for s in rng.integers(2, 5, n)))
    chain = [(domain.attrs[i], domain.attrs[i + 1]) for i in range(n - 4)]  # one component of n - 3
    cliques = chain + [tuple(sorted(rng.choice(domain.attrs[: n - 3], 2, replace=False))) for _ in range(12)]
    cliques = sorted(set(cliques)) + [(a,) for a in domain.attrs[n - 3:]]
    sf = SizeFilter(domain, cliques, build_junction_tree(domain, cliques).nodes)
    assert 2 * max(m.bit_count() for m in sf.component) > n
    for r in itertools.combinations(domain.attrs, 2):
        assert sf.with_candidate(r) == _size_cells(domain, frozenset(frozenset(c) for c in cliques + [r])), r
