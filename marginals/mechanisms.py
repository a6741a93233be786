"""Noise mechanisms on an explicit `numpy.random.Generator`, each charging an `Accountant`.

- `gaussian_measure`: a noisy count marginal. Neighbouring tables differ by adding or removing
  one row, which changes exactly one cell of a count marginal by 1, so the L2 sensitivity is 1
  and the zCDP cost is 1 / (2 sigma^2).
- `exponential_mechanism`: select an index with probability proportional to
  exp(epsilon * score / (2 * sensitivity)); the scores are shifted by their maximum before
  exponentiation, so any finite scale (1e7 and beyond) and ties are handled exactly.

The charge is recorded before any noise is drawn; a refused charge draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .dataset import Dataset
from .privacy import Accountant

#: L2 sensitivity of a count marginal under add/remove-one-row neighbours.
COUNT_SENSITIVITY = 1.0


@dataclass(frozen=True, eq=False)
class Measurement:
    """A noisy marginal: the clique, its noisy counts (axes in clique order) and the noise scale."""

    clique: tuple[str, ...]
    noisy_counts: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        values = np.array(self.noisy_counts, dtype=np.float64)
        if values.ndim != len(self.clique):
            raise ValueError(f"measurement over {self.clique}: counts have {values.ndim} axes, expected {len(self.clique)}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"measurement over {self.clique}: non-finite noisy counts")
        if not (float(self.sigma) > 0):
            raise ValueError(f"measurement over {self.clique}: sigma must be > 0, got {self.sigma}")
        values.flags.writeable = False
        object.__setattr__(self, "clique", tuple(self.clique))
        object.__setattr__(self, "noisy_counts", values)
        object.__setattr__(self, "sigma", float(self.sigma))

    @property
    def variance(self) -> float:
        return self.sigma**2


def _check_rng(rng: np.random.Generator) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"pass an explicit numpy.random.Generator, got {type(rng).__name__}")


def measure_counts(
    true_counts: np.ndarray,
    clique: Sequence[str],
    sigma: float,
    rng: np.random.Generator,
    accountant: Accountant,
    label: str | None = None,
) -> Measurement:
    """Gaussian mechanism on an already computed count marginal of one private table."""
    _check_rng(rng)
    clique = tuple(clique)
    accountant.gaussian(sigma, COUNT_SENSITIVITY, label=label or "measure " + ",".join(clique))
    true_counts = np.asarray(true_counts, dtype=np.float64)
    noisy = true_counts + rng.normal(0.0, sigma, size=true_counts.shape)
    return Measurement(clique, noisy, sigma)


def gaussian_measure(
    dataset: Dataset,
    clique: Sequence[str],
    sigma: float,
    rng: np.random.Generator,
    accountant: Accountant,
    label: str | None = None,
) -> Measurement:
    """Measure the count marginal of ``clique`` with N(0, sigma^2) noise per cell."""
    if dataset.weights is not None:
        raise ValueError(
            "gaussian_measure: the dataset has row weights, whose sensitivity cannot be derived "
            "from the domain; measure an unweighted dataset"
        )
    clique = dataset.domain.check(clique)
    return measure_counts(dataset.marginal(clique), clique, sigma, rng, accountant, label)


def exponential_mechanism(
    scores: Sequence[float] | np.ndarray,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    accountant: Accountant,
    label: str = "select",
) -> int:
    """Index chosen with probability proportional to exp(epsilon * score / (2 * sensitivity))."""
    _check_rng(rng)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"exponential_mechanism needs a non-empty 1-D array of scores, got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"exponential_mechanism: {int((~np.isfinite(scores)).sum())} non-finite score(s)")
    if not (sensitivity > 0 and np.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity}")
    accountant.exponential(epsilon, label=label)
    probs = selection_probabilities(scores, epsilon, sensitivity)
    cdf = np.cumsum(probs)
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), scores.size - 1))


def selection_probabilities(scores: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """The exact selection distribution of `exponential_mechanism` (softmax of shifted scores)."""
    scores = np.asarray(scores, dtype=np.float64)
    logits = (0.5 * epsilon / sensitivity) * (scores - scores.max())
    weights = np.exp(logits)  # the maximum maps to exp(0) = 1, so the sum is >= 1: no overflow or 0/0
    return weights / weights.sum()
