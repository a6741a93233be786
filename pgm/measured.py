"""The noise of measured marginals: which measurements hold an attribute set, a measurement summed
down to it, and the exact per-cell variance of the best linear unbiased estimate of its marginal.

Every measurement i is y_i = A_i x + e_i with x the full contingency table, A_i the marginalisation
onto its clique C_i and e_i ~ N(0, s_i^2 I) independent across cells and measurements. The
generalised least squares (GLS) estimate of the marginal x_S over an attribute set S, from all the
measurements together, has covariance M_S (sum_i A_i^T A_i / s_i^2)^+ M_S^T. Split each axis into
its constant part P = J/n and its contrasts Q = I - P: every A_i^T A_i is diagonal in the products
of P's and Q's, so the covariance is

    sum over U subset of S of (1 / lambda_U) (x)_{a in U} Q_a (x)_{a in S \\ U} P_a,
    lambda_U = sum over measurements with U inside C_i of  |S \\ C_i| / (|C_i \\ S| s_i^2)

(|X| the number of cells over X). It exists when some C_i holds S (else lambda_S = 0: the data
say nothing unbiased about the interaction of S). Every cell has the same variance
sum_U (1 / lambda_U) prod_{a in U} (1 - 1/n_a) prod_{a in S \\ U} 1/n_a; one measurement of S gives
s^2, one of C containing S gives s^2 |C| / |S|, and the lower-order measurements (the 1-way ones)
reduce it. Pure arithmetic on public measurements: no rows.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from marginals.domain import Domain
from marginals.measurement import Measurement


def marginalise(values: np.ndarray, clique: Sequence[str], target: Sequence[str]) -> np.ndarray:
    """Sum ``values`` (axes in ``clique`` order) down to ``target`` (axes in ``target`` order)."""
    summed = tuple(i for i, a in enumerate(clique) if a not in target)
    kept = [a for a in clique if a in target]
    out = values.sum(axis=summed) if summed else values
    return np.transpose(out, [kept.index(a) for a in target])


def covering_measurements(measurements: Sequence[Measurement], domain: Domain, clique: Sequence[str]) -> list[tuple[int, float]]:
    """(index, per-cell noise variance after marginalising to ``clique``) of every measurement containing it."""
    out = []
    for i, m in enumerate(measurements):
        if set(clique) <= set(m.clique):
            rest = [a for a in m.clique if a not in clique]
            out.append((i, m.sigma**2 * float(np.prod([domain[a] for a in rest]))))
    return out


def is_measured(measurements: Sequence[Measurement], attrs: Sequence[str]) -> bool:
    """Whether some measurement's clique holds every attribute of ``attrs``."""
    return any(set(attrs) <= set(m.clique) for m in measurements)


def component_precisions(measurements: Sequence[Measurement], domain: Domain, attrs: Sequence[str]) -> dict[frozenset, float]:
    """lambda_U for every subset U of ``attrs`` (see the module docstring): the GLS precision of the
    marginal's component whose contrasts run over U."""
    attrs = domain.check(attrs)
    out = {frozenset(u): 0.0 for k in range(len(attrs) + 1) for u in itertools.combinations(attrs, k)}
    for m in measurements:
        inside = frozenset(a for a in m.clique if a in attrs)
        outside = math.prod(domain[a] for a in m.clique if a not in attrs)
        missing = math.prod(domain[a] for a in attrs if a not in inside)
        weight = missing / (outside * m.sigma**2)
        for u in out:
            if u <= inside:
                out[u] += weight
    return out


def gls_variance(measurements: Sequence[Measurement], domain: Domain, attrs: Sequence[str]) -> tuple[float, float]:
    """(per-cell variance of the GLS estimate of the marginal over ``attrs``, its covariance with the
    GLS total); ValueError when no measurement holds ``attrs`` (no unbiased estimate exists)."""
    attrs = domain.check(attrs)
    if not attrs:
        raise ValueError("attrs must name at least one attribute")
    if not is_measured(measurements, attrs):
        raise ValueError(f"no measurement holds {list(attrs)}: their marginal has no unbiased estimate")
    precisions = component_precisions(measurements, domain, attrs)
    variance = 0.0
    for u, lam in precisions.items():
        share = math.prod((1 - 1 / domain[a]) if a in u else 1 / domain[a] for a in attrs)
        variance += share / lam
    return variance, 1.0 / precisions[frozenset()]
