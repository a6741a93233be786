"""Machinery shared by every estimator: parameters, input resolution, encoding and prediction.

Estimators follow the scikit-learn contract: ``__init__`` stores hyperparameters unchanged,
``fit`` learns ``coef_``, ``intercept_``, ``feature_names_in_`` (encoded feature names),
``n_features_in_`` and ``encoding_`` and returns ``self``; ``predict`` and friends take a
DataFrame of integer codes (any column order, extra columns such as the target ignored).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd

from marginals import Dataset, Domain
from marginals.source import MarginalSource
from marginals.source import as_marginal_source as marginal_source

from .encoding import Encoding, EncodingOptions, build_encoding
from .solvers import sigmoid


def as_dataset(data: Any, domain: Domain | None = None) -> Dataset:
    """A validated `Dataset` from a Dataset or a DataFrame of codes plus its domain."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, pd.DataFrame):
        return marginal_source(data, domain)
    raise TypeError(f"expected a marginals.Dataset or a pandas DataFrame of codes, got {type(data).__name__}")


def as_marginal_source(source: Any, domain: Domain | None = None) -> MarginalSource:
    """The object to query for marginals: any `MarginalSource` as is, a DataFrame of codes as a Dataset."""
    try:
        return marginal_source(source, domain)
    except TypeError as exc:
        raise TypeError(f"cannot fit: {exc}") from None


class EncodedLinearModel:
    """Base of all estimators: a linear model on the encoded features (optionally logistic)."""

    def get_params(self, deep: bool = True) -> dict:
        """The hyperparameters given to ``__init__``."""
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: Any) -> "EncodedLinearModel":
        """Set hyperparameters (names as in ``__init__``); returns self."""
        valid = self.get_params()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; valid: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- fitting helpers ---------------------------------------------------------------------

    def _encoding(self, domain: Domain, task: str) -> Encoding:
        options = self.encoding if getattr(self, "encoding", None) is not None else EncodingOptions()
        if not isinstance(options, EncodingOptions):
            raise TypeError(f"encoding must be an EncodingOptions or None, got {type(options).__name__}")
        return build_encoding(domain, self.target, task, getattr(self, "categorical", None), options)

    def _set_solution(self, theta: np.ndarray, encoding: Encoding) -> None:
        theta = np.asarray(theta, dtype=np.float64)
        names = encoding.feature_names
        if encoding.intercept:
            self.intercept_ = float(theta[0])
            self.coef_ = theta[1:].copy()
            names = names[1:]
        else:
            self.intercept_ = 0.0
            self.coef_ = theta.copy()
        self.encoding_ = encoding
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = len(names)
        if encoding.task == "logistic":
            self.classes_ = np.array([0, 1])

    # -- prediction ----------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: call fit first")

    def decision_function(self, df: pd.DataFrame) -> np.ndarray:
        """The linear score x.theta (+ intercept) of every row of ``df``."""
        self._check_fitted()
        X = self.encoding_.encode_features(df)
        if self.encoding_.intercept:
            X = X[:, 1:]
        return X @ self.coef_ + self.intercept_

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Linear: predictions on the encoded target scale. Logistic: class codes 0/1."""
        scores = self.decision_function(df)
        if self.encoding_.task == "logistic":
            return (scores > 0).astype(np.int64)
        return scores

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        """(n, 2) probabilities of the target codes 0 and 1, P(1) = sigmoid(x.theta)."""
        self._check_fitted()
        if self.encoding_.task != "logistic":
            raise AttributeError(
                f"predict_proba is only available for logistic models, this {type(self).__name__} is linear"
            )
        p1 = sigmoid(self.decision_function(df))
        return np.column_stack([1.0 - p1, p1])

    def inverse_transform_target(self, values: np.ndarray) -> np.ndarray:
        """Map linear predictions from the encoded target scale back to the target's code scale."""
        self._check_fitted()
        return self.encoding_.decode_target(values)

