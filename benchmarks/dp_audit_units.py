"""The person-level audit of `benchmarks.dp_audit`: a count measurement on unit-level neighbours.

Privacy unit (`marginals.units`): the rows sharing one value of a unit column, at most k = `K`
of them kept. Neighbours are unit-level: D is `ROWS` rows of one attribute (4 levels) held by
`UNITS` units; D' adds one whole unit of `ADDED` rows (more than k), all in cell 0, the worst case
for a count (after bounding, k rows in one cell: L1 = L2 = k). Both go through the real path:
`marginals.units.bound_rows` (one keyed-hash key from the audit's source) then the counts, then
`marginals.mechanisms.measure_counts` priced for sensitivity k at the noise scale AIM derives for
it (`aim.mechanism.round_scales`'s formula, `GaussianMap(k).sigma(rho)`). As in the row-level
discrete Gaussian audit, the N runs are one measurement of the (N, 4) stacked table. T = the noisy
cell 0. Claim: cdp_eps(rho charged, delta).

Broken control: the sensitivity left at 1 while k = 4 (sigma = GaussianMap(1).sigma(rho), a
quarter of the honest one, claiming the same guarantee): the unit's k rows then move cell 0 by
4 noise-scales' worth of what the claim allows, and the audit must catch it.
"""

from __future__ import annotations

import numpy as np

from marginals import Accountant, cdp_eps, cdp_rho
from marginals.maps import GaussianMap
from marginals.mechanisms import measure_counts
from marginals.randomness import RandomSource
from marginals.units import bound_rows, unit_key

from benchmarks.dp_audit_stats import audit_samples

K = 4
ROWS, UNITS, ADDED = 400, 150, 7


def unit_neighbours(source: RandomSource) -> tuple[np.ndarray, np.ndarray]:
    """The bounded count vectors of D and D' (D plus one unit of `ADDED` rows in cell 0), bounded
    with one key from ``source``, as one run does (the guarantee holds for every key)."""
    rng = np.random.default_rng(0)  # the public test table, not the noise
    x, ids = rng.integers(0, 4, ROWS), rng.integers(0, UNITS, ROWS)
    tables = [(x, ids), (np.r_[x, np.zeros(ADDED, dtype=int)], np.r_[ids, np.full(ADDED, -1)])]
    key = unit_key(source)
    return tuple(np.bincount(v[bound_rows(u, K, key)], minlength=4) for v, u in tables)


def audit_person_level(runs: int, broken: bool, source: RandomSource, confidence: float,
                       epsilon: float = 1.0, delta: float = 1e-3) -> dict:
    """The person-level row: T = noisy cell 0 on unit-level neighbours (module docstring)."""
    counts, neighbour = unit_neighbours(source)
    rho = cdp_rho(epsilon, delta)
    sigma = GaussianMap(K).sigma(rho)
    ledger = Accountant(1.0)
    measure_counts(counts, ("x",), sigma, source, ledger, label="claim", sensitivity=K)  # the honest charge
    claim = cdp_eps(ledger.spent, delta)
    used = GaussianMap(1.0).sigma(rho) if broken else sigma  # broken: the sensitivity left at 1
    stats = []
    for table in (counts, neighbour):
        stacked = np.tile(table, (runs, 1))
        m = measure_counts(stacked, ("run", "x"), used, source, Accountant(1e9), label="audit", sensitivity=K)
        stats.append(m.noisy_counts[:, 0])
    result = audit_samples(stats[0], stats[1], delta, confidence)
    return {**result, "eps_claim": claim, "delta": delta,
            "params": {"k": K, "sigma": sigma, "sigma_used": used, "shift": float(neighbour[0] - counts[0])}}
