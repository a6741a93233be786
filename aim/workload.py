"""Workloads (weighted marginal queries the analyst cares about) and AIM's candidate set.

A workload is an ordered list of ``(clique, weight)``; cliques are stored in domain order so a
workload built from a set, a dict or a shuffled list always gives the same run. Candidates are
the downward closure of the workload cliques, each with weight w_r = sum_s c_s |r ∩ s|.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

from marginals.domain import Domain

Clique = tuple[str, ...]
Workload = list[tuple[Clique, float]]

#: largest workload weight accepted. Weights are relative (only their ratios matter); a larger
#: one is a mistake, and sums of such weights overflow in the candidate scores.
MAX_WEIGHT = 1e9


def _sort_key(domain: Domain, clique: Clique) -> tuple:
    return (len(clique), [domain.attrs.index(a) for a in clique])


def split_item(item) -> tuple[tuple, float]:
    """One workload entry as (clique, weight): ``(clique, weight)``, ``[clique, weight]`` or a bare clique (weight 1)."""
    if (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and isinstance(item[1], (int, float, np.integer, np.floating))
        and not isinstance(item[1], (bool, np.bool_))
    ):
        return (item[0] if isinstance(item[0], str) else tuple(item[0])), float(item[1])
    return item, 1.0


def workload_items(workload: Iterable) -> tuple[tuple[tuple[str, ...], float], ...]:
    """The domain-free checks of a workload: each entry as ``(clique tuple, weight)``, the clique
    a non-empty sequence of names (not a string), the weight in (0, MAX_WEIGHT]."""
    items = []
    for item in workload:
        clique, weight = split_item(item)
        if isinstance(clique, str):
            raise ValueError(f"a workload clique must be a sequence of attribute names, got the string {clique!r}")
        clique = tuple(clique)
        if not clique:
            raise ValueError("a workload clique must name at least one attribute")
        weight = float(weight)
        if not weight > 0:
            raise ValueError(f"workload weight of {clique} must be > 0, got {weight}")
        if not weight <= MAX_WEIGHT:
            raise ValueError(f"workload weight of {clique} must be a finite number <= {MAX_WEIGHT:g} "
                             f"(weights are relative), got {weight:g}")
        items.append((clique, weight))
    if not items:
        raise ValueError("the workload is empty")
    return tuple(items)


def normalize_workload(domain: Domain, workload: Iterable[tuple[Sequence[str], float] | Sequence[str]]) -> Workload:
    """Validate a workload; cliques in domain order, merged duplicates (weights add), deterministic order."""
    merged: dict[Clique, float] = {}
    for clique, weight in workload_items(workload):
        clique = domain.canonical(domain.check(clique))
        merged[clique] = merged.get(clique, 0.0) + weight
        if not merged[clique] <= MAX_WEIGHT:
            raise ValueError(f"workload weights of {clique} add up to {merged[clique]:g}, more than {MAX_WEIGHT:g}")
    return sorted(merged.items(), key=lambda cw: _sort_key(domain, cw[0]))


def all_k_way(domain: Domain, k: int = 2, max_cells: int = 10_000) -> Workload:
    """Every k-way marginal with at most ``max_cells`` cells, weight 1 (AIM's default workload is k = 2)."""
    if len(domain) < k:
        raise ValueError(f"a {k}-way workload needs at least {k} attributes; the domain has {len(domain)}")
    cliques = [c for c in itertools.combinations(domain.attrs, k) if domain.size(c) <= max_cells]
    if not cliques:
        raise ValueError(f"no {k}-way marginal of this domain has at most {max_cells} cells")
    return [(c, 1.0) for c in cliques]


def candidates(domain: Domain, workload: Workload) -> dict[Clique, float]:
    """Downward closure of the workload cliques with weights w_r = sum_s c_s |r ∩ s| (deterministic order)."""
    closure: set[Clique] = set()
    for clique, _ in workload:
        for k in range(1, len(clique) + 1):
            closure.update(itertools.combinations(clique, k))  # subsets keep domain order
    holding: dict[str, list[int]] = {}  # attribute -> workload entries containing it
    for j, (clique, _) in enumerate(workload):
        for a in clique:
            holding.setdefault(a, []).append(j)
    weights = {}
    for r in sorted(closure, key=lambda c: _sort_key(domain, c)):
        rs = set(r)
        # entries disjoint from r add exactly 0.0: summing only the others (same order) gives the same float
        touching = sorted(set().union(*(holding.get(a, ()) for a in r)))
        weights[r] = float(sum(workload[j][1] * len(rs & set(workload[j][0])) for j in touching))
    return weights
