"""marginals.lattice: exact discrete noise on a 2^-k lattice with the rounding folded into the sensitivity."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from marginals.lattice import (
    discrete_gaussian_tc,
    lattice_gaussian,
    lattice_laplace,
    lattice_sensitivity,
    lattice_step,
    snap,
    symmetric_lattice_gaussian,
    tc_variance,
)
from marginals.maps import LaplaceMap
from marginals.randomness import InsecureRandom


def rng(seed: int) -> InsecureRandom:
    return InsecureRandom(seed, warn=False)


def test_discrete_gaussian_tc_matches_its_exact_law_on_a_small_lattice():
    t, c = 3, 4  # variance 12
    draws = discrete_gaussian_tc(rng(1), t, c, 40_000)
    support = np.arange(-14, 15)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * t * c))
    full = np.exp(-(np.arange(-200, 201) ** 2) / (2 * t * c)).sum()
    expected = weights / full * draws.size
    observed = np.array([(draws == k).sum() for k in support], dtype=float)
    tail_expected = draws.size - expected.sum()
    tail_observed = draws.size - observed.sum()
    _, pvalue = chisquare(np.append(observed, tail_observed), np.append(expected, tail_expected))
    assert pvalue > 1e-4
    assert abs(draws.mean()) < 4 * math.sqrt(12 / draws.size)
    assert draws.var() == pytest.approx(12.0, rel=0.03)


@pytest.mark.parametrize("t, c", [(2**12, 2**12 + 5), (2**29, 2**29 - 3)])
def test_discrete_gaussian_tc_moments_at_large_scale(t, c):
    draws = discrete_gaussian_tc(rng(2), t, c, 20_000).astype(float)
    sd = math.sqrt(t * c)
    assert abs(draws.mean()) < 4 * sd / math.sqrt(draws.size)
    assert draws.std() == pytest.approx(sd, rel=0.03)
    assert np.mean(np.abs(draws) > 2 * sd) == pytest.approx(0.0455, abs=0.006)  # Gaussian tails


def test_tc_variance_rounds_up_by_little():
    for target in (Fraction(1), Fraction(10**6, 3), Fraction(2**58) + Fraction(1, 7)):
        t, c = tc_variance(target)
        assert t * c >= target and t * c - target < t == math.isqrt(math.floor(target)) + 1  # relative excess < 1/sqrt


def test_rounding_sensitivity_holds_and_is_attained_on_a_worst_case_pair():
    """f and f' differ by a tiny vector but straddle the rounding midpoint in every coordinate: their
    snapped vectors differ by 1 everywhere, so Delta / gamma + sqrt(d) is needed and suffices."""
    d, gamma = 16, 2.0**-4
    f = np.full(d, 0.49 * gamma)
    g = f + 0.02 * gamma
    delta = float(np.linalg.norm(g - f))
    diff = np.linalg.norm(snap(g, gamma) - snap(f, gamma))
    bound = float(lattice_sensitivity(delta, gamma, d))
    assert diff <= bound and diff > bound - delta / gamma - 1e-5  # the sqrt(d) slack is attained
    generator = np.random.default_rng(3)
    for _ in range(2000):  # random pairs at the bound: never exceeded
        f = generator.normal(size=d) * 3
        v = generator.normal(size=d)
        v *= generator.uniform(0, 0.5) / np.linalg.norm(v)
        assert np.linalg.norm(snap(f + v, gamma) - snap(f, gamma)) <= float(lattice_sensitivity(np.linalg.norm(v), gamma, d))


def test_lattice_gaussian_charge_values_and_determinism():
    values = np.linspace(-50.0, 50.0, 21)
    release = lattice_gaussian(rng(4), values, 3.0, 0.05)
    assert release.rho <= 0.05 and release.rho == pytest.approx(0.05, rel=2.0**-12)
    # the charge is the lattice mechanism's: Delta_L^2 / (2 t c), rounding included
    assert Fraction(release.rho) >= lattice_sensitivity(3.0, release.gamma, 21) ** 2 / (2 * release.t * release.c)
    assert math.log2(release.gamma).is_integer() and np.all(release.values / release.gamma == np.rint(release.values / release.gamma))
    assert release.sigma == pytest.approx(3.0 / math.sqrt(0.1), rel=2.0**-12)
    assert np.sqrt(21) * release.gamma <= 3.0 * 2.0**-16
    again = lattice_gaussian(rng(4), values, 3.0, 0.05)
    assert np.array_equal(release.values, again.values)  # seeded runs are deterministic
    assert not np.array_equal(release.values, lattice_gaussian(rng(5), values, 3.0, 0.05).values)
    noise = np.concatenate([lattice_gaussian(rng(s), values, 3.0, 0.05).values - values for s in range(100)])
    assert noise.std() == pytest.approx(release.sigma, rel=0.05)


def test_symmetric_release_and_step_limits():
    m = np.arange(16.0).reshape(4, 4)
    m = m + m.T
    release = symmetric_lattice_gaussian(rng(6), m, 1.0, 0.5)
    assert np.array_equal(release.values, release.values.T) and not np.allclose(release.values, m)
    # a tiny budget keeps the lattice standard deviation inside the sampler's range
    gamma = lattice_step(1.0, 10**6, 1e6)
    assert 1e6 / gamma <= 2.0**30
    with pytest.raises(ValueError, match="too large"):
        snap(np.array([1e300]), 2.0**-10)


def test_lattice_laplace_scale_and_loss():
    for eps in (0.1, 0.37, 1.0, 7.0):
        t = LaplaceMap(2**20).scale(eps)
        assert 2**20 / t <= eps and 2**20 / t == pytest.approx(eps, rel=1e-5)
    noisy, t = lattice_laplace(rng(7), np.array([3, 4]), 1.0, bits=3)
    assert t == 8 and noisy.dtype == np.int64
    draws = np.concatenate([lattice_laplace(rng(s), np.zeros(200, dtype=np.int64), 1.0, bits=3)[0] for s in range(50)])
    # P(y) ~ exp(-|y| / 8): P(0) = (1 - a) / (1 + a), a = exp(-1/8)
    a = math.exp(-1 / 8)
    assert np.mean(draws == 0) == pytest.approx((1 - a) / (1 + a), abs=0.01)
    assert draws.var() == pytest.approx(2 * a / (1 - a) ** 2, rel=0.06)
