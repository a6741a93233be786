"""What the private baselines share: parameter checks and the encoded private rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from marginals import Domain

from ..base import EncodedLinearModel, as_dataset
from ..encoding import Encoding


def check_privacy_params(epsilon: float, delta: float) -> tuple[float, float]:
    """(epsilon, delta) as floats after checking epsilon > 0 and 0 < delta < 1."""
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return epsilon, delta


def encoded_rows(
    model: EncodedLinearModel, data: Any, domain: Domain | None, task: str
) -> tuple[Encoding, np.ndarray, np.ndarray]:
    """(encoding, X, y) of the private rows; row weights are refused (their sensitivity is unbounded)."""
    table = as_dataset(data, domain)
    if table.weights is not None:
        raise ValueError(
            f"{type(model).__name__}: the dataset has row weights, whose sensitivity cannot be derived from the domain"
        )
    encoding = model._encoding(table.domain, task)
    X, y = encoding.encode(table.to_df())
    return encoding, X, y
