"""AIM's round schedule (`aim.mechanism`): each round's scales and cost, the last round, the annealing
test, the iteration caps, the candidates' L1 distances, and the ledger check. Arithmetic on public
numbers, except `_l1_distances`, which the selection applies to the true marginals inside the run."""

from __future__ import annotations

import math

import numpy as np

from marginals.maps import ExponentialMap, GaussianMap
from marginals.privacy import BUDGET_RTOL, Accountant, BudgetExceeded
from pgm.junction_tree import model_size_mb

MEASURE_SHARE = 0.9  # of each round's budget; the rest pays for the selection
EXPECTED_L1 = math.sqrt(2 / math.pi)  # E|N(0, 1)|


def check_ledger(ledger: Accountant) -> None:
    """BudgetExceeded unless the ledger's charges stay within its budget."""
    if not ledger.spent <= ledger.rho * (1 + BUDGET_RTOL):
        raise BudgetExceeded(f"privacy ledger exceeds the budget: spent {ledger.spent!r} of {ledger.rho!r}")


def round_scales(rho_round: float, sensitivity: float = 1.0) -> tuple[float, float]:
    """(sigma, eps_select) that spend ``rho_round`` split 90% measurement / 10% selection (sigma for
    counts of L2 ``sensitivity``: k rows per privacy unit)."""
    sigma = GaussianMap(sensitivity).sigma(MEASURE_SHARE * rho_round)
    eps = ExponentialMap().epsilon((1 - MEASURE_SHARE) * rho_round)
    return sigma, eps


def round_cost(sigma: float, eps: float, sensitivity: float = 1.0) -> float:
    """zCDP cost of one round: a Gaussian measurement plus one exponential-mechanism selection."""
    return GaussianMap(sensitivity).rho(sigma) + ExponentialMap().rho(eps)


def plan_round(remaining: float, sigma: float, eps: float, sensitivity: float = 1.0) -> tuple[float, float, bool]:
    """Scales for the next round; the last round (less than two rounds' budget left) spends the remainder."""
    if remaining < 2 * round_cost(sigma, eps, sensitivity):
        sigma, eps = round_scales(remaining, sensitivity)
        return sigma, eps, True
    return sigma, eps, False


def should_anneal(before: np.ndarray, after: np.ndarray, sigma: float) -> bool:
    """True when the measured marginal moved no more than the expected L1 norm of its noise."""
    return float(np.abs(after - before).sum()) <= EXPECTED_L1 * sigma * before.size


def _capped_iters(domain, cliques, most: int, least: int, work: float) -> int:
    """``most`` iterations, fewer when the model's cells x iterations would exceed ``work`` (never below ``least``)."""
    cells = model_size_mb(domain, cliques) * 2**20 / 8
    return int(min(most, max(least, work // max(cells, 1.0))))


def _l1_distances(truths: list[np.ndarray], estimates: list[np.ndarray], sizes: np.ndarray, chunk: int = 1 << 18) -> np.ndarray:
    """||truth - estimate||_1 per candidate: a few flat passes over groups of about ``chunk`` cells
    (not one numpy round trip per candidate, nor every candidate's cells in memory at once)."""
    out = np.empty(len(truths))
    ends = np.cumsum(sizes)
    start = 0
    while start < len(truths):
        stop = max(start + 1, int(np.searchsorted(ends, ends[start] - sizes[start] + chunk, side="right")))
        diff = np.empty(int(ends[stop - 1] - ends[start] + sizes[start]))
        pos = 0
        for e in estimates[start:stop]:  # one copy each, whatever the estimate's memory order
            diff[pos : pos + e.size].reshape(e.shape)[...] = e
            pos += e.size
        np.subtract(np.concatenate([t.ravel() for t in truths[start:stop]]), diff, out=diff)  # truths: counts (ints)
        np.abs(diff, out=diff)
        out[start:stop] = np.add.reduceat(diff, np.cumsum(sizes[start:stop]) - sizes[start:stop])
        start = stop
    return out
