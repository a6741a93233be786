"""Privacy maps: closed forms, exactness, the float forms the charges were always computed in, and
that the accountant, the mechanisms and the lattice charge what the maps say."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from marginals import Accountant, InsecureRandom, measure_counts
from marginals.exact import noise_variance
from marginals.lattice import lattice_gaussian, lattice_sensitivity, symmetric_lattice_gaussian
from marginals.maps import ExponentialMap, GaussianMap, LaplaceMap
from marginals.mechanisms import COUNT_SENSITIVITY, exponential_mechanism


def _values(seed: int, low: float, high: float, size: int = 2000) -> list[float]:
    return list(10.0 ** np.random.default_rng(seed).uniform(low, high, size))


# --- closed forms ---------------------------------------------------------------------------------


def test_gaussian_closed_forms():
    assert GaussianMap(1.0).rho(10.0) == 0.005
    assert GaussianMap(2.0).rho(2.0) == 0.5
    assert GaussianMap(3.0).rho(1.5) == 2.0
    assert GaussianMap(1.0).sigma(0.5) == 1.0
    assert GaussianMap(2.0).sigma(2.0) == 1.0
    assert GaussianMap(0.0).rho(1.0) == 0.0
    for sensitivity in (0.25, 1.0, 7.0):
        for sigma in _values(1, -2, 4, 200):
            back = GaussianMap(sensitivity).sigma(GaussianMap(sensitivity).rho(sigma))
            assert back == pytest.approx(sigma, rel=1e-15)


def test_gaussian_exact_form_is_exact():
    assert GaussianMap(3).rho_exact(9) == Fraction(1, 2)
    assert GaussianMap(1.0).rho_exact(Fraction(7, 3)) == Fraction(3, 14)
    assert GaussianMap(Fraction(5, 2)).rho_exact(Fraction(1, 8)) == 25
    assert isinstance(GaussianMap(1.0).rho_exact(4), Fraction)
    for variance in (1, 2, 3, 10**12 + 1, Fraction(2**20 + 3, 2**7)):
        rho = GaussianMap(COUNT_SENSITIVITY).rho_exact(variance)
        assert rho == Fraction(1) / (2 * Fraction(variance))
        assert GaussianMap(COUNT_SENSITIVITY).variance_exact(rho) == variance
    # the float form agrees with the exact one up to rounding
    for sigma in _values(2, -2, 4, 200):
        exact = float(GaussianMap(1.5).rho_exact(Fraction(sigma) ** 2))
        assert GaussianMap(1.5).rho(sigma) == pytest.approx(exact, rel=4e-16)


def test_exponential_closed_forms():
    assert ExponentialMap().rho(2.0) == 0.5
    assert ExponentialMap().rho(0.1) == 0.1**2 / 8
    assert ExponentialMap().epsilon(0.5) == 2.0
    for eps in _values(3, -3, 1, 200):
        assert ExponentialMap().epsilon(ExponentialMap().rho(eps)) == pytest.approx(eps, rel=1e-15)


def test_laplace_scale_is_the_smallest_within_epsilon():
    assert LaplaceMap(2).scale(0.5) == 4 and LaplaceMap(2).epsilon(4) == Fraction(1, 2)
    assert LaplaceMap(2**20).scale(1.0) == 2**20
    for eps in (0.1, 0.37, 1.0, 7.0, 1 / 3):
        units = LaplaceMap(2**20)
        t = units.scale(eps)
        assert units.epsilon(t) <= Fraction(eps) < units.epsilon(t - 1)
    with pytest.raises(ValueError, match="sensitivity"):
        LaplaceMap(0)
    with pytest.raises(ValueError, match="sensitivity"):
        GaussianMap(math.inf)


# --- the floats every call site computed before the maps existed (charges are fingerprinted) -------


def test_float_forms_match_the_formulas_they_replaced():
    share = 0.9
    for rho in _values(4, -12, 3):
        assert GaussianMap(COUNT_SENSITIVITY).sigma(rho) == math.sqrt(1.0 / (2.0 * rho))  # spec inference
        assert GaussianMap().sigma(share * rho) == math.sqrt(1.0 / (2 * share * rho))  # AIM's round scales
        assert ExponentialMap().epsilon((1 - share) * rho) == math.sqrt(8 * (1 - share) * rho)
    for sigma, sensitivity in zip(_values(5, -3, 8), _values(6, -6, 6)):
        assert GaussianMap().rho(sigma) == 0.5 / sigma**2  # AIM's round cost
        assert GaussianMap(sensitivity).rho(sigma) == sensitivity**2 / (2.0 * sigma**2)  # PMT, the accountant


# --- the charges are the maps' values -------------------------------------------------------------


def test_accountant_charges_what_the_maps_say():
    acct = Accountant(100.0)
    assert acct.gaussian(3.0, 2.0) == GaussianMap(2.0).rho(3.0) == 2.0 / 9.0
    assert acct.exponential(0.7) == ExponentialMap().rho(0.7)
    assert [c.rho for c in acct.charges] == [GaussianMap(2.0).rho(3.0), ExponentialMap().rho(0.7)]


def test_mechanisms_charge_what_the_maps_say():
    acct = Accountant(100.0)
    counts = np.array([[3.0, 0.0], [5.0, 11.0]])
    m = measure_counts(counts, ("a", "b"), 2.7, InsecureRandom(3, warn=False), acct)
    variance = noise_variance(2.7)
    assert variance > Fraction(2.7) ** 2  # rounded up: the charge is for the variance used, not 2.7^2
    assert acct.charges[-1].rho == float(GaussianMap(1.0).rho_exact(variance)) != GaussianMap(1.0).rho(2.7)
    assert m.sigma == float(variance) ** 0.5
    measure_counts(counts, ("a", "b"), 2.7, InsecureRandom(3, warn=False), acct, exact=False)
    assert acct.charges[-1].rho == GaussianMap(1.0).rho(2.7)
    exponential_mechanism([0.0, 1.0, 2.0], 0.3, 1.0, InsecureRandom(4, warn=False), acct)
    assert acct.charges[-1].rho == ExponentialMap().rho(0.3)


@pytest.mark.parametrize("symmetric", [False, True])
def test_lattice_charge_is_the_exact_map_rounded_up(symmetric):
    values = np.arange(9.0).reshape(3, 3) / 7
    values = values + values.T
    release = (symmetric_lattice_gaussian if symmetric else lattice_gaussian)(
        InsecureRandom(5, warn=False), values, 0.8, 0.05)
    dim = 6 if symmetric else 9
    exact = GaussianMap(lattice_sensitivity(0.8, release.gamma, dim)).rho_exact(release.t * release.c)
    assert Fraction(release.rho) >= exact > Fraction(math.nextafter(release.rho, 0.0))  # the float just above
    assert exact <= Fraction(0.05)
    assert release.t * release.c >= GaussianMap(lattice_sensitivity(0.8, release.gamma, dim)).variance_exact(0.05)
