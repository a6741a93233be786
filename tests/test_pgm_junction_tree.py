"""`pgm.junction_tree`: elimination order, triangulation, maximal cliques, the rooted forest and
its message orders, and the memoized model size."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

import pgm.junction_tree as jt
from marginals.domain import Domain
from pgm import build_junction_tree, greedy_order, maximal_cliques, model_size_mb, triangulate


def edge_set(graph: nx.Graph) -> set[frozenset[str]]:
    return {frozenset(e) for e in graph.edges}


def cycle(names: str) -> list[tuple[str, str]]:
    return [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))]


def random_cliques(rng: np.random.Generator, domain: Domain, k: int) -> list[tuple[str, ...]]:
    out = []
    for _ in range(k):
        size = int(rng.integers(1, 4))
        out.append(tuple(rng.choice(domain.attrs, size=size, replace=False)))
    return out


# --- elimination order ----------------------------------------------------------------------------


def test_greedy_order_hand_example_with_domain_order_ties():
    # Chain a - b - c with sizes 2, 3, 2: costs a = 6, b = 12, c = 6. a and c tie: a (domain order)
    # goes first; then b and c both cost 6: b goes first.
    dom = Domain(("a", "b", "c"), (2, 3, 2))
    assert greedy_order(dom, [("a", "b"), ("b", "c")]) == ["a", "b", "c"]
    # Chain x - y - z with sizes 3, 2, 2: costs x = 6, y = 12, z = 4 -> z; then x and y tie at 6 -> x.
    dom = Domain(("x", "y", "z"), (3, 2, 2))
    assert greedy_order(dom, [("x", "y"), ("z", "y")]) == ["z", "x", "y"]
    # The same cliques in another order and attribute order give the same answer.
    assert greedy_order(dom, [("y", "z"), ("y", "x")]) == ["z", "x", "y"]


def test_greedy_order_ties_follow_domain_order_not_names():
    # All costs equal on a 4-cycle: the first attribute *in domain order* goes first.
    dom = Domain(("d", "c", "b", "a"), (2, 2, 2, 2))
    order = greedy_order(dom, cycle("abcd"))
    assert order[0] == "d"
    assert sorted(order) == ["a", "b", "c", "d"]


def test_greedy_order_covers_isolated_attributes():
    dom = Domain(("a", "b", "c"), (5, 2, 3))
    order = greedy_order(dom, [("a", "b")])
    assert sorted(order) == ["a", "b", "c"]


# --- triangulation and maximal cliques -------------------------------------------------------------


def test_triangulation_of_a_four_cycle_adds_one_chord():
    dom = Domain(tuple("abcd"), (2, 2, 2, 2))
    tri = triangulate(dom, cycle("abcd"))
    # a goes first (all tie); its neighbours b and d get connected.
    assert edge_set(tri) == {frozenset(e) for e in cycle("abcd")} | {frozenset("bd")}
    assert nx.is_chordal(tri)
    assert maximal_cliques(dom, cycle("abcd")) == [("a", "b", "d"), ("b", "c", "d")]


def test_triangulation_of_a_five_cycle_adds_two_chords():
    dom = Domain(tuple("abcde"), (2, 2, 2, 2, 2))
    tri = triangulate(dom, cycle("abcde"))
    # Eliminate a (fill b-e), then b on the 4-cycle b-c-d-e (fill c-e), then the triangle c, d, e.
    assert edge_set(tri) == {frozenset(e) for e in cycle("abcde")} | {frozenset("be"), frozenset("ce")}
    assert nx.is_chordal(tri)
    assert maximal_cliques(dom, cycle("abcde")) == [("a", "b", "e"), ("b", "c", "e"), ("c", "d", "e")]


def test_triangulation_follows_a_given_order():
    dom = Domain(tuple("abcd"), (2, 2, 2, 2))
    tri = triangulate(dom, cycle("abcd"), order=["b", "a", "c", "d"])
    assert edge_set(tri) - {frozenset(e) for e in cycle("abcd")} == {frozenset("ac")}


def test_a_chordal_input_gets_no_fill():
    dom = Domain(tuple("abcde"), (3, 2, 4, 2, 3))
    cliques = [("a", "b", "c"), ("b", "c", "d"), ("d", "e")]
    tri = triangulate(dom, cliques)
    base = {frozenset(p) for c in cliques for p in itertools.combinations(c, 2)}
    assert edge_set(tri) == base
    assert maximal_cliques(dom, cliques) == [("a", "b", "c"), ("b", "c", "d"), ("d", "e")]


@pytest.mark.parametrize("seed", range(6))
def test_maximal_cliques_match_networkx_on_the_triangulated_graph(seed):
    rng = np.random.default_rng(seed)
    dom = Domain(tuple("abcdefgh"), tuple(int(s) for s in rng.integers(2, 5, 8)))
    cliques = random_cliques(rng, dom, 6)
    tri = triangulate(dom, cliques)
    assert nx.is_chordal(tri)
    expected = sorted((dom.canonical(c) for c in nx.find_cliques(tri)), key=lambda c: [dom.attrs.index(a) for a in c])
    assert maximal_cliques(dom, cliques) == expected
    for c in cliques:  # the triangulation keeps every interaction edge
        assert all(tri.has_edge(x, y) for x, y in itertools.combinations(c, 2))


def test_isolated_attributes_are_singleton_cliques():
    dom = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))
    assert maximal_cliques(dom, [("b", "a")]) == [("a", "b"), ("c",), ("d",)]


# --- the junction forest --------------------------------------------------------------------------


def check_forest(tree: jt.JunctionTree) -> None:
    n = len(tree.nodes)
    edges = [(c, p) for c, p in enumerate(tree.parent) if p is not None]
    assert len(edges) == n - len(tree.roots)
    assert all(tree.parent[r] is None for r in tree.roots)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    assert nx.is_forest(g)
    assert nx.number_connected_components(g) == len(tree.roots)
    # Running intersection: the nodes holding any attribute form a connected subtree.
    for a in tree.domain.attrs:
        holders = [i for i, node in enumerate(tree.nodes) if a in node]
        assert holders, a
        assert nx.is_connected(g.subgraph(holders)), (a, holders)
    # No edge with an empty separator (disconnected parts stay separate trees).
    for c, _ in edges:
        assert tree.separator(c)
    # Nodes are maximal and each in domain order.
    for i, j in itertools.permutations(range(n), 2):
        assert not set(tree.nodes[i]) <= set(tree.nodes[j])
    for node in tree.nodes:
        assert node == tree.domain.canonical(node)


def check_message_orders(tree: jt.JunctionTree) -> None:
    edges = {(c, p) for c, p in enumerate(tree.parent) if p is not None}
    assert len(tree.collect) == len(edges) and set(tree.collect) == edges
    assert len(tree.distribute) == len(edges) and {(c, p) for p, c in tree.distribute} == edges
    # Collect: a node sends to its parent only after all its children have sent to it.
    sent = set()
    for child, parent in tree.collect:
        assert all(c in sent for c, p in edges if p == child)
        sent.add(child)
    # Distribute: a node sends to its children only after it heard from its own parent.
    heard = set(tree.roots)
    for parent, child in tree.distribute:
        assert parent in heard
        heard.add(child)
    assert heard == set(range(len(tree.nodes)))


@pytest.mark.parametrize("seed", range(12))
def test_running_intersection_and_orders_on_random_clique_sets(seed):
    rng = np.random.default_rng(100 + seed)
    n_attrs = int(rng.integers(3, 10))
    dom = Domain(tuple(f"x{i}" for i in range(n_attrs)), tuple(int(s) for s in rng.integers(2, 5, n_attrs)))
    cliques = random_cliques(rng, dom, int(rng.integers(1, 9)))
    tree = build_junction_tree(dom, cliques)
    check_forest(tree)
    check_message_orders(tree)
    for c in cliques:
        assert tree.containing(c), c  # every input clique sits inside some node
    assert list(tree.nodes) == maximal_cliques(dom, cliques)
    assert sorted(tree.order) == sorted(dom.attrs)
    # Components of the tree = connected components of the interaction graph.
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    for c in cliques:
        g.add_edges_from(itertools.combinations(c, 2))
    assert len(tree.roots) == nx.number_connected_components(g)


def test_disconnected_parts_make_a_forest():
    dom = Domain(tuple("abcdef"), (2, 3, 2, 3, 2, 4))
    tree = build_junction_tree(dom, [("a", "b"), ("b", "c"), ("d", "e")])
    assert tree.nodes == (("a", "b"), ("b", "c"), ("d", "e"), ("f",))
    assert tree.roots == (0, 2, 3)
    assert tree.parent == (None, 0, None, None)
    assert tree.collect == ((1, 0),) and tree.distribute == ((0, 1),)
    assert tree.separator(1) == ("b",) and tree.separator(0) == ()
    assert tree.component(1) == 0 and tree.component(3) == 3
    assert tree.containing(["b"]) == [0, 1]
    check_forest(tree)


def test_tree_is_independent_of_clique_and_attribute_order():
    dom = Domain(tuple("abcdef"), (2, 3, 4, 2, 3, 2))
    cliques = [("a", "b"), ("b", "c", "d"), ("d", "e"), ("e", "a"), ("f", "c")]
    reordered = [tuple(reversed(c)) for c in reversed(cliques)]
    t1, t2 = build_junction_tree(dom, cliques), build_junction_tree(dom, reordered)
    assert t1 == t2


def test_tree_sizes():
    dom = Domain(("a", "b", "c"), (10, 20, 30))
    tree = build_junction_tree(dom, [("a", "b"), ("b", "c")])
    assert tree.size_cells == 200 + 600
    assert tree.size_mb == pytest.approx(800 * 8 / 2**20, rel=1e-15)


# --- model size ----------------------------------------------------------------------------------


def test_model_size_of_a_chain_by_hand():
    dom = Domain(("a", "b", "c"), (10, 20, 30))
    assert model_size_mb(dom, [("a", "b"), ("b", "c")]) == pytest.approx((200 + 600) * 8 / 2**20, rel=1e-15)


def test_model_size_of_a_four_cycle_by_hand():
    # Sizes a=2, b=3, c=4, d=5 on the cycle a-b-c-d-a. Costs: a 30, b 24, c 60, d 40 -> eliminate b
    # (clique {a,b,c} = 24 cells, fill a-c), leaving the triangle {a,c,d} = 40 cells.
    dom = Domain(tuple("abcd"), (2, 3, 4, 5))
    assert model_size_mb(dom, cycle("abcd")) == pytest.approx((24 + 40) * 8 / 2**20, rel=1e-15)
    # Adding a clique inside an existing maximal clique changes nothing; an isolated attribute
    # would still count its own cells.
    assert model_size_mb(dom, cycle("abcd") + [("a", "c")]) == model_size_mb(dom, cycle("abcd"))
    dom5 = Domain(tuple("abcde"), (2, 3, 4, 5, 7))
    assert model_size_mb(dom5, cycle("abcd")) == pytest.approx((24 + 40 + 7) * 8 / 2**20, rel=1e-15)


def test_model_size_is_memoized_and_order_free():
    dom = Domain(tuple("pqrs"), (3, 5, 7, 11))
    cliques = [("p", "q"), ("q", "r"), ("r", "s")]
    jt._size_cells.cache_clear()
    first = model_size_mb(dom, cliques)
    info = jt._size_cells.cache_info()
    assert (info.hits, info.misses) == (0, 1)
    again = model_size_mb(dom, [("s", "r"), ("q", "p"), ("r", "q")])  # other clique and attribute order
    info = jt._size_cells.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert again == first == pytest.approx((15 + 35 + 77) * 8 / 2**20, rel=1e-15)
    model_size_mb(dom, [("p", "s")])
    assert jt._size_cells.cache_info().misses == 2


def test_model_size_equals_the_built_tree():
    rng = np.random.default_rng(7)
    dom = Domain(tuple("abcdefg"), tuple(int(s) for s in rng.integers(2, 6, 7)))
    for _ in range(5):
        cliques = random_cliques(rng, dom, 5)
        assert model_size_mb(dom, cliques) == build_junction_tree(dom, cliques).size_mb


def test_unknown_attributes_raise():
    dom = Domain(("a", "b"), (2, 2))
    with pytest.raises(ValueError, match="unknown"):
        build_junction_tree(dom, [("a", "z")])
    with pytest.raises(ValueError, match="unknown"):
        model_size_mb(dom, [("z",)])
