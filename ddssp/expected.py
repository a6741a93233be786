"""Logistic regression from a release's whole model: maximise the expected log-likelihood under it.

The degree-2 Chebyshev objective of DD-SSP depends on the data only through X^T X and X^T y, and
without a penalty its maximiser is a multiple of least squares (-b1 / (2 b2) (X^T X)^-1 X^T y),
so it ranks rows like a linear probability model. A released model answers more than pairs: it
is a distribution P over every attribute. This module fits the logistic regression that is best
*under P*,

    theta* = argmax_theta  E_{(x, y) ~ P} [ log sigmoid(y theta.x) ],

by damped Newton in the space of marginals (`fit_soft_logistic`). The expectation over the features is a Monte
Carlo average over ``n_samples`` rows drawn from the model; the expectation over the target is
exact given each drawn row (Rao-Blackwellised): the model is P(x) ∝ exp(sum_C psi_C(x_C)), so
P(y | every other attribute) = softmax over y of the sum of the log-potentials of the cliques that
hold the target. By the tower rule, conditioning on all attributes (also those the regression does
not use, e.g. a `ReleaseView`'s dropped ones) keeps the average unbiased. A fit conditioned on two
classes of a spec (`ddssp.target_levels`) weights each row by P(y in classes | x) and uses the
class-conditional probability as its soft label.

Soft labels in (0, 1) keep the problem strictly convex along every live direction, so no level can
separate the classes; features absent from every drawn row get coefficient 0. Everything here reads
the released model only (post-processing); the draws take ``random_state``, a seed that is safe
because the model is public. On a `marginals.Dataset` (exact rows: the non-private reference) the
same objective is the ordinary maximum likelihood on the rows.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit, softmax

from marginals import Dataset
from marginals.randomness import SamplingSeed, sampling_rng
from pgm.kernels.blas import blas_single_threaded

from .encoding import Encoding
from .solvers import damped_newton
from .statistics import gram_from_marginals
from .target_levels import ClassMarginals, TargetClasses

#: default number of rows drawn from the model (Monte Carlo error of theta ~ 1/sqrt(n_samples)).
DEFAULT_SAMPLES = 200_000


def released_model(source: Any) -> tuple[Any, TargetClasses | None]:
    """The fitted `pgm.Model` behind a release, a release view, a class-conditioned release or a
    model, and the target classes it is conditioned on (None); TypeError for other sources."""
    classes = None
    if isinstance(source, ClassMarginals):
        source, classes = source.source, source.classes
    model = getattr(source, "model", source)
    if not hasattr(model, "potentials") or not hasattr(model, "synthetic_data"):
        raise TypeError(
            f"objective='expected' needs a fitted model (an AIM release, a view of one, or a pgm.Model) or a "
            f"marginals.Dataset, got {type(source).__name__}"
        )
    return model, classes


def target_probabilities(model: Any, target: str, rows: pd.DataFrame) -> np.ndarray:
    """(n, m) P(target = level | all other attributes of each row) under ``model``'s log-potentials."""
    levels = int(model.domain[target])
    logits = np.zeros((len(rows), levels))
    for clique, factor in model.potentials.items():
        if target not in clique:
            continue
        table = np.moveaxis(factor.values, clique.index(target), -1)  # other attributes first, target last
        others = [rows[a].to_numpy(dtype=np.intp) for a in clique if a != target]
        logits += table[tuple(others)] if others else table[None, :]
    return softmax(logits, axis=1)


def soft_labels(model: Any, target: str, rows: pd.DataFrame,
                classes: TargetClasses | None) -> tuple[np.ndarray, np.ndarray]:
    """(weight, q) per row: P(y in classes | x) (1 without classes) and P(y = positive class | x, y in classes)."""
    probs = target_probabilities(model, target, rows)
    negative, positive = (0, 1) if classes is None else classes.codes
    mass = probs[:, negative] + probs[:, positive]
    q = np.divide(probs[:, positive], mass, out=np.full(len(rows), 0.5), where=mass > 0)
    return (np.ones(len(rows)) if classes is None else mass), q


class _WeightedRows:
    """Rows with per-call weights as a marginal source (what `gram_from_marginals` reads)."""

    def __init__(self, table: Dataset, weights: np.ndarray) -> None:
        self.table, self.weights, self.domain = table, weights, table.domain

    @property
    def total(self) -> float:
        return float(self.weights.sum())

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return self.table.marginals(cliques, weights=self.weights)


def _scores(codes: dict[str, np.ndarray], encoding: Encoding, theta: np.ndarray) -> np.ndarray:
    """x_i.theta of every row without forming X: each attribute adds its level's value A_j^T theta_j."""
    start = 1 if encoding.intercept else 0
    z = np.full(len(next(iter(codes.values()))), theta[0] if encoding.intercept else 0.0)
    for f in encoding.features:
        z += (f.matrix.T @ theta[start : start + f.width])[codes[f.attr]]
        start += f.width
    return z


def _encoded_sums(codes: dict[str, np.ndarray], encoding: Encoding, r: np.ndarray) -> np.ndarray:
    """sum_i r_i x_i from one weighted count per attribute level."""
    parts = [np.array([r.sum()])] if encoding.intercept else []
    parts += [f.matrix @ np.bincount(codes[f.attr], weights=r, minlength=f.matrix.shape[1]) for f in encoding.features]
    return np.concatenate(parts) if parts else np.zeros(0)


def fit_soft_logistic(table: Dataset, encoding: Encoding, weight: np.ndarray, q: np.ndarray, l2: float = 0.0,
                      tol: float = 1e-14, max_iter: int = 100) -> np.ndarray:
    """argmax of sum_i w_i [q_i log sigmoid(x_i.theta) + (1 - q_i) log sigmoid(-x_i.theta)] / sum_i w_i
    - (l2 / 2) ||theta||^2 over ``table``'s rows.

    Damped Newton (`ddssp.solvers.damped_newton`) in the space of marginals: scores by table look-up, the
    gradient from weighted one-way counts, the Hessian X^T diag(w s (1 - s)) X from weighted pairwise
    marginals (`gram_from_marginals`, the DD-SSP statistics), so no n x p matrix is formed; levels no
    row holds keep coefficient 0 (the minimum-norm optimum)."""
    share = weight / weight.sum()
    codes = {f.attr: table.column(f.attr).astype(np.intp) for f in encoding.features}
    p = encoding.n_features

    def value_grad(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        z = _scores(codes, encoding, theta)
        s = expit(z)
        value = float(share @ (np.logaddexp(0.0, -z) + (1.0 - q) * z)) + 0.5 * l2 * float(theta @ theta)
        return value, _encoded_sums(codes, encoding, share * (s - q)) + l2 * theta, s

    def hessian(theta: np.ndarray, s: np.ndarray) -> np.ndarray:
        return gram_from_marginals(_WeightedRows(table, share * s * (1.0 - s)), encoding)[0][:p, :p] + l2 * np.eye(p)

    return damped_newton(value_grad, hessian, p, tol, max_iter)


@blas_single_threaded  # small Hessians: BLAS threads only contend (pgm.kernels.blas)
def expected_logistic(source: Any, encoding: Encoding, n_samples: int = DEFAULT_SAMPLES,
                      random_state: SamplingSeed = None, alpha: float = 0.0) -> np.ndarray:
    """Coefficients maximising N times the expected log-likelihood under ``source`` minus (alpha/2)||theta||^2
    (N: the source's total of the fit's rows; see the module docstring)."""
    if isinstance(source, Dataset):
        table = source.project(encoding.feature_attrs + (encoding.target,))
        y = table.column(encoding.target)
        weight = np.ones(len(table)) if source.weights is None else np.asarray(source.weights, dtype=np.float64)
        return fit_soft_logistic(table, encoding, weight, (y == 1).astype(np.float64), alpha / weight.sum())
    model, classes = released_model(source)
    rows = model.synthetic_data(int(n_samples), sampling_rng(random_state))
    weight, q = soft_labels(model, encoding.target, rows, classes)
    columns = {a: rows[a] for a in encoding.feature_attrs}
    columns[encoding.target] = np.zeros(len(rows), dtype=np.int64)  # unused by the Hessian's feature block
    table = Dataset(pd.DataFrame(columns), encoding.domain.project(encoding.feature_attrs + (encoding.target,)))
    total = model.total * float(weight.mean())  # the (noisy, public) count of the fit's rows
    return fit_soft_logistic(table, encoding, weight, q, alpha / max(total, 1.0))
