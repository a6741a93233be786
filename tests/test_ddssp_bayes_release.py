"""Gaussian SSP (central) and LDP-sum releases: noise scale, clipping, accounting, secure noise."""

import math

import numpy as np
import pytest

from ddssp.bayes.release import clip_rows, exact_statistics, gaussian_ssp, local_ssp, ssp_sensitivity
from ddssp.bayes.sensitivity import analytic_gaussian_sigma
from marginals import Accountant, cdp_rho
from marginals.randomness import InsecureRandom


def _data(n=500, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 0.5, size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def test_clip_rows_bounds_the_norm_and_keeps_short_rows():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    out = clip_rows(X, 1.0)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4]])


def test_gaussian_ssp_noise_and_ledger():
    X, y = _data()
    acct = Accountant(10.0)
    stats = gaussian_ssp(X, y, "logistic", 1.0, 1e-5, accountant=acct, insecure_seed=InsecureRandom(0, warn=False),
                         fit_intercept=False)  # fmt: skip
    # exact lattice noise is accounted in zCDP (issue 23): sigma = Delta / sqrt(2 rho), rho = cdp_rho(eps, delta),
    # up to the rounding folded into the sensitivity (< 2^-12); the charge is the cost incurred, <= rho
    rho = cdp_rho(1.0, 1e-5)
    sigma = math.sqrt(4.5) / math.sqrt(2 * rho)
    assert stats.sigma == pytest.approx(sigma, rel=2.0**-12) and stats.sensitivity == pytest.approx(math.sqrt(4.5))
    assert stats.sigma > analytic_gaussian_sigma(math.sqrt(4.5), 1.0, 1e-5)  # zCDP costs some noise
    np.testing.assert_allclose(stats.noise_cov, stats.sigma**2 * np.eye(stats.z.size))
    assert acct.spent <= rho and acct.spent == pytest.approx(rho, rel=2.0**-12)
    assert acct.spent >= 4.5 / (2 * stats.sigma**2)  # the lattice rounding is charged too
    assert acct.charges[0].mechanism == "gaussian_ssp" and acct.charges[0].params["neighbours"] == "replace-one"
    assert stats.n == 500 and stats.z.size == 3 + 6 and not stats.private  # N is public, never noised
    exact = exact_statistics(X, y, "logistic", fit_intercept=False)
    resid = stats.z - exact.z
    assert np.all(np.abs(resid) < 6 * sigma) and np.abs(resid).max() > 0.1 * sigma


def test_gaussian_ssp_noise_has_the_calibrated_variance():
    X, y = _data(50)
    exact = exact_statistics(X, y, "linear").z
    resid = np.array([gaussian_ssp(X, y, "linear", 1.0, 1e-5, insecure_seed=InsecureRandom(s, warn=False)).z - exact for s in range(300)])
    # rows with the intercept column have radius sqrt(2) R
    sigma = ssp_sensitivity("linear", math.sqrt(2.0)) / math.sqrt(2 * cdp_rho(1.0, 1e-5))
    assert resid.std() == pytest.approx(sigma, rel=0.05)


def test_local_ssp_aggregate_noise_is_n_sigma_squared():
    X, y = _data(40)
    exact = exact_statistics(X, y, "logistic").z
    draws = np.array([local_ssp(X, y, "logistic", 2.0, 1e-5, insecure_seed=InsecureRandom(s, warn=False)).z - exact for s in range(300)])
    stats = local_ssp(X, y, "logistic", 2.0, 1e-5, insecure_seed=InsecureRandom(0, warn=False))
    assert stats.noise_cov[0, 0] == pytest.approx(40 * stats.sigma**2)
    assert draws.var() == pytest.approx(40 * stats.sigma**2, rel=0.06)


def test_release_validation():
    X, y = _data(10)
    with pytest.raises(ValueError, match="\\{0, 1\\} or \\{-1, \\+1\\}"):
        gaussian_ssp(X, np.where(y > 0, 2.0, 0.0), "logistic", 1.0, 1e-5, insecure_seed=InsecureRandom(0, warn=False))
    with pytest.raises(ValueError, match="must all lie in classes"):  # a named coding refuses the other one
        gaussian_ssp(X, np.r_[y[:-1], 0.0], "logistic", 1.0, 1e-5, classes=(-1, 1), insecure_seed=InsecureRandom(0, warn=False))
    with pytest.raises(ValueError, match="classes must be"):
        gaussian_ssp(X, y, "logistic", 1.0, 1e-5, classes=(1, 2), insecure_seed=InsecureRandom(0, warn=False))
    with pytest.raises(ValueError):
        gaussian_ssp(X, y, "poisson", 1.0, 1e-5)
    with pytest.raises(TypeError):
        gaussian_ssp(X, y, "logistic", 1.0, 1e-5, insecure_seed=np.random.default_rng(0))
    stats = gaussian_ssp(X * 10, y * 5, "linear", 1.0, 1e-5, fit_intercept=False)  # secure default source
    assert stats.private and stats.z.size == 10


def test_logistic_labels_zero_one_and_minus_one_plus_one_release_the_same_sums():
    # issue 24: {0, 1} labels are accepted (used as -1/+1); the recorded coding is public: the
    # `classes` given, else (0, 1) whatever the labels are (it must not tell which labels occur)
    X, y = _data(60)
    pm = exact_statistics(X, y, "logistic")
    zo = exact_statistics(X, (y + 1) / 2, "logistic")
    np.testing.assert_array_equal(pm.z, zo.z)
    assert pm.classes == zo.classes == exact_statistics(X, np.ones(60), "logistic").classes == (0.0, 1.0)
    named = exact_statistics(X, y, "logistic", classes=(-1, 1))
    np.testing.assert_array_equal(named.z, pm.z)
    assert named.classes == (-1.0, 1.0)
    with pytest.raises(ValueError, match="must all lie in classes"):
        exact_statistics(X, (y + 1) / 2, "logistic", classes=(-1, 1))
    with pytest.raises(ValueError, match="must be in"):
        exact_statistics(X, y * 2, "logistic")


def test_intercept_column_adds_the_sums_of_x_and_y():
    # issue 24: with fit_intercept (the default) the statistics carry sum(y), sum(x) and N through a
    # leading constant column R, and the sensitivity covers the augmented rows (norm <= sqrt(2) R)
    X, y = _data(80)
    lin = exact_statistics(X, y, "linear", R=2.0)
    Xc = clip_rows(X, 2.0)
    assert lin.d == 4 and lin.n_features == 3 and lin.intercept == 2.0
    assert lin.names[:5] == ["x0*x0", "x0*x1", "x0*x2", "x0*x3", "x0*y"]
    np.testing.assert_allclose(lin.z[:5], [80 * 4.0, *(2.0 * Xc.sum(axis=0)), 2.0 * np.clip(y, -1, 1).sum()])
    noisy = gaussian_ssp(X, y, "linear", 1.0, 1e-5, R=2.0, insecure_seed=InsecureRandom(0, warn=False))
    assert noisy.sensitivity == pytest.approx(ssp_sensitivity("linear", 2.0 * math.sqrt(2.0)))
    assert noisy.z.size == lin.z.size and noisy.intercept == 2.0


@pytest.mark.parametrize("family", ["logistic", "linear"])
@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-6), (0.1, 1e-9), (0.5, 1e-5), (3.0, 1e-7), (8.0, 1e-3)])
def test_an_accountant_at_the_release_epsilon_delta_holds_it(family, epsilon, delta):
    # issue 24: gaussian_ssp(..., accountant=Accountant.from_epsilon(eps, delta)) at the same (eps, delta)
    # raised BudgetExceeded when the noise came from the analytic Gaussian (its rho exceeds cdp_rho); the
    # lattice noise is calibrated to cdp_rho(eps, delta) and charged the cost incurred, never more
    X, y = _data(50, seed=int(epsilon * 10))
    acct = Accountant.from_epsilon(epsilon, delta)
    gaussian_ssp(X, y, family, epsilon, delta, accountant=acct, insecure_seed=InsecureRandom(0, warn=False))
    assert acct.spent <= acct.rho and acct.spent == pytest.approx(acct.rho, rel=1e-3)
    assert acct.epsilon() <= epsilon
