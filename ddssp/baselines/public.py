"""Non-private reference fits on the rows themselves: ordinary least squares and logistic regression.

They use the same encoding as the private estimators, so their coefficients and predictions
are directly comparable (the "public" rows of the paper's figures).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from marginals import Domain

from ..base import EncodedLinearModel, as_dataset
from ..encoding import Encoding, EncodingOptions
from ..solvers import fit_logistic


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


class _PublicModel(EncodedLinearModel):
    _task = "linear"

    def __init__(
        self, target: str, categorical: Sequence[str] | None = None, encoding: EncodingOptions | None = None
    ) -> None:
        self.target = target
        self.categorical = categorical
        self.encoding = encoding

    def fit(self, data: Any, domain: Domain | None = None):
        """Fit on a `Dataset` or a DataFrame of codes with its ``domain``; returns self."""
        table = as_dataset(data, domain)
        encoding = self._encoding(table.domain, self._task)
        self._set_solution(fit_encoded(encoding, table.to_df(), self._task), encoding)
        return self


class PublicLinearRegression(_PublicModel):
    """Ordinary least squares on the encoded rows (minimum-norm solution if columns are collinear)."""

    _task = "linear"


class PublicLogisticRegression(_PublicModel):
    """Unpenalised logistic regression on the encoded rows (maximum likelihood by damped Newton)."""

    _task = "logistic"
