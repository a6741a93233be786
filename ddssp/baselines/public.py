"""Non-private reference fits on the rows themselves: ordinary least squares and logistic regression.

They use the same encoding as the private estimators, so their coefficients and predictions
are directly comparable (the "public" rows of the paper's figures).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd


from ..base import LinearRegressor, LogisticClassifier, store_params
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from ..solvers import fit_logistic
from .common import private_rows


def fit_encoded(encoding: Encoding, df: pd.DataFrame, task: str) -> np.ndarray:
    """Non-private fit on a table: minimum-norm least squares (linear) or maximum likelihood (logistic).

    All-zero columns (levels absent from the table) get coefficient exactly 0.
    """
    X, y = encoding.encode(df)
    if X.shape[0] == 0:
        raise ValueError("cannot fit a regression on an empty table (0 rows)")
    live = np.any(X != 0, axis=0)
    theta = np.zeros(X.shape[1])
    if task == "linear":
        theta[live] = np.linalg.lstsq(X[:, live], y, rcond=None)[0]
    else:
        theta[live] = fit_logistic(X[:, live], y)
    return theta


class _PublicModel:
    """Non-private fit on the rows in memory (row weights ignored)."""

    def __init__(
        self, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, domain: DomainLike = None,
    ) -> None:  # fmt: skip
        store_params(self, locals())

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        table = private_rows(type(self).__name__, source, unweighted=False)
        self._set_solution(fit_encoded(encoding, table.to_df(), self._task), encoding)


class PublicLinearRegression(_PublicModel, LinearRegressor):
    """Ordinary least squares on the encoded rows (minimum-norm solution if columns are collinear)."""


class PublicLogisticRegression(_PublicModel, LogisticClassifier):
    """Unpenalised logistic regression on the encoded rows (maximum likelihood by damped Newton)."""
