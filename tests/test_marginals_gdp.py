"""mu-GDP <-> (eps, delta): the exact conversion of Dong, Roth & Su, its inverses and composition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from marginals import cdp_eps, gdp_compose, gdp_delta, gdp_eps, gdp_mu


def test_reference_values():
    assert gdp_delta(1.0, 4.377) == pytest.approx(1e-5, rel=0.01)
    assert gdp_mu(math.log(3), 1e-5) == pytest.approx(0.2920, abs=1e-4)
    assert gdp_mu(1.0, 1e-5) == pytest.approx(0.2681, abs=1e-4)
    assert gdp_mu(2.0, 1e-5) == pytest.approx(0.502, abs=1e-3)
    assert gdp_mu(4.0, 1e-5) == pytest.approx(0.925, abs=1e-3)
    for mu, eps in ((0.5, 1.99), (1, 4.38), (2, 10.0), (3, 16.7), (10, 91.8), (20, 284)):
        assert gdp_eps(mu, 1e-5) == pytest.approx(eps, rel=3e-3)


def test_delta_formula_and_monotonicity():
    for mu in (0.1, 0.7, 3.0):
        for eps in (0.0, 0.5, 2.0):
            direct = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
            assert gdp_delta(mu, eps) == pytest.approx(direct, rel=1e-9, abs=1e-300)
    deltas = [gdp_delta(0.5, e) for e in np.linspace(0, 5, 20)]
    assert np.all(np.diff(deltas) < 0)
    assert gdp_delta(0.0, 1.0) == 0.0


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 1.0, 2.0])
def test_round_trips_hold_exactly_toward_safety(eps):
    mu = gdp_mu(eps, 1e-5)
    assert gdp_delta(mu, eps) <= 1e-5
    assert gdp_delta(mu * (1 + 1e-9), eps) > 1e-5 * (1 - 1e-6)
    assert gdp_eps(mu, 1e-5) == pytest.approx(eps, rel=1e-9)
    # the exact GDP profile is tighter than the zCDP detour (mu-GDP Gaussian = mu^2/2-zCDP)
    assert cdp_eps(mu**2 / 2, 1e-5) > eps


def test_composition_and_bad_input():
    assert gdp_compose(0.3, 0.4) == pytest.approx(0.5)
    assert gdp_compose(*([0.1] * 8)) == pytest.approx(0.1 * math.sqrt(8))
    with pytest.raises(ValueError):
        gdp_mu(0.0, 1e-5)
    with pytest.raises(ValueError):
        gdp_eps(1.0, 1.5)
    with pytest.raises(ValueError):
        gdp_compose(-1.0)
