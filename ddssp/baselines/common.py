"""What the private baselines share: parameter checks, the encoded private rows, and exact
sufficient statistics from the private table's marginals (which also works on a `DaskDataset`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from marginals import DaskDataset, Domain
from marginals.source import check_unweighted

from ..base import EncodedLinearModel, as_dataset
from ..encoding import Encoding
from ..statistics import SufficientStatistics, sufficient_statistics


def check_privacy_params(epsilon: float, delta: float) -> tuple[float, float]:
    """(epsilon, delta) as floats after checking epsilon > 0 and 0 < delta < 1."""
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return epsilon, delta


def _refuse_weights(model: EncodedLinearModel, table: Any) -> None:
    check_unweighted(table, type(model).__name__)


def private_statistics(
    model: EncodedLinearModel, data: Any, domain: Domain | None, task: str
) -> tuple[Encoding, SufficientStatistics]:
    """(encoding, exact X^T X, X^T y, ...) of the private table, read off its exact pairwise
    marginals: a `Dataset`, a DataFrame of codes with ``domain``, or a `DaskDataset`."""
    table = data if isinstance(data, DaskDataset) else as_dataset(data, domain)
    _refuse_weights(model, table)
    encoding = model._encoding(table.domain, task)
    return encoding, sufficient_statistics(table, encoding)


def encoded_rows(
    model: EncodedLinearModel, data: Any, domain: Domain | None, task: str
) -> tuple[Encoding, np.ndarray, np.ndarray]:
    """(encoding, X, y) of the private rows; row weights are refused (their sensitivity is unbounded)."""
    if isinstance(data, DaskDataset):
        raise TypeError(
            f"{type(model).__name__} needs the private rows in memory (its objective sums over rows); "
            "a DaskDataset serves AIM and AdaSSP, which only need marginals"
        )
    table = as_dataset(data, domain)
    _refuse_weights(model, table)
    encoding = model._encoding(table.domain, task)
    X, y = encoding.encode(table.to_df())
    return encoding, X, y
