"""`Measurement`: one noisy marginal as a mechanism publishes it and an estimator consumes it.

The record sits between the two sides: `marginals.mechanisms` creates measurements, `pgm`
fits models to them and `aim.release` stores them, and none of the consumers needs the
mechanism module. A measurement is public (it is the output of a DP mechanism); it holds the
clique, the noisy counts (axes in clique order, read-only) and the noise scale sigma.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
        """sigma^2, the variance of every cell's noise."""
        return self.sigma**2
