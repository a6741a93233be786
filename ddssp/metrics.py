"""Evaluation metrics for the regression experiments: ROC AUC (rank-based) and mean squared error."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def roc_auc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counting 1/2.

    ``y_true`` holds two classes (0/1, or -1/+1; the larger value is the positive class).
    Computed from average ranks (Mann-Whitney U), so ties are handled exactly.
    """
    y_true = np.asarray(y_true).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if y_true.shape != scores.shape:
        raise ValueError(f"y_true has {y_true.size} values but scores has {scores.size}")
    classes = np.unique(y_true)
    if classes.size != 2:
        raise ValueError(f"roc_auc needs exactly two classes in y_true, found {classes.tolist()}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("roc_auc: scores contain non-finite values")
    positive = y_true == classes[1]
    n_pos = int(positive.sum())
    n_neg = y_true.size - n_pos
    ranks = rankdata(scores)  # average ranks for ties
    u_stat = ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u_stat / (n_pos * n_neg))


def mean_squared_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean of (y_true - y_pred)^2."""
    y_true = np.asarray(y_true, dtype=np.float64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.float64).ravel()
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} values but y_pred has {y_pred.size}")
    return float(np.mean((y_true - y_pred) ** 2))
