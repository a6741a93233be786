"""Regression from released marginals (DD-SSP), AIM-Synth and the DP baselines.

Pipeline position: a release (or any marginal source) -> `statistics` (Z^T Z from pairwise
marginals, through the `encoding` matrices A_j) -> `estimators` (DD-SSP linear/logistic).
`baselines` fit on the private rows directly (AdaSSP, ObjPert, TukeyEM, PMT, non-private references).
Every estimator is a scikit-learn estimator (`base`): ``fit(release)``, ``fit(table)`` or
``fit(X, y)`` with a public domain (`inputs`), then ``predict`` / ``score``.
"""

from . import baselines as _baselines
from .baselines import (
    AdaSSP,
    ModelSelectionBudgetWarning,
    MonotoneWeightsWarning,
    ObjPert,
    PMTLinearRegression,
    PMTLogisticRegression,
    PTRFailedWarning,
    PublicLinearRegression,
    PublicLogisticRegression,
    PublicMomentWarning,
    TukeyEM,
)
from .chebyshev import chebyshev_coefficients, log_sigmoid, monomial_coefficients, numerical_recipes_coefficients
from .encoding import (
    CATEGORICAL_PRESETS,
    INTERCEPT,
    AttributeEncoding,
    Encoding,
    EncodingDefaultWarning,
    EncodingOptions,
    build_encoding,
    categorical_preset,
)
from .estimators import AIMSynth, DDSSPLinearRegression, DDSSPLogisticRegression
from .metrics import mean_squared_error, roc_auc
from .solvers import CollinearityWarning
from .statistics import (
    InferredPairsWarning,
    SufficientStatistics,
    gram_from_marginals,
    statistics_from_frame,
    sufficient_statistics,
)

__all__ = [
    *_baselines.__all__,
    "AIMSynth",
    "AttributeEncoding",
    "CATEGORICAL_PRESETS",
    "CollinearityWarning",
    "DDSSPLinearRegression",
    "DDSSPLogisticRegression",
    "Encoding",
    "EncodingDefaultWarning",
    "EncodingOptions",
    "INTERCEPT",
    "InferredPairsWarning",
    "SufficientStatistics",
    "build_encoding",
    "categorical_preset",
    "chebyshev_coefficients",
    "gram_from_marginals",
    "log_sigmoid",
    "mean_squared_error",
    "monomial_coefficients",
    "numerical_recipes_coefficients",
    "roc_auc",
    "statistics_from_frame",
    "sufficient_statistics",
]
