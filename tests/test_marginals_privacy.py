"""zCDP <-> (eps, delta) conversions and the privacy ledger."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from marginals import Accountant, BudgetExceeded, cdp_delta, cdp_eps, cdp_rho
from marginals.privacy import BUDGET_RTOL

EPS_GRID = [0.01, 0.05, 0.1, 0.3, 1.0, 2.0, 5.0, 10.0]
DELTA_GRID = [1e-12, 1e-9, 1e-6, 1e-5, 1e-3, 0.1]


# --- conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, delta, rho",
    [(1.0, 1e-9, 0.0149731), (1.0, 1e-5, 0.0305566), (0.05, 1e-5, 1.2105e-4), (2.0, 1e-5, 0.108256)],
)
def test_cdp_rho_reference_values(eps, delta, rho):
    assert abs(cdp_rho(eps, delta) - rho) / rho < 1e-5


def brute_force_delta(rho: float, eps: float) -> float:
    """min over a fine alpha grid of exp((a-1)(a rho - eps)) / (a-1) * (1-1/a)^a (CKS20), in logs."""
    alpha = 1.0 + np.logspace(-7, 6, 400_001)
    log_d = (alpha - 1) * (alpha * rho - eps) - np.log(alpha - 1) + alpha * np.log1p(-1.0 / alpha)
    return float(min(1.0, np.exp(log_d.min())))


@pytest.mark.parametrize("rho", [1e-4, 1e-3, 0.0149731, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0])
def test_cdp_delta_matches_brute_force(rho, eps):
    exact = cdp_delta(rho, eps)
    brute = brute_force_delta(rho, eps)
    assert exact <= brute * (1 + 1e-12)  # the exact minimum can only be lower than a grid minimum
    assert exact == pytest.approx(brute, rel=1e-6, abs=1e-300)


@pytest.mark.parametrize("delta", DELTA_GRID)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_round_trips(eps, delta):
    rho = cdp_rho(eps, delta)
    assert rho > 0
    assert cdp_delta(rho, eps) <= delta  # never above the target
    assert cdp_delta(rho, eps) == pytest.approx(delta, rel=1e-6)
    eps_back = cdp_eps(rho, delta)
    assert eps_back == pytest.approx(eps, rel=1e-9)
    assert cdp_delta(rho, eps_back) <= delta  # the reported eps holds


def test_monotonicity():
    for delta in DELTA_GRID:
        rhos = [cdp_rho(e, delta) for e in EPS_GRID]
        assert all(a < b for a, b in zip(rhos, rhos[1:]))  # more eps -> more rho
    for eps in EPS_GRID:
        rhos = [cdp_rho(eps, d) for d in DELTA_GRID]
        assert all(a < b for a, b in zip(rhos, rhos[1:]))  # more delta -> more rho
    rho_grid = [1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 5.0]
    for delta in DELTA_GRID:
        eps = [cdp_eps(r, delta) for r in rho_grid]
        # non-decreasing; strictly increasing once positive (a tiny rho with a large delta is eps = 0)
        assert all(a < b or a == b == 0.0 for a, b in zip(eps, eps[1:]))
        assert eps[-1] > 0
    deltas = [cdp_delta(0.1, e) for e in [0.0, 0.1, 0.5, 1.0, 2.0, 4.0]]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    deltas = [cdp_delta(r, 1.0) for r in rho_grid[2:]]  # (a smaller rho underflows to delta = 0)
    assert all(a < b for a, b in zip(deltas, deltas[1:]))


def test_tighter_than_classic_bound():
    # the classic conversion eps = rho + 2 sqrt(rho log(1/delta)) is always looser
    for rho in [1e-3, 0.01, 0.1, 1.0]:
        for delta in [1e-9, 1e-5]:
            assert cdp_eps(rho, delta) < rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_edge_values():
    assert cdp_delta(0.0, 1.0) == 0.0
    assert cdp_eps(0.0, 1e-5) == 0.0
    assert 0 < cdp_delta(1e-3, 0.0) <= 1.0
    assert cdp_eps(1e-5, 0.1) == 0.0  # delta(rho, 0) is already below 0.1


@pytest.mark.parametrize("rho, eps", [(30.0, 1.0), (50.0, 0.01), (1e4, 1.0), (27.6, 0.0)])
def test_cdp_delta_when_rho_far_exceeds_eps(rho, eps):
    # the minimiser is within 1e-12 of alpha = 1: the bound is (essentially) 1, never an error
    assert cdp_delta(rho, eps) == pytest.approx(brute_force_delta(rho, eps), rel=1e-6)
    assert cdp_delta(rho, eps) <= 1.0


@pytest.mark.parametrize("delta", [0.5, 0.9, 0.999])
def test_large_delta_round_trip(delta):
    for eps in (0.01, 1.0, 10.0):
        rho = cdp_rho(eps, delta)
        assert cdp_delta(rho, eps) <= delta
        assert cdp_eps(rho, delta) == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_cdp_rho_bad_eps(eps):
    with pytest.raises(ValueError, match=r"epsilon must be a finite number > 0, got"):
        cdp_rho(eps, 1e-5)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 1.5, math.nan])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\), got"):
        cdp_rho(1.0, delta)
    with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\), got"):
        cdp_eps(0.1, delta)


@pytest.mark.parametrize("rho", [-1e-3, math.inf, math.nan])
def test_bad_rho(rho):
    with pytest.raises(ValueError, match=r"rho must be a finite number >= 0, got"):
        cdp_eps(rho, 1e-5)
    with pytest.raises(ValueError, match=r"cdp_delta needs finite rho >= 0 and eps >= 0"):
        cdp_delta(rho, 1.0)


def test_cdp_delta_bad_eps():
    with pytest.raises(ValueError, match=r"cdp_delta needs finite rho >= 0 and eps >= 0, got rho=0.1, eps=-1.0"):
        cdp_delta(0.1, -1.0)


# --- accountant --------------------------------------------------------------------------------


def test_costs():
    acct = Accountant(1.0)
    assert acct.gaussian(sigma=2.0) == pytest.approx(1 / 8)
    assert acct.gaussian(sigma=4.0, sensitivity=3.0) == pytest.approx(9 / 32)
    assert acct.exponential(epsilon=0.4) == pytest.approx(0.02)
    assert acct.charge(0.1, label="raw") == 0.1
    assert acct.spent == pytest.approx(1 / 8 + 9 / 32 + 0.02 + 0.1)
    assert acct.remaining == pytest.approx(1 - acct.spent)
    kinds = [(c.mechanism, c.params) for c in acct.charges]
    assert kinds == [
        ("gaussian", {"sigma": 2.0, "sensitivity": 1.0}),
        ("gaussian", {"sigma": 4.0, "sensitivity": 3.0}),
        ("exponential", {"epsilon": 0.4}),
        ("raw", {}),
    ]


def test_refuses_overspend_and_records_nothing():
    acct = Accountant(0.1)
    acct.charge(0.06, label="first")
    with pytest.raises(BudgetExceeded, match=r"charge 'second' of rho=0.05 exceeds the remaining budget 0.04"):
        acct.charge(0.05, label="second")
    assert len(acct.charges) == 1 and acct.spent == 0.06
    with pytest.raises(BudgetExceeded):
        acct.gaussian(sigma=1.0)  # 0.5 > remaining
    with pytest.raises(BudgetExceeded):
        acct.exponential(epsilon=1.0)  # 0.125 > remaining
    assert len(acct.charges) == 1
    assert not acct.can_afford(0.0400001) and acct.can_afford(0.04)


def test_tolerance_is_relative_1e9():
    rho = 0.37
    over = Accountant(rho)
    with pytest.raises(BudgetExceeded):
        over.charge(rho * (1 + 3 * BUDGET_RTOL))
    assert over.charges == ()
    inside = Accountant(rho)
    inside.charge(rho * (1 + 0.5 * BUDGET_RTOL))  # floating-point slack is accepted
    assert inside.remaining == 0.0
    with pytest.raises(BudgetExceeded):
        inside.charge(rho * 1e-8)


def test_many_small_charges_land_exactly_on_budget():
    rho = cdp_rho(1.0, 1e-9)
    acct = Accountant(rho, delta=1e-9)
    sigma = math.sqrt(240 / (2 * rho))  # 240 equal Gaussian charges, each rho / 240
    for i in range(240):
        acct.gaussian(sigma, label=f"m{i}")
    assert len(acct.charges) == 240
    assert acct.spent == pytest.approx(rho, rel=1e-12)
    assert acct.remaining == pytest.approx(0.0, abs=1e-12 * rho)
    with pytest.raises(BudgetExceeded):
        acct.charge(rho * 1e-6)
    assert len(acct.charges) == 240
    assert acct.epsilon() == pytest.approx(1.0, rel=1e-6)


def test_bad_charges():
    acct = Accountant(1.0)
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="a charge must be a finite rho >= 0"):
            acct.charge(bad)
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
            acct.gaussian(bad)
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
            acct.exponential(bad)
    with pytest.raises(ValueError, match="sensitivity must be finite and >= 0"):
        acct.gaussian(1.0, sensitivity=-1.0)
    assert acct.charges == ()
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="the zCDP budget rho must be a finite number > 0"):
            Accountant(bad)


def test_from_epsilon_and_epsilon():
    acct = Accountant.from_epsilon(1.0, 1e-9)
    assert acct.rho == cdp_rho(1.0, 1e-9) and acct.delta == 1e-9
    assert acct.epsilon(spent=False) == pytest.approx(1.0, rel=1e-9)
    assert acct.epsilon() == 0.0
    acct.charge(acct.rho / 2)
    assert 0 < acct.epsilon() < 1.0
    assert acct.epsilon(delta=1e-5) < acct.epsilon()
    with pytest.raises(ValueError, match="pass delta"):
        Accountant(0.1).epsilon()


def test_summary_is_readable():
    acct = Accountant.from_epsilon(1.0, 1e-9)
    acct.gaussian(20.0, label="age")
    acct.gaussian(30.0, label="sex")
    acct.exponential(0.05, label="select")
    text = acct.summary()
    assert "3 charge(s)" in text
    assert "gaussian" in text and "exponential" in text
    assert "(eps, delta)" in text and "delta = 1e-09" in text
    assert f"{acct.epsilon():.6g}" in text and "budget eps = 1" in text
    assert f"{acct.spent:.6g}" in text and f"{acct.rho:.6g}" in text
    assert "(eps, delta)" not in Accountant(0.5).summary()  # no delta: no conversion line
    assert repr(acct).startswith("Accountant(rho=")


def test_to_dict_from_dict_round_trip():
    acct = Accountant.from_epsilon(2.0, 1e-6)
    acct.gaussian(5.0, sensitivity=1.0, label="m1")
    acct.exponential(0.3, label="select")
    acct.charge(1e-3, label="raw")
    d = json.loads(json.dumps(acct.to_dict()))  # JSON-ready
    back = Accountant.from_dict(d)
    assert back.rho == acct.rho and back.delta == acct.delta
    assert back.charges == acct.charges
    assert back.spent == acct.spent and back.summary() == acct.summary()


def test_from_dict_rechecks_budget():
    d = {"rho": 0.1, "delta": None, "charges": [{"label": "x", "mechanism": "raw", "rho": 0.2, "params": {}}]}
    with pytest.raises(BudgetExceeded):
        Accountant.from_dict(d)


# --- extreme inputs: correct values or clear errors ----------------------------------------------


def test_cdp_rho_with_a_tiny_delta_is_exact():
    rho = cdp_rho(1.0, 1e-300)  # the solver used to floor delta at 1e-300 and stop at a wrong rho
    assert cdp_delta(rho, 1.0) <= 1e-300
    assert cdp_delta(rho, 1.0) == pytest.approx(1e-300, rel=1e-9)
    assert brute_force_delta(rho, 1.0) == pytest.approx(1e-300, rel=1e-6)
    assert cdp_eps(rho, 1e-300) == pytest.approx(1.0, rel=1e-9)
    assert cdp_rho(1.0, 1e-300) < cdp_rho(1.0, 1e-200) < cdp_rho(1.0, 1e-9)


def test_cdp_eps_with_a_tiny_rho():
    # delta(rho, 0) ~ sqrt(2 rho) / sqrt(e) for rho -> 0 (optimal alpha ~ 1 / sqrt(2 rho))
    assert cdp_delta(1e-300, 0.0) == pytest.approx(math.sqrt(2e-300) * math.exp(-0.5), rel=1e-9)
    assert cdp_eps(1e-300, 1e-9) == 0.0  # used to raise RuntimeError (no convergence in 500 steps)
    eps = cdp_eps(1e-300, 1e-300)
    assert 0 < eps < 1e-140 and cdp_delta(1e-300, eps) <= 1e-300


@pytest.mark.parametrize("eps", [1e101, 1e308])
def test_cdp_rho_refuses_an_epsilon_too_large_to_convert(eps):
    with pytest.raises(ValueError, match="epsilon must be at most 1e\\+100"):  # was OverflowError
        cdp_rho(eps, 1e-9)
    assert math.isfinite(cdp_rho(1e100, 1e-9))
