"""ddssp.metrics: rank-based AUC against a brute-force pair count, and MSE."""

from __future__ import annotations

import numpy as np
import pytest

from ddssp.metrics import mean_squared_error, roc_auc


def brute_force_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (pos.size * neg.size)


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 300)
    scores = np.round(rng.normal(size=300) + y, 1)  # rounding creates many ties
    assert np.isclose(roc_auc(y, scores), brute_force_auc(y, scores), rtol=0, atol=1e-12)
    assert np.isclose(roc_auc(2 * y - 1, scores), roc_auc(y, scores))  # -1/+1 labels


def test_auc_extremes_and_errors():
    assert roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert roc_auc([0, 0, 1, 1], [0.4, 0.3, 0.2, 0.1]) == 0.0
    assert roc_auc([0, 1, 0, 1], [1, 1, 1, 1]) == 0.5
    with pytest.raises(ValueError, match="exactly two classes"):
        roc_auc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="3 values but scores has 2"):
        roc_auc([0, 1, 1], [0.1, 0.2])


def test_mse():
    assert mean_squared_error([1, 2, 3], [1, 2, 5]) == pytest.approx(4 / 3)
    with pytest.raises(ValueError, match="2 values but y_pred has 3"):
        mean_squared_error([1, 2], [1, 2, 3])
