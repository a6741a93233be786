"""What the private baselines share: the private rows (refusing what their sensitivity analysis
does not cover), their exact sufficient statistics (also from a `DaskDataset`) and encoded rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from marginals import Dataset
from marginals.source import check_unweighted, is_rows

from ..encoding import Encoding
from ..statistics import SufficientStatistics, sufficient_statistics


def private_rows(who: str, source: Any, in_memory: bool = True, unweighted: bool = True) -> Any:
    """``source`` after checking it is private rows (a `Dataset`; a `DaskDataset` unless ``in_memory``)."""
    if not is_rows(source):
        raise TypeError(f"{who} fits on private rows (a marginals.Dataset, a DataFrame of codes or X, y with "
                        f"domain=...), got {type(source).__name__}")  # fmt: skip
    if in_memory and not isinstance(source, Dataset):
        raise TypeError(
            f"{who} needs the private rows in memory (its objective sums over rows); "
            "a DaskDataset serves AIM and AdaSSP, which only need marginals"
        )
    if unweighted:
        check_unweighted(source, who)
    return source


def private_statistics(who: str, source: Any, encoding: Encoding) -> SufficientStatistics:
    """Exact X^T X, X^T y, ... of the private rows, read off their exact pairwise marginals (a
    `Dataset` or a `DaskDataset`); row weights are refused (their sensitivity is unbounded)."""
    return sufficient_statistics(private_rows(who, source, in_memory=False), encoding)


def encoded_rows(who: str, source: Any, encoding: Encoding) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of the private rows in memory; row weights are refused (their sensitivity is unbounded)."""
    return encoding.encode(private_rows(who, source).to_df())
