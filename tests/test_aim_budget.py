"""AIM's privacy budget: round scales, the last-round rule, annealing, and the ledger of whole runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from aim import AIM, plan_round, round_cost, round_scales, should_anneal
from marginals import Accountant, Dataset, Domain, InsecureRandom, cdp_rho
from marginals.mechanisms import exponential_mechanism, measure_counts
from marginals.datasets import demo_dataset

RTOL = 1e-9


# --- round_scales / round_cost / plan_round -------------------------------------------------------


@pytest.mark.parametrize("rho_round", [1e-9, 3.7e-5, 0.01, 1.0, 250.0])
def test_round_scales_split_90_10(rho_round):
    sigma, eps = round_scales(rho_round)
    assert 0.5 / sigma**2 == pytest.approx(0.9 * rho_round, rel=1e-12)
    assert eps**2 / 8 == pytest.approx(0.1 * rho_round, rel=1e-12)
    assert round_cost(sigma, eps) == pytest.approx(rho_round, rel=1e-12)


@pytest.mark.parametrize("sigma,eps", [(2.0, 4.0), (10.0, 0.1), (66.06, 0.01009)])
def test_round_cost_is_what_the_ledger_charges_for_the_round_mechanisms(sigma, eps):
    """The planner's cost of a round equals the accountant's charges when the round's measurement and
    selection actually run (a different route: marginals.mechanisms and the ledger, not aim)."""
    ledger, source = Accountant(100.0), InsecureRandom(0, warn=False)
    measure_counts(np.array([5, 3, 9]), ("x",), sigma, source, ledger)
    exponential_mechanism(np.zeros(4), eps, 1.0, source, ledger)
    # the measurement rounds its variance up (relative change < 2^-20): it charges a hair less
    assert round_cost(sigma, eps) * (1 - 2**-19) <= ledger.spent <= round_cost(sigma, eps) * (1 + 1e-12)


@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-9), (1.0, 1e-5), (10.0, 1e-9)])
def test_a_run_spends_the_rho_of_an_independent_conversion(epsilon, delta, zcdp_rho):
    """The ledger's total against rho from (epsilon, delta) by bisection on the CKS20 formula
    (tests/conftest.py), not by marginals.cdp_rho."""
    release = AIM(epsilon, delta, max_iters=5, final_iters=5, insecure_seed=5).run(demo_dataset(n=1000))
    rho = zcdp_rho(epsilon, delta)
    assert release.ledger.rho == pytest.approx(rho, rel=1e-9)
    spent = math.fsum(c.rho for c in release.ledger.charges)
    assert rho * (1 - 2**-19) <= spent <= rho * (1 + 1e-9)


def test_initial_scales_match_the_paper():
    rho, T = cdp_rho(1.0, 1e-5), 240
    sigma, eps = round_scales(rho / T)
    assert sigma == pytest.approx(math.sqrt(T / (2 * 0.9 * rho)), rel=1e-12)
    assert eps == pytest.approx(math.sqrt(8 * 0.1 * rho / T), rel=1e-12)
    # the reference report's adult example (d = 15, T = 240, eps = 1, delta = 1e-5)
    assert sigma == pytest.approx(66.06, abs=0.01)
    assert eps == pytest.approx(0.01009, abs=1e-5)


@pytest.mark.parametrize("factor", [2.0, 2.0001, 3.0, 100.0])
def test_plan_round_unchanged_with_two_rounds_left(factor):
    sigma, eps = round_scales(0.003)
    remaining = factor * round_cost(sigma, eps)
    assert plan_round(remaining, sigma, eps) == (sigma, eps, False)


@pytest.mark.parametrize("factor", [1.9999, 1.5, 1.0, 0.3, 1e-6])
def test_plan_round_last_round_spends_exactly_the_remainder(factor):
    sigma, eps = round_scales(0.003)
    remaining = factor * round_cost(sigma, eps)
    new_sigma, new_eps, last = plan_round(remaining, sigma, eps)
    assert last is True
    assert round_cost(new_sigma, new_eps) == pytest.approx(remaining, rel=1e-12)
    assert 0.5 / new_sigma**2 == pytest.approx(0.9 * remaining, rel=1e-12)
    assert new_eps**2 / 8 == pytest.approx(0.1 * remaining, rel=1e-12)
    if factor < 1:
        assert new_sigma > sigma and new_eps < eps
    elif factor > 1:
        assert new_sigma < sigma and new_eps > eps


# --- should_anneal --------------------------------------------------------------------------------


def test_should_anneal_threshold_is_expected_noise_l1():
    sigma = 3.0
    before = np.full((2, 5), 40.0)  # 10 cells
    threshold = math.sqrt(2 / math.pi) * sigma * before.size  # 23.94
    small = before.copy()
    small[0, 0] += 0.95 * threshold  # all of the movement in one cell: L1 counts it once
    assert should_anneal(before, small, sigma) is True
    spread = before - 0.099 * threshold  # L1 = 10 * 0.099 * threshold < threshold
    assert should_anneal(before, spread, sigma) is True
    big = before.copy()
    big[1, 4] -= 1.05 * threshold
    assert should_anneal(before, big, sigma) is False
    assert should_anneal(before, before, sigma) is True
    # the threshold grows with sigma and with the number of cells
    assert should_anneal(before, big, 1.1 * sigma) is True
    assert should_anneal(before[:1], before[:1] + 0.9 * threshold / 5, sigma) is False


# --- whole runs ----------------------------------------------------------------------------------


def _small_table(rng, d, shape, n):
    attrs = tuple(f"x{i}" for i in range(d))
    domain = Domain(attrs, tuple(int(m) for m in shape))
    df = pd.DataFrame({a: rng.integers(0, m, n) for a, m in zip(attrs, domain.shape)})
    return Dataset(df, domain)


def check_accounting(release, rho: float, T: int):
    """Every property of the ledger and the round log that AIM's budget rules imply."""
    ledger, log, domain, charges = release.ledger, release.rounds, release.domain, release.ledger.charges
    d = len(domain)
    # never over, and the last round spends exactly the remainder
    assert ledger.rho == rho
    assert ledger.spent <= rho * (1 + RTOL)
    # measurements round their variance up to a rational (relative change < 2^-20): a hair below rho
    assert ledger.spent >= rho * (1 - 2**-19)
    assert math.fsum(c.rho for c in charges) == pytest.approx(ledger.spent, rel=1e-12)
    for c in charges:
        assert c.mechanism in ("discrete_gaussian", "exponential"), c
        if c.mechanism == "discrete_gaussian":
            assert c.params["sensitivity"] == 1.0
            assert c.rho == pytest.approx(0.5 / c.params["sigma"] ** 2, rel=1e-12)
        else:
            assert c.rho == pytest.approx(c.params["epsilon"] ** 2 / 8, rel=1e-12)
    gauss = [c for c in charges if c.mechanism == "discrete_gaussian"]
    expo = [c for c in charges if c.mechanism == "exponential"]
    assert len(gauss) == len(release.measurements)
    assert [c.params["sigma"] for c in gauss] == [m.sigma for m in release.measurements]
    assert len(expo) == len(log) >= 1

    # initialisation: every 1-way marginal, in domain order, at sigma_0 = sqrt(T / (2 * 0.9 * rho))
    sigma0, eps0 = math.sqrt(T / (2 * 0.9 * rho)), math.sqrt(8 * 0.1 * rho / T)
    assert [m.clique for m in release.measurements[:d]] == [(a,) for a in domain.attrs]
    for c in charges[:d]:
        assert c.mechanism == "discrete_gaussian"
        assert sigma0 <= c.params["sigma"] <= sigma0 * (1 + 2**-20)  # variance rounded up, never down
    # then per round: one selection (eps_select of the log), one measurement (sigma of the log)
    assert len(charges) == d + 2 * len(log)
    for i, entry in enumerate(log):
        sel, meas = charges[d + 2 * i], charges[d + 2 * i + 1]
        assert sel.mechanism == "exponential" and sel.params["epsilon"] == entry["eps_select"]
        assert meas.mechanism == "discrete_gaussian"
        assert entry["sigma"] <= meas.params["sigma"] <= entry["sigma"] * (1 + 2**-20)
        assert tuple(entry["clique"]) == release.measurements[d + i].clique
        assert entry["round"] == i + 1
    # the rho_used column is the running total of the ledger
    spent_after_init = math.fsum(c.rho for c in charges[:d])
    spent_before = [spent_after_init] + [e["rho_used"] for e in log[:-1]]
    for i, entry in enumerate(log):
        assert entry["rho_used"] == pytest.approx(math.fsum(c.rho for c in charges[: d + 2 * i + 2]), rel=1e-12)
    assert log[-1]["rho_used"] == ledger.spent

    # scales: unchanged, halved/doubled after an annealing round, or the remainder in the last round
    planned = (sigma0, eps0)
    for i, entry in enumerate(log):
        remaining = rho - spent_before[i]
        if i == len(log) - 1:
            assert remaining < 2 * round_cost(*planned) * (1 + 1e-12)
            s, e = round_scales(remaining)
            assert entry["sigma"] == pytest.approx(s, rel=1e-12)
            assert entry["eps_select"] == pytest.approx(e, rel=1e-12)
        else:
            assert remaining >= 2 * round_cost(*planned) * (1 - 1e-12)
            assert entry["sigma"] == pytest.approx(planned[0], rel=1e-12)
            assert entry["eps_select"] == pytest.approx(planned[1], rel=1e-12)
        sigma, eps = entry["sigma"], entry["eps_select"]
        planned = (sigma / 2, eps * 2) if entry["annealed"] else (sigma, eps)


def _random_config(rng):
    d = int(rng.integers(2, 6))
    shape = rng.integers(2, 7, size=d)
    data = _small_table(rng, d, shape, int(rng.integers(50, 501)))
    attrs = data.domain.attrs
    pool = [c for k in (1, 2, 3) for c in itertools.combinations(attrs, k)]
    chosen = [c for c in pool if rng.random() < 0.4] or [pool[int(rng.integers(len(pool)))]]
    workload = [(c, float(rng.uniform(0.1, 5.0))) for c in chosen]
    kwargs = dict(
        epsilon=float(10 ** rng.uniform(-2, 1)),
        delta=float(rng.choice([1e-9, 1e-5])),
        workload=workload,
        max_model_size=float(10 ** rng.uniform(-4, 1)),
        max_iters=int(rng.integers(5, 21)),
        tol=float(rng.choice([1e-2, 1e-3])),
        final_iters=int(rng.integers(5, 21)),
        rounds=None if rng.random() < 0.3 else int(rng.integers(d + 1, 4 * d + 1)),
        insecure_seed=int(rng.integers(2**31)),
    )
    return data, kwargs


@pytest.mark.slow
def test_ledger_never_exceeds_and_exhausts_rho_over_random_configurations():
    rng = np.random.default_rng(20240611)
    n_configs, saw_last_round_rule, saw_anneal = 200, 0, 0
    for k in range(n_configs):
        data, kwargs = _random_config(rng)
        release = AIM(**kwargs).run(data)
        rho = cdp_rho(kwargs["epsilon"], kwargs["delta"])
        T = kwargs["rounds"] if kwargs["rounds"] is not None else 16 * len(data.domain)
        try:
            check_accounting(release, rho, T)
        except AssertionError as err:
            raise AssertionError(f"configuration {k}: {kwargs} on {data.domain}") from err
        saw_anneal += any(e["annealed"] for e in release.rounds[:-1])
        saw_last_round_rule += len(release.rounds) > 1
    # the sample exercised both rules (otherwise the checks above would be vacuous)
    assert saw_anneal > 20 and saw_last_round_rule > 100


def test_initial_scales_and_one_way_init_default_rounds():
    data = demo_dataset(n=1000)
    d = len(data.domain)
    workload = [(("age", "education"), 1.0), (("hours", "income"), 2.0)]  # covers 4 of the 8 attributes
    release = AIM(1.0, 1e-9, workload=workload, max_iters=10, final_iters=10, insecure_seed=3).run(data)
    rho, T = cdp_rho(1.0, 1e-9), 16 * d
    first = release.rounds[0]
    assert first["sigma"] == pytest.approx(math.sqrt(T / (2 * 0.9 * rho)), rel=1e-12)
    assert first["eps_select"] == pytest.approx(math.sqrt(8 * 0.1 * rho / T), rel=1e-12)
    # every 1-way marginal is measured first, the ones outside the workload too
    assert [m.clique for m in release.measurements[:d]] == [(a,) for a in data.domain.attrs]
    init = release.ledger.charges[:d]
    assert all(c.mechanism == "discrete_gaussian" and c.params["sigma"] == pytest.approx(first["sigma"], rel=1e-6) for c in init)
    assert math.fsum(c.rho for c in init) == pytest.approx(0.9 * d * rho / T, rel=1e-6)  # 0.9/16 of rho
    check_accounting(release, rho, T)


def test_explicit_rounds_set_the_initial_scale_and_must_exceed_d():
    data = demo_dataset(n=1000)
    d = len(data.domain)
    release = AIM(2.0, 1e-5, rounds=d + 3, max_iters=5, final_iters=5, insecure_seed=1).run(data)
    rho = cdp_rho(2.0, 1e-5)
    assert release.measurements[0].sigma == pytest.approx(math.sqrt((d + 3) / (2 * 0.9 * rho)), rel=1e-6)
    check_accounting(release, rho, d + 3)
    with pytest.raises(ValueError, match="rounds"):
        AIM(2.0, 1e-5, rounds=d, insecure_seed=1).run(data)


def test_annealing_halves_sigma_and_doubles_eps_in_the_next_round():
    # high noise: the chosen marginals barely move, so rounds anneal before the budget ends
    data = demo_dataset(n=2000)
    release = AIM(0.3, 1e-9, max_iters=10, final_iters=10, insecure_seed=11).run(data)
    log = release.rounds
    checked = 0
    for prev, nxt in zip(log[:-2], log[1:-1]):  # pairs where the next round is not the last one
        if prev["annealed"]:
            assert nxt["sigma"] == prev["sigma"] / 2
            assert nxt["eps_select"] == prev["eps_select"] * 2
            checked += 1
        else:
            assert nxt["sigma"] == prev["sigma"] and nxt["eps_select"] == prev["eps_select"]
    assert checked >= 1
    check_accounting(release, cdp_rho(0.3, 1e-9), 16 * len(data.domain))
