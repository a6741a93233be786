"""The squared-error loss of noisy marginals against a model's potential-clique marginals, and the
clique bookkeeping it needs: the maximal cliques of a fit, each measurement's home clique, and the
flat layout (every clique's table one after another) the descent works in.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np
from scipy import sparse

from marginals.domain import Domain
from marginals.measurement import Measurement

from .junction_tree import Clique

LOSS_WEIGHTS = ("inverse_variance", "inverse_sigma")


def potential_cliques(domain: Domain, cliques: Sequence[Sequence[str]]) -> list[Clique]:
    """The maximal cliques among ``cliques``, each in domain order, in first-appearance order."""
    canon = list(dict.fromkeys(domain.canonical(cl) for cl in cliques))
    sets = [clique_set(c) for c in canon]
    holders: dict[str, list[int]] = {}  # attribute -> the cliques holding it (a superset holds them all)
    for j, c in enumerate(canon):
        for a in c:
            holders.setdefault(a, []).append(j)
    everything = range(len(canon))
    return [c for c, s in zip(canon, sets)
            if not any(s < sets[j] for j in (holders[c[0]] if c else everything))]


_SETS: dict[Clique, frozenset[str]] = {}  # cliques recur in every fit of a run


def clique_set(clique: Clique) -> frozenset[str]:
    """The attributes of ``clique`` as a frozenset (made once per clique)."""
    found = _SETS.get(clique)
    if found is None:
        if len(_SETS) >= 1 << 16:
            _SETS.clear()
        found = _SETS[clique] = frozenset(clique)
    return found


def smallest_containing(domain: Domain, cliques: Sequence[Clique], attrs: Sequence[str]) -> int:
    """Index of the clique with the fewest cells among ``cliques`` that contain ``attrs`` (ties: the
    first in domain order), so the choice never depends on the order of the list."""
    need = clique_set(tuple(attrs))
    holders = _holders(cliques)
    if need:
        fewest = min((holders.get(a, ()) for a in need), key=len)
        holding = [i for i in fewest if need <= clique_set(cliques[i])]
    else:
        holding = list(range(len(cliques)))
    return min(holding, key=lambda i: (domain.size(cliques[i]), domain.axes(cliques[i])))


_LAST_HOLDERS: tuple = ((), {})  # (cliques, attribute -> indices of the cliques holding it) of the last list asked


def _holders(cliques: Sequence[Clique]) -> dict[str, list[int]]:
    """Per attribute, the indices of the cliques holding it (kept for the last clique list: every
    measurement of a fit asks about the same list; one snapshot read, so threads never mix lists)."""
    global _LAST_HOLDERS
    key = tuple(cliques)
    last = _LAST_HOLDERS
    if last[0] == key:
        return last[1]
    found: dict[str, list[int]] = {}
    for i, c in enumerate(key):
        for a in c:
            found.setdefault(a, []).append(i)
    _LAST_HOLDERS = (key, found)
    return found


class Loss:
    """Squared-error loss of the measurements against the potential-clique marginals.

    Each measurement is read off one potential clique, its *home*: the smallest clique containing
    it. The loss is separable over the homes' tables, and on one table the Hessian
    sum_i w_i A_i^T A_i (A_i sums the table down to measurement i) has the constant table as a
    common top eigenvector with eigenvalue sum_i w_i |C| / |C_i|: so the Lipschitz constant of the
    gradient is the largest such sum. The smallest home makes it as small as one home per
    measurement allows and independent of the order of the measurements.

    The A_i stacked are one sparse 0/1 matrix A over the flat layout: a call is the residual
    r = A mu - y, the loss sum w r^2 / 2 and the gradient A^T (w r), two sparse products however
    many measurements there are.
    """

    def __init__(self, domain: Domain, cliques: list[Clique], measurements: Sequence[Measurement], weight: str):
        if weight not in LOSS_WEIGHTS:
            raise ValueError(f"loss_weight must be one of {LOSS_WEIGHTS}, got {weight!r}")
        items = [self._item(domain, cliques, m, weight) for m in measurements]
        self.shapes = [domain.project(c).shape for c in cliques]
        sizes = [domain.size(c) for c in cliques]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)  # each clique's cells in the flat layout
        lip = np.zeros(len(cliques))
        for home, _, _, y, w in items:
            lip[home] += w * sizes[home] / y.size
        self.lipschitz = float(lip.max())
        rows, cols, start = [np.zeros(0, np.intp)], [np.zeros(0, np.intp)], 0
        for home, summed, to_meas, y, _ in items:  # home cell -> the measurement cell it sums into
            rows.append(start + _cell_map(self.shapes[home], summed, to_meas, y.shape))
            cols.append(np.arange(self.offsets[home], self.offsets[home + 1]))
            start += y.size
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        ones, flat_cells = np.ones(rows.size), int(self.offsets[-1])
        self._sum = sparse.csr_matrix((ones, (rows, cols)), shape=(start, flat_cells))
        self._spread = self._sum.T  # a transposed view (CSC): its products need no second matrix
        self._y = np.concatenate([np.zeros(0)] + [np.ravel(y) for _, _, _, y, _ in items]).astype(np.float64)
        self._w = np.concatenate([np.zeros(0)] + [np.full(y.size, w) for _, _, _, y, w in items])

    @staticmethod
    def _item(domain: Domain, cliques: list[Clique], m: Measurement, weight: str) -> tuple:
        """(home, axes summed, axes after summing -> measurement order or None, counts, weight) of one measurement."""
        mcl = domain.check(m.clique)
        if m.noisy_counts.shape != domain.project(mcl).shape:
            raise ValueError(
                f"measurement over {mcl}: counts have shape {m.noisy_counts.shape}, "
                f"the domain says {domain.project(mcl).shape}"
            )
        home = smallest_containing(domain, cliques, mcl)
        pcl = cliques[home]
        summed = tuple(i for i, a in enumerate(pcl) if a not in mcl)
        present = [a for a in pcl if a in mcl]
        to_meas = [present.index(a) for a in mcl]
        w = 1.0 / m.sigma**2 if weight == "inverse_variance" else 1.0 / m.sigma
        return home, summed, None if to_meas == sorted(to_meas) else tuple(to_meas), m.noisy_counts, w

    def __call__(self, mu: Sequence[np.ndarray], mu_flat: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """(loss, its gradient in the flat layout; `views` gives it per clique); ``mu_flat``: the
        marginals concatenated in that layout (made here when not given)."""
        if mu_flat is None:
            mu_flat = flatten(mu)
        resid = self._sum @ mu_flat
        resid -= self._y
        weighted = self._w * resid
        loss = 0.5 * float(np.dot(weighted, resid))
        return loss, self._spread @ weighted

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each clique's table as a view of the flat layout."""
        offsets = self.offsets
        return [flat[offsets[k]:offsets[k + 1]].reshape(shape) for k, shape in enumerate(self.shapes)]


def flatten(tables: Sequence[np.ndarray]) -> np.ndarray:
    """The tables' cells one after another (each in C order): the flat layout of the descent."""
    return np.concatenate([t.ravel() for t in tables]) if tables else np.zeros(0)


#: cell maps of tables up to this many cells are kept (at most 256 of them: <= 64 MB)
CACHED_MAP_CELLS = 1 << 15


def _cell_map(shape: tuple[int, ...], summed: tuple[int, ...], to_meas: tuple[int, ...] | None,
              out_shape: tuple[int, ...]) -> np.ndarray:
    """For each cell of a table of ``shape`` (C order), the cell of the measurement it sums into:
    the ``summed`` axes dropped, the rest permuted by ``to_meas``, raveled in ``out_shape``
    (small tables' maps made once: every fit of an AIM run meets the same pairs; read-only)."""
    if math.prod(shape) <= CACHED_MAP_CELLS:
        return _kept_cell_map(shape, summed, to_meas, out_shape)
    return _make_cell_map(shape, summed, to_meas, out_shape)


@functools.lru_cache(maxsize=256)
def _kept_cell_map(shape, summed, to_meas, out_shape) -> np.ndarray:
    return _make_cell_map(shape, summed, to_meas, out_shape)


def _make_cell_map(shape, summed, to_meas, out_shape) -> np.ndarray:
    kept = [i for i in range(len(shape)) if i not in summed]
    if to_meas is not None:
        kept = [kept[j] for j in to_meas]
    grids = np.indices(shape, sparse=True)
    index = np.zeros(shape, dtype=np.intp)
    for axis, length in zip(kept, out_shape):
        index = index * length + grids[axis]
    index = index.ravel()
    index.flags.writeable = False
    return index
