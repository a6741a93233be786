"""Non-private reference fits on the rows themselves: ordinary least squares and logistic regression.

They use the same encoding as the private estimators, so their coefficients and predictions
are directly comparable (the "public" rows of the paper's figures).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..base import LinearRegressor, LogisticClassifier
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from ..solvers import fit_encoded
from .common import private_rows


class _PublicModel:
    """Non-private fit on the rows in memory (row weights ignored)."""

    def __init__(
        self, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.domain = domain

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        table = private_rows(type(self).__name__, source, unweighted=False)
        self._set_solution(fit_encoded(encoding, table.to_df(), self._task), encoding)


class PublicLinearRegression(_PublicModel, LinearRegressor):
    """Ordinary least squares on the encoded rows (minimum-norm solution if columns are collinear)."""


class PublicLogisticRegression(_PublicModel, LogisticClassifier):
    """Unpenalised logistic regression on the encoded rows (maximum likelihood by damped Newton)."""
