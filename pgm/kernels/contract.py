"""Two-table contractions as one batched matrix product (BLAS), for the large out-of-node queries.

``contract(a, a_labels, b, b_labels, out)`` computes ``einsum(a, a_labels, b, b_labels, out)``.
Labels only one table has and the output lacks are summed out of that table first; the rest fall
into four groups: batch (both tables and the output), inner (both tables, summed), and the
output labels of one table only (left from ``a``, right from ``b``). The larger table fixes the
order of the batch and inner labels (its memory order, so it is usually reshaped without a
copy); each table is then seen as a (batch, rows, columns) stack of matrices, copied only when
its memory order does not allow that view, and ``np.matmul`` multiplies the stacks. numpy's
einsum, even with ``optimize``, moves far more memory on the tables queries meet (|anchor| x
separator messages against node-sized conditionals).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .plans import sum_out
from .threads import einsum

#: contractions over a joint label space of more cells than this go through `contract` (smaller
#: ones are cheaper as one plain einsum call).
BLAS_CELLS = 1 << 18


def pair(a: np.ndarray, a_labels: Sequence, b: np.ndarray, b_labels: Sequence, out: Sequence) -> np.ndarray:
    """``np.einsum(a, a_labels, b, b_labels, out)`` for any hashable labels: by `contract` when the
    joint label space has more than `BLAS_CELLS` cells, by one plain einsum call otherwise."""
    sizes = dict(zip(a_labels, a.shape)) | dict(zip(b_labels, b.shape))
    if math.prod(sizes.values()) > BLAS_CELLS:
        return contract(a, a_labels, b, b_labels, out)
    index = {x: k for k, x in enumerate(sizes)}
    return einsum(a, [index[x] for x in a_labels], b, [index[x] for x in b_labels], [index[x] for x in out])


def contract(a: np.ndarray, a_labels: Sequence, b: np.ndarray, b_labels: Sequence, out: Sequence) -> np.ndarray:
    """``np.einsum(a, a_labels, b, b_labels, out)`` by one batched matmul (labels: any hashables, none repeated within a table)."""
    a, a_labels = _drop_private(a, list(a_labels), set(b_labels) | set(out))
    b, b_labels = _drop_private(b, list(b_labels), set(a_labels) | set(out))
    out = list(out)
    sizes = dict(zip(a_labels, a.shape)) | dict(zip(b_labels, b.shape))
    left = [x for x in _memory_labels(a, a_labels) if x not in b_labels]
    right = [x for x in _memory_labels(b, b_labels) if x not in a_labels]
    best = None
    for lead, lead_labels in ((a, a_labels), (b, b_labels)):  # the lead fixes the batch and inner order
        order = _memory_labels(lead, lead_labels)
        batch = [x for x in order if x in a_labels and x in b_labels and x in out]
        inner = [x for x in order if x in a_labels and x in b_labels and x not in out]
        a3 = _as_stack(a, a_labels, [batch, left, inner], sizes)
        b3 = _as_stack(b, b_labels, [batch, inner, right], sizes)
        copied = (a.size if a3 is None else 0) + (b.size if b3 is None else 0)
        if best is None or copied < best[0]:
            best = copied, batch, inner, a3, b3
    _, batch, inner, a3, b3 = best
    if a3 is None:
        a3 = _as_stack(a, a_labels, [batch, left, inner], sizes, copy=True)
    if b3 is None:
        b3 = _as_stack(b, b_labels, [batch, inner, right], sizes, copy=True)
    result = np.matmul(a3, b3).reshape([sizes[x] for x in batch + left + right])
    have = batch + left + right
    return result.transpose([have.index(x) for x in out])


def _drop_private(table: np.ndarray, labels: list, needed: set) -> tuple[np.ndarray, list]:
    """Sum out of ``table`` the labels nothing else needs."""
    summed = [i for i, x in enumerate(labels) if x not in needed]
    if not summed:
        return table, labels
    return sum_out(table, summed), [x for x in labels if x in needed]


def _memory_labels(table: np.ndarray, labels: list) -> list:
    """The labels from the largest stride to the smallest (ties: axis order)."""
    return [labels[i] for i in sorted(range(table.ndim), key=lambda i: (-abs(table.strides[i]), i))]


def _as_stack(table: np.ndarray, labels: list, groups: list[list], sizes: dict, copy: bool = False) -> np.ndarray | None:
    """``table`` as a (g0, g1, g2) stack of matrices without a copy (the last two may come
    transposed: matmul takes either memory order), None when no such view exists; ``copy``: a
    contiguous copy instead."""
    g0, g1, g2 = groups
    shape = [math.prod(sizes[x] for x in g) for g in groups]
    if copy:
        view = table.transpose([labels.index(x) for x in g0 + g1 + g2])
        return np.ascontiguousarray(view).reshape(shape)
    for rows, cols, swap in ((g1, g2, False), (g2, g1, True)):
        view = table.transpose([labels.index(x) for x in g0 + rows + cols])
        flat = _reshaped_view(view, [shape[0], shape[2], shape[1]] if swap else shape)
        if flat is not None:
            return flat.transpose(0, 2, 1) if swap else flat
    return None


def _reshaped_view(view: np.ndarray, shape: list[int]) -> np.ndarray | None:
    """``view`` reshaped without copying its data, None when that needs a copy."""
    try:
        return view.reshape(shape, copy=False)
    except ValueError:
        return None
    except TypeError:  # numpy < 2.1: no copy argument; a copy is a fresh allocation
        flat = view.reshape(shape)
        return flat if np.may_share_memory(flat, view) else None


def pair_many(a: np.ndarray, a_labels: Sequence, others: Sequence[tuple[np.ndarray, Sequence]], keep: Sequence) -> list[tuple[list, np.ndarray]]:
    """``np.einsum(a, a_labels, b, b_labels, out)`` for every ``(b, b_labels)`` of ``others`` as one batched
    matmul: each b holds the same labels S of ``a`` plus labels of its own; the output keeps the labels
    ``keep`` of S, a's other labels and b's own. Returns (labels, table) per b (views of one result)."""
    a_labels = list(a_labels)
    sizes = dict(zip(a_labels, a.shape))
    order = _memory_labels(a, a_labels)
    shared = [x for x in order if x in others[0][1]]
    batch = [x for x in shared if x in keep]
    inner = [x for x in shared if x not in keep]
    left = [x for x in order if x not in shared]
    a3 = _as_stack(a, a_labels, [batch, left, inner], sizes)
    if a3 is None:
        a3 = _as_stack(a, a_labels, [batch, left, inner], sizes, copy=True)
    rows, depth = a3.shape[0], a3.shape[2]
    stacks, rights = [], []
    for b, b_labels in others:
        b_labels = list(b_labels)
        right = [x for x in b_labels if x not in sizes]
        if len(right) + len(shared) != len(b_labels):
            raise ValueError(f"labels {b_labels} do not hold exactly the shared labels {shared} plus their own")
        view = b.transpose([b_labels.index(x) for x in batch + inner + right])
        stacks.append(view.reshape(rows, depth, -1))
        rights.append((right, list(view.shape[len(shared):])))
    result = np.matmul(a3, np.concatenate(stacks, axis=2))
    head = [sizes[x] for x in batch + left]
    out, start = [], 0
    for (right, shape), stack in zip(rights, stacks):
        width = stack.shape[2]
        out.append((batch + left + right, result[:, :, start:start + width].reshape(head + shape)))
        start += width
    return out
