"""Evaluation metrics of the experiments: scikit-learn's, under the names the benchmarks use.

``roc_auc(y_true, scores)`` is `sklearn.metrics.roc_auc_score` (ties count 1/2; two classes, the
larger label positive) and ``mean_squared_error`` is `sklearn.metrics.mean_squared_error`.
"""

from sklearn.metrics import mean_squared_error
from sklearn.metrics import roc_auc_score as roc_auc

__all__ = ["mean_squared_error", "roc_auc"]
