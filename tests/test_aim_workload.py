"""Workloads and AIM's candidate set: normalisation, downward closure, weights, validation."""

from __future__ import annotations

import itertools
import numpy as np
import pandas as pd
import pytest

from aim import AIM, all_k_way, candidates, normalize_workload
from marginals import Dataset, Domain

DOM = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))

# the adult domain's attribute sizes (15 attributes)
ADULT_LIKE = Domain(
    tuple(f"v{i}" for i in range(15)),
    (85, 9, 100, 16, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2),
)


def test_candidates_downward_closure_and_weights_hand_example():
    workload = normalize_workload(DOM, [(("a", "b"), 1.0), (("b", "c"), 2.0)])
    cand = candidates(DOM, workload)
    # w_r = sum_s c_s |r & s|: the pairs also overlap the other workload clique in one attribute
    # (w_ab = 1 * 2 + 2 * 1 = 4, w_bc = 1 * 1 + 2 * 2 = 5)
    assert cand == {("a",): 1.0, ("b",): 3.0, ("c",): 2.0, ("a", "b"): 4.0, ("b", "c"): 5.0}
    assert ("a", "c") not in cand  # not a subset of any workload clique
    assert list(cand) == [("a",), ("b",), ("c",), ("a", "b"), ("b", "c")]  # by size, then domain order


def test_candidates_of_a_three_way_clique():
    workload = normalize_workload(DOM, [(("d", "a", "c"), 0.5), (("b",), 4.0)])
    cand = candidates(DOM, workload)
    assert cand == {
        ("a",): 0.5,
        ("b",): 4.0,
        ("c",): 0.5,
        ("d",): 0.5,
        ("a", "c"): 1.0,
        ("a", "d"): 1.0,
        ("c", "d"): 1.0,
        ("a", "c", "d"): 1.5,
    }
    assert [len(c) for c in cand] == sorted(len(c) for c in cand)


def test_all_pairs_weights_on_adult_like_domain():
    d = len(ADULT_LIKE)
    workload = normalize_workload(ADULT_LIKE, all_k_way(ADULT_LIKE, 2, max_cells=10**9))
    assert len(workload) == d * (d - 1) // 2 == 105
    cand = candidates(ADULT_LIKE, workload)
    assert len(cand) == 120
    for clique, w in cand.items():
        assert w == {1: d - 1, 2: 2 * (d - 1)}[len(clique)]


def test_all_k_way_max_cells_filter():
    pairs = all_k_way(ADULT_LIKE, 2, max_cells=5_000)
    assert all(w == 1.0 for _, w in pairs)
    kept = {c for c, _ in pairs}
    expected = {c for c in itertools.combinations(ADULT_LIKE.attrs, 2) if ADULT_LIKE.size(c) <= 5_000}
    assert kept == expected
    assert ("v0", "v1") in kept and ("v0", "v2") not in kept  # 765 cells kept, 8500 dropped
    assert 0 < len(kept) < 105
    assert len(all_k_way(ADULT_LIKE, 2, max_cells=10**9)) == 105
    assert {c for c, _ in all_k_way(DOM, 3, max_cells=24)} == {("a", "b", "c")}
    with pytest.raises(ValueError, match="at most 5 cells"):
        all_k_way(DOM, 2, max_cells=5)


def test_max_cells_boundary_is_inclusive():
    dom = Domain(("p", "q", "r"), (100, 100, 101))
    kept = {c for c, _ in all_k_way(dom, 2, max_cells=10_000)}
    assert kept == {("p", "q")}  # exactly 10,000 cells kept; 10,100 dropped


def test_aim_default_workload_uses_max_cells():
    dom = Domain(("p", "q", "r"), (3, 4, 50))
    rng = np.random.default_rng(0)
    data = Dataset(pd.DataFrame({a: rng.integers(0, m, 300) for a, m in zip(dom.attrs, dom.shape)}), dom)
    release = AIM(1.0, max_cells=100, max_iters=5, final_iters=5, insecure_seed=0).run(data)
    assert release.config["mechanism"]["workload"] == [[["p", "q"], 1.0]]
    release = AIM(1.0, max_iters=5, final_iters=5, insecure_seed=0).run(data)
    assert release.config["mechanism"]["workload"] == [[["p", "q"], 1.0], [["p", "r"], 1.0], [["q", "r"], 1.0]]


def test_normalize_workload_canonical_order_and_merging():
    workload = normalize_workload(
        DOM,
        [
            (("c", "a"), 1.0),
            ("d",),  # a bare clique: weight 1
            (("b", "d", "a"), 2),
            (("a", "c"), 2.5),  # the same clique as ("c", "a"): weights add
            ["b", "a"],
            (("d",), 0.25),
        ],
    )
    assert workload == [
        (("d",), 1.25),
        (("a", "b"), 1.0),
        (("a", "c"), 3.5),
        (("a", "b", "d"), 2.0),
    ]
    assert all(isinstance(w, float) for _, w in workload)


def test_normalize_workload_is_independent_of_input_order():
    items = [(("c", "a"), 1.0), (("b", "c"), 2.0), (("d", "b"), 3.0), (("a",), 0.5)]
    expected = normalize_workload(DOM, items)
    rng = np.random.default_rng(1)
    for _ in range(5):
        perm = [items[i] for i in rng.permutation(len(items))]
        assert normalize_workload(DOM, perm) == expected
    assert normalize_workload(DOM, set(items)) == expected
    assert normalize_workload(DOM, dict(items).items()) == expected


@pytest.mark.parametrize(
    "workload, match",
    [
        ([(("a", "z"), 1.0)], r"unknown attribute.*'z'"),
        ([], "empty"),
        ([(("a", "b"), 0.0)], r"weight of \('a', 'b'\) must be > 0"),
        ([(("a", "b"), -1.0)], "must be > 0"),
        ([(("a", "b"), float("nan"))], "must be > 0"),
        ([(("a", "b"), float("inf"))], r"must be a finite number <= 1e\+09 \(weights are relative\), got inf"),
        ([(("a", "b"), 1e300)], r"<= 1e\+09.*got 1e\+300"),
        ([(("a", "b"), 6e8), (("b", "a"), 6e8)], r"add up to 1.2e\+09"),
        ("ab", "string"),
        (["ab"], "string 'ab'"),
        ([("ab", 1.0)], "string 'ab'"),
        ([((), 1.0)], "at least one attribute"),
        ([(("a", "a"), 1.0)], "repeated attribute"),
    ],
)
def test_bad_workloads_raise_clear_errors(workload, match):
    with pytest.raises(ValueError, match=match):
        normalize_workload(DOM, workload)


def test_aim_rejects_bad_workload_before_spending():
    rng = np.random.default_rng(0)
    data = Dataset(pd.DataFrame({a: rng.integers(0, m, 100) for a, m in zip(DOM.attrs, DOM.shape)}), DOM)
    with pytest.raises(ValueError, match="unknown attribute"):
        AIM(1.0, workload=[(("a", "nope"), 1.0)]).run(data)
    with pytest.raises(ValueError, match="empty"):
        AIM(1.0, workload=[]).run(data)
