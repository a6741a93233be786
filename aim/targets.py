"""Target-aware AIM: a release that knows the regression it will serve (``AIM(..., targets=[...])``).

A regression of target t on features X needs X^T y (the (feature, t) 2-way marginals) and X^T X
(the feature-feature 2-way marginals). With ``targets`` an AIM run

1. measures, in its initialisation phase after the 1-way marginals, every (attribute, target)
   2-way marginal (`target_pairs`), sharing ``target_share`` of rho among them (`pair_sigmas`),
   through the same Gaussian count measurement and ledger as every other measurement.
   Sensitivity: adding or removing one row of an unweighted table changes exactly one cell of a
   count marginal, by 1, so its L2 sensitivity is 1 and a measurement at sigma costs
   rho = 1 / (2 sigma^2) (`marginals.maps.GaussianMap`); with a privacy unit of k rows
   (`marginals.units`) the sensitivity is k and every sigma k times larger (``sensitivity``).
   The default share is `default_share`,
   lowered to `needed_share` when less suffices;
2. runs its adaptive rounds on `target_workload` (unless the user gives a ``workload``, which the
   rounds then use: the two combine) with the rounds' scales planned on the rest of the budget,
   (1 - share) rho.

`target_workload`: every 2-way marginal with at most ``max_cells`` cells (as the default
workload) plus every target pair whatever its size; a pair holding a target weighs
``target_weight``, a feature-feature pair (a, b) weighs by the block of X^T X it fills,
(width(a) width(b))^width_power normalised to mean 1 over the feature pairs. The encoding is the
analyst's choice and not known here: width(a) = size(a) - 1 (the one-hot width, an upper bound
of the encoded dimension: a numeric encoding uses 1) is the proxy, taken from the public domain.
The defaults (TARGET_WEIGHT 1, WIDTH_POWER 0: equal weights) are what the pilot measured best
(benchmarks/results/target_workload/pilot.md); the feature pairs are then chosen by AIM's own
score, whose L1 error already grows with a block's cells.

Privacy: targets are public hyperparameters. The pairs, weights and `default_share` depend on
the domain and the configuration only; `needed_share` also on the noisy total of the 1-way
measurements already charged (post-processing). Nothing here reads a row.
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Iterable

import numpy as np

from marginals.domain import Domain
from marginals.maps import GaussianMap

from .workload import Clique, Workload

#: with ``target_share=None`` the target pairs get ``TARGET_BOOST`` times their fraction of all
#: attribute pairs, k / (d (d - 1) / 2) (2 / d for one target), at most ``MAX_TARGET_SHARE`` of rho
#: (`default_share`). Chosen by benchmarks/target_workload.py (pilot: fixed shares 0.1 to 0.5 were
#: best at 0.3 on acs-employment, 0.5 on acs-income-lin and adult; this rule gives 0.29, 0.5, 0.5).
TARGET_BOOST = 2.5
MAX_TARGET_SHARE = 0.5
#: with the default share, the target pairs get no more than they need for noise NOISE_PER_CELL
#: x the average count per cell of the largest one (`needed_share`): lowers the share only where
#: the pairs are small next to the rows and epsilon is large (acs-employment at eps 4, where the
#: default share lost AUC; the pilot's eps <= 1 cells and acs-income-lin at eps 4 keep theirs).
NOISE_PER_CELL = 0.1
#: the target pairs' budget is split in proportion to cells^ALLOC_POWER (`pair_sigmas`; 0 gives
#: every pair the same sigma). 0.5 minimises the summed squared noise over the pairs' cells for a
#: given budget; measured (5 trials, eps 0.1 / 0.5 / 1): acs-employment AUC 0.829 / 0.856 / 0.865
#: against 0.819 / 0.855 / 0.858 with 0 and 0.804 / 0.853 / 0.863 with 1.
ALLOC_POWER = 0.5
#: workload weight of a pair that holds a target, relative to the feature-feature pairs' mean
#: weight 1 (pilot: 4 lowered DD-SSP's AUC on acs-employment at eps 1; see `target_workload`).
TARGET_WEIGHT = 1.0
#: exponent of the feature-feature weights (width(a) width(b))^WIDTH_POWER; 0 (equal weights):
#: the pilot's 0.5 lowered the AUC on acs-employment at eps 1 (AIM's L1 scores already grow with
#: a marginal's cells).
WIDTH_POWER = 0.0


def check_targets(targets: Any) -> tuple[str, ...]:
    """The domain-free checks of ``targets``: a non-empty list of distinct attribute names."""
    if isinstance(targets, str):
        raise TypeError(f"targets must be a list of attribute names, got the string {targets!r} (use [{targets!r}])")
    if not isinstance(targets, (list, tuple)):  # ordered: the order of the measurements is the targets'
        raise TypeError(f"targets must be a list of attribute names, got {type(targets).__name__}")
    names = tuple(targets)
    if not names:
        raise ValueError("targets is empty: name at least one target attribute (or leave targets=None)")
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"targets must hold attribute names (non-empty strings), got {name!r}")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"targets names {duplicates} more than once")
    return names


def check_share(share: Any) -> float | None:
    """``target_share`` as a float in (0, 1), or None (`default_share`)."""
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, numbers.Real):
        raise TypeError(f"target_share must be a number, got {share!r}")
    if not 0 < share < 1:
        raise ValueError(f"target_share must lie in (0, 1), got {share}")
    return float(share)


def check_targets_in(domain: Domain, targets: tuple[str, ...]) -> tuple[str, ...]:
    """``targets`` checked against ``domain`` (public): every name an attribute, at least one feature left."""
    unknown = [t for t in targets if t not in domain.attrs]
    if unknown:
        raise ValueError(f"targets {unknown} are not attributes of the domain; attributes: {list(domain.attrs)}")
    if len(domain) < 2:
        raise ValueError("targets need at least one other attribute (a feature) in the domain")
    return targets


def target_pairs(domain: Domain, targets: Iterable[str]) -> list[Clique]:
    """Every (attribute, target) pair, each once, in domain order (targets first, then attributes)."""
    order = {a: i for i, a in enumerate(domain.attrs)}
    pairs: dict[Clique, None] = {}
    for t in targets:
        for a in domain.attrs:
            if a != t:
                pairs[tuple(sorted((a, t), key=order.__getitem__))] = None
    return list(pairs)


def default_share(n_target_pairs: int, n_attrs: int) -> float:
    """The share of rho the target pairs get with ``target_share=None``: TARGET_BOOST x their
    fraction of all attribute pairs, at most MAX_TARGET_SHARE (public: counts of the domain)."""
    return min(MAX_TARGET_SHARE, TARGET_BOOST * n_target_pairs / (n_attrs * (n_attrs - 1) / 2))


def _parts(domain: Domain, pairs: list[Clique], power: float | None) -> tuple[list[float], float]:
    """Each pair's weight cells^power (default ALLOC_POWER) in the split of the pairs' budget, and their sum."""
    power = ALLOC_POWER if power is None else power
    parts = [float(domain.size(c)) ** power for c in pairs]
    return parts, math.fsum(parts)


def pair_sigmas(domain: Domain, pairs: list[Clique], rho: float, share: float, power: float | None = None,
                sensitivity: float = 1.0) -> list[float]:
    """The noise scale of each target pair: ``share`` x ``rho`` split over the pairs in proportion
    to cells^power (default ALLOC_POWER; 0: equal shares), for counts of L2 ``sensitivity``."""
    parts, total = _parts(domain, pairs, power)
    return [GaussianMap(sensitivity).sigma(share * rho * part / total) for part in parts]


def noisy_total(measurements: list) -> float:
    """The number of rows estimated from the 1-way measurements: their noisy totals combined by
    inverse variance (post-processing of charged measurements)."""
    oneway = [m for m in measurements if len(m.clique) == 1]
    weights = [1.0 / (np.size(m.noisy_counts) * m.sigma**2) for m in oneway]
    return math.fsum(w * float(np.sum(m.noisy_counts)) for w, m in zip(weights, oneway)) / math.fsum(weights)


def needed_share(domain: Domain, pairs: list[Clique], rho: float, total: float, power: float | None = None,
                 sensitivity: float = 1.0) -> float:
    """The share of ``rho`` at which every target pair's noise sigma is at most NOISE_PER_CELL x its
    average count per cell, ``total`` / cells, under `pair_sigmas`' split (1.0 when ``total`` <= 0)."""
    if not total > 0:
        return 1.0
    parts, whole = _parts(domain, pairs, power)
    # sigma_i = Delta / sqrt(2 share rho part_i / whole) <= c total / cells_i
    #   <=>  share >= Delta^2 cells_i^2 whole / (2 rho part_i c^2 total^2)
    return max(sensitivity**2 * domain.size(c) ** 2 * whole / (2 * rho * part * (NOISE_PER_CELL * total) ** 2)
               for c, part in zip(pairs, parts))


def feature_width(domain: Domain, attr: str) -> int:
    """The proxy of an attribute's encoded width: its one-hot width size - 1 (at least 1)."""
    return max(1, domain.size((attr,)) - 1)


def target_workload(domain: Domain, targets: Iterable[str], max_cells: int = 10_000,
                    target_weight: float = TARGET_WEIGHT, width_power: float = WIDTH_POWER) -> Workload:
    """All 2-way marginals with <= ``max_cells`` cells and every target pair, weighted for a regression
    on ``targets`` (see the module docstring); cliques in domain order."""
    targets = check_targets_in(domain, check_targets(targets))
    pairs = set(target_pairs(domain, targets))
    features = [c for c in itertools.combinations(domain.attrs, 2) if c not in pairs and domain.size(c) <= max_cells]
    raw = {c: float(feature_width(domain, c[0]) * feature_width(domain, c[1])) ** width_power for c in features}
    scale = len(raw) / math.fsum(raw.values()) if raw else 1.0
    weights = {c: float(target_weight) for c in pairs}
    weights.update({c: w * scale for c, w in raw.items()})
    return [(c, weights[c]) for c in itertools.combinations(domain.attrs, 2) if c in weights]
