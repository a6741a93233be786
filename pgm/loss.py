"""The squared-error loss of noisy marginals against a model's potential-clique marginals, and the
clique bookkeeping it needs: the maximal cliques of a fit, each measurement's home clique, and the
flat layout (every clique's table one after another) the descent works in.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

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
    """

    def __init__(self, domain: Domain, cliques: list[Clique], measurements: Sequence[Measurement], weight: str):
        if weight not in LOSS_WEIGHTS:
            raise ValueError(f"loss_weight must be one of {LOSS_WEIGHTS}, got {weight!r}")
        items = [self._item(domain, cliques, m, weight) for m in measurements]
        self.shapes = [domain.project(c).shape for c in cliques]
        sizes = [domain.size(c) for c in cliques]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)  # each clique's cells in the flat layout
        lip = np.zeros(len(cliques))
        for home, _, _, _, _, y, w in items:
            lip[home] += w * sizes[home] / y.size
        self.lipschitz = float(lip.max())
        # A measurement over its home's own table (no sum, no transpose) that no other measurement
        # shares: its residual is a slice of the flat marginals, all of them in one vector pass.
        count = np.bincount([item[0] for item in items], minlength=len(cliques))
        sole = [k for k, item in enumerate(items) if not item[1] and item[2] is None and count[item[0]] == 1]
        chosen = set(sole)
        self.items = [item for k, item in enumerate(items) if k not in chosen]
        homes = [items[k][0] for k in sole]
        self.sole_index = np.concatenate([np.arange(self.offsets[h], self.offsets[h + 1]) for h in homes] or [np.zeros(0, np.intp)])
        self.sole_y = np.concatenate([np.ravel(items[k][5]) for k in sole] or [np.zeros(0)]).astype(np.float64)
        self.sole_w = np.concatenate([np.full(sizes[h], items[k][6]) for k, h in zip(sole, homes)] or [np.zeros(0)])

    @staticmethod
    def _item(domain: Domain, cliques: list[Clique], m: Measurement, weight: str) -> tuple:
        """(home, axes summed, transposes, broadcast shape, counts, weight) of one measurement."""
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
        to_meas = [present.index(a) for a in mcl]  # axes after summing -> measurement order
        to_pot = [mcl.index(a) for a in present]  # measurement axes -> potential order
        if to_meas == sorted(to_meas):
            to_meas = to_pot = None  # same axis order: no transposes in the hot loop
        bshape = [domain[a] if a in mcl else 1 for a in pcl]
        w = 1.0 / m.sigma**2 if weight == "inverse_variance" else 1.0 / m.sigma
        return home, summed, to_meas, to_pot, bshape, m.noisy_counts, w

    def __call__(self, mu: Sequence[np.ndarray], mu_flat: np.ndarray | None = None) -> tuple[float, np.ndarray, list[np.ndarray]]:
        """(loss, its gradient in the flat layout, the same per clique as views); ``mu_flat``: the
        marginals concatenated in that layout (made here when not given)."""
        if mu_flat is None:
            mu_flat = flatten(mu)
        flat = np.zeros(int(self.offsets[-1]))
        grads = self.views(flat)
        resid = mu_flat[self.sole_index] - self.sole_y
        weighted = self.sole_w * resid
        loss = 0.5 * float(np.dot(weighted, resid))
        flat[self.sole_index] = weighted
        for home, summed, to_meas, to_pot, bshape, y, w in self.items:
            table = mu[home].sum(axis=summed) if summed else mu[home]
            resid = (table if to_meas is None else table.transpose(to_meas)) - y
            loss += 0.5 * w * float(np.vdot(resid, resid))
            resid *= w
            grads[home] += (resid if to_pot is None else resid.transpose(to_pot)).reshape(bshape)
        return loss, flat, grads

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each clique's table as a view of the flat layout."""
        offsets = self.offsets
        return [flat[offsets[k]:offsets[k + 1]].reshape(shape) for k, shape in enumerate(self.shapes)]


def flatten(tables: Sequence[np.ndarray]) -> np.ndarray:
    """The tables' cells one after another (each in C order): the flat layout of the descent."""
    return np.concatenate([np.ravel(t) for t in tables]) if tables else np.zeros(0)
