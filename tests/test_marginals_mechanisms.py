"""Gaussian and exponential mechanisms: charges, refusals, rng discipline, and their distributions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from marginals import (
    Accountant,
    BudgetExceeded,
    Dataset,
    Domain,
    InsecureRandom,
    Measurement,
    SecureRandom,
    exponential_mechanism,
    gaussian_measure,
    measure_counts,
    selection_probabilities,
)

DOM = Domain(("a", "b", "c"), (3, 4, 5))


@pytest.fixture(scope="module")
def ds() -> Dataset:
    rng = np.random.default_rng(0)
    return Dataset(pd.DataFrame({a: rng.integers(0, m, 500) for a, m in zip(DOM.attrs, DOM.shape)}), DOM)


class CountingRandom(InsecureRandom):
    """A seeded source that counts the words drawn from it."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed, warn=False)
        self.words = 0

    def uint64(self, size: int) -> np.ndarray:
        self.words += int(size)
        return super().uint64(size)


def state(rng: CountingRandom) -> int:
    return rng.words


# --- Gaussian mechanism ---------------------------------------------------------------------------


def test_gaussian_measure_returns_measurement_and_charges(ds):
    acct = Accountant(10.0)
    rng = InsecureRandom(1)
    m = gaussian_measure(ds, ("c", "a"), sigma=4.0, rng=rng, accountant=acct)
    assert isinstance(m, Measurement)
    assert m.clique == ("c", "a") and m.sigma == 4.0 and m.variance == 16.0
    assert m.noisy_counts.shape == (5, 3) and m.noisy_counts.dtype == np.float64
    assert not m.noisy_counts.flags.writeable
    assert not np.array_equal(m.noisy_counts, ds.marginal(("c", "a")))  # noise was added
    assert len(acct.charges) == 1
    charge = acct.charges[0]
    assert charge.rho == pytest.approx(1 / (2 * 4.0**2)) and charge.mechanism == "discrete_gaussian"
    assert charge.label == "measure c,a"
    gaussian_measure(ds, ("b",), sigma=0.5, rng=rng, accountant=acct, label="mine")
    assert acct.charges[1].label == "mine" and acct.spent == pytest.approx(1 / 32 + 2)


def test_gaussian_measure_empty_clique(ds):
    m = gaussian_measure(ds, (), sigma=1.0, rng=InsecureRandom(0), accountant=Accountant(1.0))
    assert m.clique == () and m.noisy_counts.shape == ()
    assert abs(float(m.noisy_counts) - len(ds)) < 6


def test_refused_charge_draws_nothing_and_records_nothing(ds):
    acct = Accountant(0.01)
    rng = CountingRandom(2)
    before = state(rng)
    with pytest.raises(BudgetExceeded):
        gaussian_measure(ds, ("a", "b"), sigma=1.0, rng=rng, accountant=acct)  # costs 0.5 > 0.01
    assert state(rng) == before
    assert acct.charges == () and acct.spent == 0.0
    with pytest.raises(BudgetExceeded):
        exponential_mechanism([1.0, 2.0], 1.0, 1.0, rng, acct)  # costs 1/8 > 0.01
    assert state(rng) == before and acct.charges == ()


def test_weighted_dataset_rejected(ds):
    weighted = Dataset(ds.to_df(), DOM, weights=np.ones(len(ds)))
    acct = Accountant(1.0)
    rng = CountingRandom(3)
    before = state(rng)
    with pytest.raises(ValueError, match="the dataset has row weights"):
        gaussian_measure(weighted, ("a",), 1.0, rng, acct)
    assert acct.charges == () and state(rng) == before


@pytest.mark.parametrize(
    "bad_rng, error, message",
    [
        (np.random.default_rng(0), TypeError, "never drawn from a numpy Generator"),
        (np.random.RandomState(0), TypeError, "insecure_seed must be a non-negative integer"),
        (True, TypeError, "insecure_seed must be a non-negative integer"),
        (-1, ValueError, "insecure_seed must be a non-negative integer, got -1"),
    ],
)
def test_non_source_rng_rejected(ds, bad_rng, error, message):
    acct = Accountant(1.0)
    with pytest.raises(error, match=message):
        gaussian_measure(ds, ("a",), 1.0, bad_rng, acct)
    with pytest.raises(error, match=message):
        measure_counts(np.zeros(3), ("a",), 1.0, bad_rng, acct)
    with pytest.raises(error, match=message):
        exponential_mechanism([1.0], 1.0, 1.0, bad_rng, acct)
    assert acct.charges == ()


def test_unknown_clique_rejected(ds):
    acct = Accountant(1.0)
    with pytest.raises(ValueError, match=r"unknown attribute\(s\) \['zz'\]"):
        gaussian_measure(ds, ("zz",), 1.0, InsecureRandom(0), acct)
    assert acct.charges == ()


def test_measurement_validation():
    with pytest.raises(ValueError, match=r"counts have 1 axes, expected 2"):
        Measurement(("a", "b"), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="non-finite noisy counts"):
        Measurement(("a",), np.array([0.0, np.nan]), 1.0)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        Measurement(("a",), np.zeros(2), 0.0)


def test_same_seed_same_draws(ds):
    def run(seed):
        rng = InsecureRandom(seed)
        acct = Accountant(10.0)
        m = gaussian_measure(ds, ("a", "c"), 2.0, rng, acct)
        picks = [exponential_mechanism(np.arange(6.0), 1.0, 1.0, rng, acct) for _ in range(20)]
        return m.noisy_counts, picks

    (n1, p1), (n2, p2), (n3, p3) = run(7), run(7), run(8)
    np.testing.assert_array_equal(n1, n2)
    assert p1 == p2
    assert not np.array_equal(n1, n3)


def discrete_gaussian_pmf(variance: float, support: np.ndarray) -> np.ndarray:
    """The exact discrete Gaussian pmf on ``support`` (normalised over a range wide enough to be exact in floats)."""
    wide = np.arange(-int(60 * math.sqrt(variance)) - 60, int(60 * math.sqrt(variance)) + 61)
    z = np.exp(-(wide.astype(float) ** 2) / (2 * variance)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * variance)) / z


def test_noise_is_integer_discrete_gaussian_of_the_charged_variance():
    sigma = 3.7
    true = np.arange(200 * 150, dtype=np.float64).reshape(200, 150)
    acct = Accountant(1.0)
    m = measure_counts(true, ("x", "y"), sigma, InsecureRandom(11), acct)
    resid = (m.noisy_counts - true).ravel()
    assert np.array_equal(resid, np.rint(resid))  # integer noise on integer counts
    variance = m.sigma**2
    assert sigma**2 <= variance <= sigma**2 * (1 + 2**-19)  # rounded up to a rational, never down
    assert acct.charges[0].rho == pytest.approx(1 / (2 * variance), rel=1e-15)
    assert acct.charges[0].mechanism == "discrete_gaussian"
    support = np.arange(-20, 21)
    expected = discrete_gaussian_pmf(variance, support) * resid.size
    observed = np.array([(resid == k).sum() for k in support])
    tail = resid.size - observed.sum()
    assert stats.chisquare(np.append(observed, tail), np.append(expected, resid.size - expected.sum())).pvalue > 1e-3
    # the test has power: a 5% larger scale is rejected
    wrong = discrete_gaussian_pmf(1.1025 * variance, support) * resid.size
    assert stats.chisquare(np.append(observed, tail), np.append(wrong, resid.size - wrong.sum())).pvalue < 1e-3


def test_float_noise_only_on_an_insecure_source():
    true = np.zeros(10)
    m = measure_counts(true, ("x",), 2.0, InsecureRandom(1), Accountant(1.0), exact=False)
    assert not np.array_equal(m.noisy_counts, np.rint(m.noisy_counts))
    with pytest.raises(ValueError, match="only for benchmarks on an InsecureRandom"):
        measure_counts(true, ("x",), 2.0, SecureRandom(), Accountant(1.0), exact=False)


def test_default_source_is_secure_and_numpy_generators_are_refused(ds):
    acct = Accountant(10.0)
    a = gaussian_measure(ds, ("a",), 50.0, None, acct).noisy_counts
    b = gaussian_measure(ds, ("a",), 50.0, None, acct).noisy_counts
    assert not np.array_equal(a, b)
    with pytest.raises(TypeError, match="never drawn from a numpy Generator"):
        gaussian_measure(ds, ("a",), 1.0, np.random.default_rng(0), acct)
    with pytest.raises(ValueError, match="the discrete Gaussian needs integer counts"):
        measure_counts(np.array([0.5, 1.0]), ("x",), 1.0, None, acct)


def test_gaussian_measure_noise_variance(ds):
    sigma = 2.5
    rng = InsecureRandom(12)
    true = ds.marginal(("a", "b", "c"))
    acct = Accountant(1000.0)
    resid = np.concatenate([(gaussian_measure(ds, ("a", "b", "c"), sigma, rng, acct).noisy_counts - true).ravel() for _ in range(50)])
    n = resid.size
    # the discrete Gaussian's variance is below sigma^2 by a negligible amount at sigma = 2.5
    stat = float(np.sum(resid**2) / sigma**2)
    assert 2 * min(stats.chi2.cdf(stat, n), stats.chi2.sf(stat, n)) > 1e-3


# --- exponential mechanism -----------------------------------------------------------------------


def exact_softmax(scores, epsilon, sensitivity):
    logits = [epsilon * s / (2 * sensitivity) for s in scores]
    top = max(logits)
    w = [math.exp(x - top) for x in logits]
    return np.array(w) / sum(w)


def test_selection_probabilities_exact():
    scores = np.array([0.0, 1.0, 3.0, -2.0, 3.0])
    np.testing.assert_allclose(selection_probabilities(scores, 0.8, 2.0), exact_softmax(scores, 0.8, 2.0), rtol=1e-14)


def test_exponential_charges_eps_squared_over_8():
    acct = Accountant(1.0)
    i = exponential_mechanism([1.0, 5.0, 2.0], 0.6, 1.0, InsecureRandom(0), acct, label="pick")
    assert i in (0, 1, 2)
    assert acct.charges[0].rho == pytest.approx(0.6**2 / 8)
    assert acct.charges[0].mechanism == "exponential" and acct.charges[0].label == "pick"


def draws(scores, epsilon, sensitivity, n, seed):
    rng = InsecureRandom(seed)
    # a fresh ledger per draw keeps each charge O(1); the rng is shared so draws are independent
    return np.array([exponential_mechanism(scores, epsilon, sensitivity, rng, Accountant(1e6)) for _ in range(n)])


def test_selection_frequencies_match_softmax():
    scores = [0.0, 1.0, 2.0, 3.5, 5.0, 2.0]
    epsilon, sensitivity = 1.0, 1.5
    n = 6000
    picks = draws(scores, epsilon, sensitivity, n, seed=21)
    observed = np.bincount(picks, minlength=len(scores))
    expected = exact_softmax(scores, epsilon, sensitivity) * n
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # the test has power: a distribution with double the epsilon is rejected
    wrong = exact_softmax(scores, 2 * epsilon, sensitivity) * n
    assert stats.chisquare(observed, wrong).pvalue < 1e-6


def test_ties_are_uniform():
    np.testing.assert_array_equal(selection_probabilities(np.full(7, 1e7), 1.0, 1.0), np.full(7, 1 / 7))
    picks = draws([4.0] * 5, 1.0, 1.0, 5000, seed=22)
    observed = np.bincount(picks, minlength=5)
    assert stats.chisquare(observed).pvalue > 1e-3


def test_large_scores_are_stable():
    scores = [1e7, 1e7 - 1, 0.0]
    p = selection_probabilities(np.array(scores), 1.0, 1.0)
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
    assert p[0] / p[1] == pytest.approx(math.exp(0.5), rel=1e-12)
    assert p[2] == 0.0  # exp(-5e6) underflows to exactly 0 in floats (the exact sampler keeps it positive)
    np.testing.assert_allclose(p[:2], [1 / (1 + math.exp(-0.5)), math.exp(-0.5) / (1 + math.exp(-0.5))], rtol=1e-12)
    picks = draws(scores, 1.0, 1.0, 2000, seed=23)
    assert set(np.unique(picks)) <= {0, 1}
    assert stats.binomtest(int((picks == 0).sum()), len(picks), p[0]).pvalue > 1e-3
    # very large negative and positive scores together
    q = selection_probabilities(np.array([-1e12, 1e12, 1e12 - 2]), 1.0, 1.0)
    np.testing.assert_allclose(q, [0.0, 1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))], rtol=1e-12)


def test_zero_probability_candidates_never_chosen():
    picks = draws([0.0, 100.0, 0.0, 100.0, -50.0], 40.0, 1.0, 500, seed=24)  # exp(-2000) = 0
    assert set(np.unique(picks)) == {1, 3}


@pytest.mark.parametrize(
    "scores, sensitivity, expected",
    [
        ([], 1.0, r"non-empty 1-D array of scores, got shape \(0,\)"),
        ([[1.0, 2.0]], 1.0, r"non-empty 1-D array of scores, got shape \(1, 2\)"),
        ([1.0, np.nan, np.inf], 1.0, r"2 non-finite score\(s\)"),
        ([1.0, 2.0], 0.0, r"sensitivity must be a finite number > 0, got 0.0"),
        ([1.0, 2.0], np.inf, r"sensitivity must be a finite number > 0, got inf"),
    ],
)
def test_exponential_bad_inputs(scores, sensitivity, expected):
    acct = Accountant(1.0)
    rng = CountingRandom(0)
    before = state(rng)
    with pytest.raises(ValueError, match=expected):
        exponential_mechanism(scores, 1.0, sensitivity, rng, acct)
    assert acct.charges == () and state(rng) == before


def test_exponential_bad_epsilon():
    acct = Accountant(1.0)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        exponential_mechanism([1.0, 2.0], 0.0, 1.0, InsecureRandom(0), acct)
    assert acct.charges == ()
