"""Machine-learning efficacy, train on synthetic and test on real (NOT private: it reads the real
rows). One scikit-learn model per training set — logistic regression for a categorical target,
linear regression for a numeric one (on its bin midpoints) — over the one-hot codes of every
other attribute, each scored on the same held-out real rows, beside a constant baseline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from marginals.dataset import Dataset
from marginals.spec.columns import MISSING_LABEL, OTHER_LABEL

from .types import Efficacy

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release


def ml_efficacy(release: "Release", real: Dataset, target: str, labels: Sequence[str],
                synthetic: pd.DataFrame | None = None, seed: int = 0, test_share: float = 0.3) -> Efficacy:
    """Scores of a model trained on ``synthetic`` codes (default: the release's rows) and of one
    trained on a split of the ``real`` codes, both on the other real rows. ``labels``: the target's."""
    from sklearn.preprocessing import OneHotEncoder

    domain = release.domain
    if target not in domain:
        raise ValueError(f"target {target!r} is not an attribute of the release ({', '.join(domain.attrs)})")
    if len(domain) < 2:
        raise ValueError("ML efficacy needs at least one attribute besides the target")
    features = [a for a in domain.attrs if a != target]
    synth = release.synthetic_codes(rng=seed) if synthetic is None else synthetic
    rows = real.to_df()
    order = np.random.default_rng(seed).permutation(len(rows))
    cut = int(round(len(rows) * (1 - test_share)))
    train, test = rows.iloc[order[:cut]], rows.iloc[order[cut:]]
    if len(train) < 2 or len(test) < 2:
        raise ValueError(f"ML efficacy needs more real rows than {len(rows)}")
    encoder = OneHotEncoder(categories=[list(range(domain[a])) for a in features], handle_unknown="ignore")
    encoder.fit(np.zeros((1, len(features)), dtype=int))
    numeric = _midpoints(release, target)
    sets = [(frame[features].to_numpy(), frame[target].to_numpy()) for frame in (synth, train, test)]
    if numeric is not None:
        sets = [(x[~np.isnan(numeric[y])], numeric[y][~np.isnan(numeric[y])]) for x, y in sets]
    (xs, ys), (xr, yr), (xt, yt) = [(encoder.transform(x), y) for x, y in sets]
    score = _regression if numeric is not None else _classification
    scores, notes = score((xs, ys), (xr, yr), (xt, yt), labels)
    return Efficacy(target, "classification" if numeric is None else "regression", len(encoder.get_feature_names_out()),
                    len(ys), len(yr), len(yt), scores, notes)


def _midpoints(release: "Release", target: str) -> np.ndarray | None:
    """Value of each code of a numeric spec column (bin midpoints; NaN for a missing level), else None."""
    column = (release.spec or {}).get("columns", {}).get(target)
    if column is None or column.get("type") != "numeric":
        return None
    edges = np.asarray(column["edges"], dtype=float)
    values = np.full(release.domain[target], np.nan)
    values[: len(edges) - 1] = (edges[:-1] + edges[1:]) / 2
    return values


def _classification(synth: tuple, real: tuple, test: tuple, labels: Sequence[str]) -> tuple[list, list[str]]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, roc_auc_score

    x_test, y_test = test
    majority = np.bincount(real[1]).argmax()
    regular = [label for label in labels if label not in (OTHER_LABEL, MISSING_LABEL)]  # <other>/<missing>: spec levels
    binary = len(regular) == 2 and list(labels[:2]) == regular and set(np.unique(y_test)) == {0, 1}
    accuracy, auc, notes = [], [], []
    for name, (x, y) in (("synthetic", synth), ("real", real)):
        if len(np.unique(y)) < 2:
            notes.append(f"the {name} training rows hold one class of the target only: a constant prediction")
            constant = y[0] if len(y) else majority
            accuracy.append(float(np.mean(y_test == constant)))
            auc.append(0.5)
            continue
        model = LogisticRegression(max_iter=2000).fit(x, y)
        accuracy.append(accuracy_score(y_test, model.predict(x_test)))
        if binary:
            positive = list(model.classes_).index(1) if 1 in model.classes_ else None
            proba = None if positive is None else model.predict_proba(x_test)[:, positive]
            auc.append(0.5 if proba is None else roc_auc_score(y_test == 1, proba))
    scores = [("accuracy", *accuracy, float(np.mean(y_test == majority)))]
    if binary:
        scores.append((f"ROC AUC ({labels[1]} vs {labels[0]})", *auc, 0.5))
    return scores, notes


def _regression(synth: tuple, real: tuple, test: tuple, labels: Sequence[str]) -> tuple[list, list[str]]:
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import mean_squared_error, r2_score

    x_test, y_test = test
    r2, rmse = [], []
    for x, y in (synth, real):
        predicted = LinearRegression().fit(x, y).predict(x_test)
        r2.append(r2_score(y_test, predicted))
        rmse.append(float(np.sqrt(mean_squared_error(y_test, predicted))))
    constant = np.full(len(y_test), float(np.mean(real[1])))
    notes = ["the target's values are its bin midpoints (the release holds bins)"]
    return ([("R^2", *r2, r2_score(y_test, constant)),
             ("RMSE", *rmse, float(np.sqrt(mean_squared_error(y_test, constant))))], notes)
