"""What every estimator shares: scikit-learn plumbing, input resolution, encoding and prediction.

Estimators are scikit-learn estimators: ``__init__`` stores hyperparameters unchanged; ``fit``
takes a marginal source, a DataFrame holding the target, or ``X, y``, always with a *public*
domain (see `ddssp.inputs`), and learns ``coef_``, ``intercept_``, ``encoding_``,
``encoded_feature_names_`` (the encoded columns, named by level labels when a spec is known),
``n_features_in_`` and ``feature_names_in_`` (the input columns), ``target_`` (the target's
name), ``discretizer_`` (the spec, or None) and, for logistic models, ``classes_``. ``predict`` and friends take a DataFrame (columns selected by name, any order, extra
columns such as the target ignored; raw values when a spec is known) or an array (columns by
position). Linear models predict the target on its code scale (``predict_encoded`` gives the
encoded scale); logistic models predict classes (codes, or labels with a spec) and have
``decision_function`` (log-odds), ``predict_proba`` and ``predict_log_proba``.

`DPEstimator` adds what the private baselines share: budget checks through `marginals.privacy`,
published noise from `marginals.randomness.noise_source` (secure unless an insecure seed is given
explicitly; then ``private_`` is False) and the ``privacy_`` record. Every fit of a DP estimator is its
own release of the rows it sees: fitted by scikit-learn's model selection (``cross_val_score``,
``GridSearchCV``, ...: clones, each fitted on overlapping rows) it warns `ModelSelectionBudgetWarning`
that the fits compose. (An ``Accountant`` hyperparameter cannot be shared across those fits: ``clone``
deep-copies it.)

A fitted estimator is what an analyst publishes (pickled, or its attributes printed), so it holds
only released quantities: its ``__init__`` hyperparameters and the attributes named in the
``_released_attributes`` dicts of its classes (name -> why its guarantee covers it), merged over
the class hierarchy by `released_attributes`. Exact data-dependent intermediates (a PTR distance,
a clipped-row count) are never stored, and no message quotes them.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from marginals import DataError, Domain
from marginals.privacy import check_epsilon_delta
from marginals.randomness import RandomSource, noise_source
from marginals.spec.discretize import drop_causes

from .encoding import Encoding, EncodingOptions, build_encoding, read_codes
from .inputs import FitInput, predict_table, resolve_fit, sub_discretizer
from .target_levels import TargetClasses, class_index, condition_on_classes, target_classes


def released_attributes(estimator: Any) -> dict[str, str]:
    """Every attribute a fitted ``estimator`` may hold besides its hyperparameters, with the reason
    its guarantee covers it: the ``_released_attributes`` dicts of its classes, merged."""
    out: dict[str, str] = {}
    for cls in reversed(type(estimator).__mro__):
        out.update(vars(cls).get("_released_attributes", {}))
    return out


def _is_logistic(model: Any) -> bool:
    return model._task == "logistic"


class EncodedLinearModel:
    """A linear model on the encoded features, optionally logistic (a mixin: put it first).

    Subclasses set ``_task`` ("linear" or "logistic"), may override ``_check_params()`` (called
    before any data is read) and implement ``_fit_encoded(source, encoding)``, which calls
    ``_set_solution(theta, encoding)``.
    """

    _task = "linear"
    _released_attributes = {
        "coef_": "the fitted coefficients: the estimator's release (or post-processing of its source)",
        "intercept_": "the fitted intercept: as coef_",
        "encoding_": "the encoding: built from the public domain and the hyperparameters",
        "discretizer_": "the spec of the input: public or itself released (None without one)",
        "target_": "the target's name: a hyperparameter or the input's column name",
        "n_features_in_": "the number of input columns: public (the domain's attributes)",
        "feature_names_in_": "the input columns' names (when fitted on named columns): public",
        "encoded_feature_names_": "the encoded columns' names: from the public domain and spec",
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # X holds integer codes of a public domain
        tags.input_tags.positive_only = True
        tags.target_tags.required = True  # fit(source) needs no y, but fit(X) of codes does
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_class = False
        return tags

    # -- fitting --------------------------------------------------------------------------------

    def fit(self, X: Any, y: Any = None) -> Any:
        """Fit on a release or other marginal source, a DataFrame holding the target, or ``X, y``.

        The public domain of a DataFrame or of ``X, y`` is the ``domain`` hyperparameter: a
        `Domain`, a `Discretizer` (raw values) or an int number of levels. A logistic target whose
        spec gives two classes besides ``<other>`` / ``<missing>`` is fitted on the rows of those two
        classes (`ddssp.target_levels`).
        """
        self._check_params()
        data = self._resolve(X, y)
        source, classes = data.source, None
        if _is_logistic(self):
            classes = target_classes(data.discretizer, source.domain, data.target)
            source = source if classes is None else condition_on_classes(source, classes)
        encoding = self._encoding(source.domain, self._task, data.target)
        self._set_inputs(data, encoding, classes)
        self._fit_encoded(source, encoding)
        return self

    def _resolve(self, X: Any, y: Any) -> FitInput:
        if y is None and isinstance(X, (np.ndarray, list, tuple)):
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None: call "
                             "fit(X, y) on codes, or fit(source) on a release, a Dataset or a DataFrame with the target")  # fmt: skip
        try:
            return resolve_fit(X, y, self.target, self.domain, _is_logistic(self))
        except TypeError as exc:
            raise TypeError(f"cannot fit: {exc}") from None

    def _check_params(self) -> None:
        """Validate hyperparameters before any data is read (override to add checks)."""

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        raise NotImplementedError

    def _encoding(self, domain: Domain, task: str, target: str) -> Encoding:
        options = self.encoding if self.encoding is not None else EncodingOptions()
        if not isinstance(options, EncodingOptions):
            raise TypeError(f"encoding must be an EncodingOptions or None, got {type(options).__name__}")
        return build_encoding(domain, target, task, self.categorical, options)

    def _set_inputs(self, data: FitInput, encoding: Encoding, classes: TargetClasses | None = None) -> None:
        disc = data.discretizer
        self.__dict__.pop("coef_", None)  # a refit that fails leaves no stale coefficients
        self.encoding_ = encoding
        self.discretizer_ = disc
        self.target_ = data.target
        self.n_features_in_ = len(data.features)
        if data.named:
            self.feature_names_in_ = np.array(data.features, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.encoded_feature_names_ = np.array(
            [n for f in encoding.features for n in (f.labelled(disc.labels(f.attr)) if disc else f.names)], dtype=object
        )
        if _is_logistic(self):
            self.target_classes_ = classes
            labels = list(classes.labels) if classes is not None else [0, 1]
            self.classes_ = np.array(labels, dtype=object if classes is not None else np.int64)

    def _set_solution(self, theta: np.ndarray, encoding: Encoding) -> None:
        theta = np.asarray(theta, dtype=np.float64)
        if encoding.intercept:
            self.intercept_, self.coef_ = float(theta[0]), theta[1:].copy()
        else:
            self.intercept_, self.coef_ = 0.0, theta.copy()
        self.encoding_ = encoding

    # -- prediction ------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        check_is_fitted(self, "coef_")

    def _codes(self, X: Any) -> pd.DataFrame:
        """The feature codes of ``X`` (through the spec when the model has one)."""
        self._check_fitted()
        features = self.encoding_.feature_attrs
        table = predict_table(X, features, hasattr(self, "feature_names_in_"), self.discretizer_ is not None,
                              type(self).__name__)  # fmt: skip
        if self.discretizer_ is None or not features:
            return table
        spec = sub_discretizer(self.discretizer_, features)
        codes = spec.transform_df(table)
        if len(codes) != len(table):  # no count, no value: the message names the columns and their rules
            raise DataError(f"row(s) the spec cannot code ({drop_causes(spec.last_report)}); predictions need every row")
        return codes

    def _linear_score(self, X: Any) -> np.ndarray:
        codes = self._codes(X)  # checks the model is fitted first
        features = self.encoding_.encode_features(codes)
        if self.encoding_.intercept:
            features = features[:, 1:]
        return features @ self.coef_ + self.intercept_

    @available_if(_is_logistic)
    def decision_function(self, X: Any) -> np.ndarray:
        """The linear score x.theta + intercept of every row (log-odds of ``classes_[1]``)."""
        return self._linear_score(X)

    @available_if(lambda self: not _is_logistic(self))
    def predict_encoded(self, X: Any) -> np.ndarray:
        """Linear models: x.theta + intercept, the prediction on the encoded target scale (``encoding_``)."""
        return self._linear_score(X)

    def predict(self, X: Any) -> np.ndarray:
        """Linear: the target on its code scale. Logistic: the class (``classes_``: codes 0/1, or the spec's labels)."""
        scores = self._linear_score(X)
        if _is_logistic(self):
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.encoding_.decode_target(scores)

    @available_if(_is_logistic)
    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2) probabilities of ``classes_``: P(classes_[1]) = sigmoid(x.theta)."""
        p1 = expit(self._linear_score(X))
        return np.column_stack([1.0 - p1, p1])

    @available_if(_is_logistic)
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of `predict_proba` (computed without overflow)."""
        scores = self._linear_score(X)
        return np.column_stack([-np.logaddexp(0.0, scores), -np.logaddexp(0.0, -scores)])

    def inverse_transform_target(self, values: np.ndarray) -> np.ndarray:
        """Map values on the encoded target scale (``predict_encoded``) to the target's code scale."""
        self._check_fitted()
        return self.encoding_.decode_target(values)

    def target_codes(self, y: Any) -> np.ndarray:
        """The codes of target values ``y`` (raw values through the spec when the model has one); a logistic
        model fitted on two classes of a spec gives each value's class index, -1 for ``<other>`` / ``<missing>``."""
        self._check_fitted()
        target = self.encoding_.target
        frame = pd.DataFrame({target: np.asarray(y).ravel()})
        if self.discretizer_ is not None:
            frame = sub_discretizer(self.discretizer_, [target]).transform_df(frame)
        classes = getattr(self, "target_classes_", None)
        if classes is not None and classes.conditioned:
            return class_index(read_codes(frame, self.discretizer_.domain, [target])[target], classes)
        return read_codes(frame, self.encoding_.domain, [target])[target]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy (logistic) or R^2 on the target's code scale (linear) of the predictions of ``X`` against ``y``.

        Logistic: a true value the spec codes as ``<other>`` / ``<missing>`` is never predicted, so it
        counts as wrong (as in ``accuracy_score(y, predict(X))``)."""
        codes = self.target_codes(y)
        scores = self._linear_score(X)
        if _is_logistic(self):
            return float(accuracy_score(codes, (scores > 0).astype(np.int64), sample_weight=sample_weight))
        return float(r2_score(codes, self.encoding_.decode_target(scores), sample_weight=sample_weight))


class LinearRegressor(EncodedLinearModel, RegressorMixin, BaseEstimator):
    """Base of the linear-regression estimators."""

    _task = "linear"


class LogisticClassifier(EncodedLinearModel, ClassifierMixin, BaseEstimator):
    """Base of the logistic-regression estimators (binary: a 2-level target)."""

    _task = "logistic"
    _released_attributes = {
        "classes_": "the two classes: the public domain's codes or the spec's labels",
        "target_classes_": "the target's two classes and their codes: read off the public spec (None without one)",
    }


class ModelSelectionBudgetWarning(UserWarning):
    """A DP estimator is fitted by scikit-learn's model selection: every fit spends its own budget."""


def model_selection_caller() -> str | None:
    """The scikit-learn model-selection function this call runs under (e.g. ``_fit_and_score``), or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return frame.f_code.co_name
        frame = frame.f_back
    return None


class DPEstimator:
    """What the private baselines share (a mixin before `LinearRegressor` / `LogisticClassifier`).

    ``_guarantee`` states an approximate-DP guarantee that no zCDP `marginals.Accountant` can be
    charged for (those estimators refuse ``accountant``); "" for the zCDP ones (AdaSSP).
    """

    _guarantee = "(epsilon, delta)-DP from its own analysis"
    _released_attributes = {
        "private_": "whether the noise came from a secure source (the insecure_seed hyperparameter)",
        "privacy_": "the guarantee: the budget hyperparameters, the mechanism's name and private_",
    }

    def _check_params(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta)  # the one budget validator of marginals.privacy
        if model_selection_caller() is not None:
            warnings.warn(
                f"{type(self).__name__} is fitted by scikit-learn model selection (cross_val_score, GridSearchCV, ...): "
                f"every fit is its own (epsilon={self.epsilon:g}, delta={self.delta:g}) release of the rows it sees, and "
                "the fits compose (a 5-fold cross_val_score spends about 5 times that on every row; a grid of g "
                "candidates, g times more). Tune on public or synthetic rows, or divide the budget over the fits",
                ModelSelectionBudgetWarning, stacklevel=4,
            )  # fmt: skip
        if self._guarantee and self.accountant is not None:
            raise ValueError(
                f"{type(self).__name__}'s guarantee is {self._guarantee}, not zCDP, and no valid conversion to a zCDP "
                "charge exists; leave accountant=None and compose the (epsilon, delta) recorded in privacy_ with "
                "other releases by (epsilon, delta) composition"
            )
        super()._check_params()

    def _noise(self) -> RandomSource:
        """The published noise source: secure by default; an int seed warns and marks the fit not private."""
        rng = noise_source(self.insecure_seed, "insecure_seed")
        self.private_ = rng.private
        return rng

    def _record_privacy(self, mechanism: str, **extra: Any) -> None:
        self.privacy_ = {"epsilon": float(self.epsilon), "delta": float(self.delta), "mechanism": mechanism,
                         **extra, "private": self.private_}  # fmt: skip
