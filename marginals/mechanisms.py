"""Noise mechanisms on a `RandomSource`, each charging an `Accountant`.

- `gaussian_measure` / `measure_counts`: a noisy count marginal. Neighbouring tables differ by
  adding or removing one row, which changes exactly one cell of a count marginal by 1, so the L2
  sensitivity is 1 (k when they differ by one privacy unit of up to k rows, `marginals.units`:
  ``sensitivity=k``, whose cost is k^2 / (2 variance)). The noise is the exact discrete Gaussian (`marginals.exact`) with the
  rational variance `noise_variance(sigma)` >= sigma^2; its zCDP cost 1 / (2 variance) is charged
  (`marginals.maps.GaussianMap`, exactly in rationals, then rounded to a float).
  ``exact=False`` adds float Gaussian noise instead, allowed only on an `InsecureRandom` source
  (benchmarks comparing the samplers).
- `exponential_mechanism`: select an index with probability proportional to
  exp(epsilon * score / (2 * sensitivity)) by exact rejection sampling (`exact.exponential_choice`),
  run at epsilon - `EM_ROUNDING` so that its rounding slack stays inside the charged epsilon.

Every mechanism takes its noise as ``rng`` (`marginals.randomness.NoiseSource`), resolved by
`noise_source`: None is the operating system's secure source; an int seed or an
`InsecureRandom` replays the noise and is for tests and benchmarks only. The charge is recorded
before any noise is drawn; a refused charge draws nothing. The measurement record they return
is `marginals.measurement.Measurement`.
"""

from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np

from .dataset import Dataset
from .exact import EM_ROUNDING, discrete_gaussian, exponential_choice, noise_variance
from .maps import GaussianMap
from .measurement import Measurement
from .privacy import Accountant, check_epsilon
from .randomness import NoiseSource, noise_source
from .source import check_unweighted

__all__ = ["COUNT_SENSITIVITY", "exponential_mechanism", "gaussian_measure", "measure_counts", "selection_probabilities"]

#: L2 sensitivity of a count marginal under add/remove-one-row neighbours.
COUNT_SENSITIVITY = 1.0


def measure_counts(
    true_counts: np.ndarray,
    clique: Sequence[str],
    sigma: float,
    rng: NoiseSource,
    accountant: Accountant,
    label: str | None = None,
    exact: bool = True,
    sensitivity: float = COUNT_SENSITIVITY,
) -> Measurement:
    """Discrete Gaussian mechanism on an already computed count marginal of one private table.

    The recorded sigma is the square root of the variance actually used (>= ``sigma``, relative
    difference below 1e-6). ``rng``: the noise source (see `noise_source`; None is secure).
    ``sensitivity``: the L2 sensitivity charged, 1 for one-row neighbours, k when a privacy unit
    may hold k rows (`marginals.units`); ``sigma`` is the noise actually added, whatever it is.
    """
    if isinstance(sensitivity, bool) or not (isinstance(sensitivity, numbers.Real) and 1 <= sensitivity < math.inf):
        raise ValueError(f"sensitivity must be a finite number >= 1 (rows per privacy unit), got {sensitivity!r}")
    rng = noise_source(rng)
    clique = tuple(clique)
    true_counts = np.asarray(true_counts, dtype=np.float64)
    label = label or "measure " + ",".join(clique)
    if not exact:
        if rng.private:
            raise ValueError("float Gaussian noise is only for benchmarks on an InsecureRandom source; use exact=True")
        accountant.gaussian(sigma, sensitivity, label=label)
        return Measurement(clique, true_counts + rng.normal(0.0, sigma, size=true_counts.shape), sigma)
    if not np.array_equal(true_counts, np.rint(true_counts)):
        raise ValueError(f"measurement over {clique}: the discrete Gaussian needs integer counts")
    variance = noise_variance(sigma)
    rho = float(GaussianMap(sensitivity).rho_exact(variance))
    sigma_used = float(variance) ** 0.5
    accountant.charge(rho, label, "discrete_gaussian", sigma=sigma_used, sensitivity=sensitivity)
    noise = discrete_gaussian(rng, variance, true_counts.size).reshape(true_counts.shape)
    return Measurement(clique, true_counts + noise, sigma_used)


def gaussian_measure(
    dataset: Dataset,
    clique: Sequence[str],
    sigma: float,
    rng: NoiseSource,
    accountant: Accountant,
    label: str | None = None,
) -> Measurement:
    """Measure the count marginal of ``clique`` with discrete Gaussian noise of scale ``sigma`` per cell
    (``rng``: the noise source, see `noise_source`)."""
    check_unweighted(dataset, "gaussian_measure")
    clique = dataset.domain.check(clique)
    return measure_counts(dataset.marginal(clique), clique, sigma, rng, accountant, label)


def exponential_mechanism(
    scores: Sequence[float] | np.ndarray,
    epsilon: float,
    sensitivity: float,
    rng: NoiseSource,
    accountant: Accountant,
    label: str = "select",
) -> int:
    """Index chosen with probability proportional to exp(epsilon * score / (2 * sensitivity)), exactly
    (``rng``: the noise source, see `noise_source`)."""
    rng = noise_source(rng)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"exponential_mechanism needs a non-empty 1-D array of scores, got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"exponential_mechanism: {int((~np.isfinite(scores)).sum())} non-finite score(s)")
    if not (sensitivity > 0 and np.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity}")
    epsilon = check_epsilon(epsilon)
    if not epsilon > EM_ROUNDING:
        raise ValueError(f"exponential_mechanism: epsilon must exceed {EM_ROUNDING:.3g}, got {epsilon}")
    accountant.exponential(epsilon, label=label)
    return exponential_choice(rng, (0.5 * (epsilon - EM_ROUNDING) / sensitivity) * scores)


def selection_probabilities(scores: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """The ideal selection distribution at ``epsilon`` (softmax of shifted scores); the exact sampler
    runs at epsilon - EM_ROUNDING, within a factor exp(2^-39) of it."""
    scores = np.asarray(scores, dtype=np.float64)
    logits = (0.5 * epsilon / sensitivity) * (scores - scores.max())
    weights = np.exp(logits)  # the maximum maps to exp(0) = 1, so the sum is >= 1: no overflow or 0/0
    return weights / weights.sum()
