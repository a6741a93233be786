"""`pgm.kernels.contract`: two-table contractions by batched matmul equal numpy's einsum (any memory order)."""

from __future__ import annotations

import numpy as np
import pytest

from pgm.kernels.contract import contract


@pytest.mark.parametrize("seed", range(200))
def test_contract_equals_einsum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    sizes = rng.integers(1, 5, n)
    a_labels = [x for x in range(n) if rng.random() < 0.6]
    b_labels = [x for x in range(n) if rng.random() < 0.6]
    rng.shuffle(a_labels)
    rng.shuffle(b_labels)
    out = [x for x in sorted(set(a_labels) | set(b_labels)) if rng.random() < 0.5]
    rng.shuffle(out)
    tables = []
    for labels in (a_labels, b_labels):
        table = rng.random([sizes[x] for x in labels])
        if table.ndim > 1 and rng.random() < 0.5:  # stored in another memory order (a transposed view)
            perm = rng.permutation(table.ndim)
            table = np.ascontiguousarray(table.transpose(perm)).transpose(np.argsort(perm))
        tables.append(table)
    want = np.einsum(tables[0], a_labels, tables[1], b_labels, out)
    got = contract(tables[0], a_labels, tables[1], b_labels, out)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_contract_with_string_labels_and_a_node_sized_conditional():
    rng = np.random.default_rng(1)
    message = rng.random((4, 3, 5, 2))  # anchor x, separator (s, t, u)
    node = np.ascontiguousarray(rng.random((2, 6, 5, 3)).transpose(1, 3, 2, 0))  # (h, s, t, u) stored as (u, h, t, s)
    got = contract(message, ["x", "s", "t", "u"], node, ["h", "s", "t", "u"], ["h", "x"])
    np.testing.assert_allclose(got, np.einsum("xstu,hstu->hx", message, node), rtol=1e-12)


@pytest.mark.parametrize("blas_cells", [0, 1 << 30])
def test_pair_dispatch_gives_einsums_answer_with_string_labels(blas_cells, monkeypatch):
    import pgm.kernels.contract

    monkeypatch.setattr(pgm.kernels.contract, "BLAS_CELLS", blas_cells)  # 0: every pair by matmul; huge: by einsum
    rng = np.random.default_rng(2)
    a, b = rng.random((3, 4, 2)), rng.random((2, 5, 4))
    got = pgm.kernels.contract.pair(a, ("age", "sex", "race"), b, ("race", "edu", "sex"), ("edu", "age"))
    np.testing.assert_allclose(got, np.einsum("asr,res->ea", a, b), rtol=1e-12)


def _stored_in_any_order(rng, table):
    if table.ndim > 1 and rng.random() < 0.5:  # a transposed view of another memory order
        perm = rng.permutation(table.ndim)
        table = np.ascontiguousarray(table.transpose(perm)).transpose(np.argsort(perm))
    return table


@pytest.mark.parametrize("seed", range(100))
def test_pair_many_equals_one_einsum_per_table(seed):
    from pgm.kernels.contract import pair_many

    rng = np.random.default_rng(5000 + seed)
    sizes = rng.integers(1, 5, 12)
    shared = [int(x) for x in rng.choice(6, int(rng.integers(0, 4)), replace=False)]  # labels 0-5: a's separator
    left = [int(x) for x in rng.choice(np.arange(6, 9), int(rng.integers(1, 3)), replace=False)]
    keep = [x for x in shared if rng.random() < 0.4]
    a_labels = list(rng.permutation(shared + left))
    a = _stored_in_any_order(rng, rng.random([sizes[x] for x in a_labels]))
    others = []
    for _ in range(int(rng.integers(1, 5))):
        own = [int(x) for x in rng.choice(np.arange(9, 12), int(rng.integers(1, 3)), replace=False)]
        b_labels = list(rng.permutation(shared + own))
        others.append((_stored_in_any_order(rng, rng.random([sizes[x] for x in b_labels])), b_labels))
    got = pair_many(a, a_labels, others, keep)
    for (b, b_labels), (labels, table) in zip(others, got):
        assert sorted(labels) == sorted(set(keep) | set(left) | (set(b_labels) - set(shared)))
        want = np.einsum(a, a_labels, b, b_labels, labels)
        np.testing.assert_allclose(table, want, rtol=1e-12, atol=1e-14)


def test_pair_many_refuses_tables_that_do_not_share_the_same_labels():
    from pgm.kernels.contract import pair_many

    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="shared labels"):
        pair_many(a, ["s", "x"], [(np.ones((2, 4)), ["s", "y"]), (np.ones((4,)), ["y"])], [])
