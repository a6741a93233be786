"""DD-SSP on a release made for its regression: the plan of AIM's Newton refinement (`aim.analysis`) and
the coefficients and intervals it gives. Post-processing only: the release's model and its analysis
record (noisy gradients at public points), never a row.

Plan (`NewtonPlanMixin`, called by AIM after its final model): the regression's `RegressionSpec`
(the estimator's encoding, the target's values; a logistic target's pseudo-levels left out), its
start theta_0 (linear: DD-SSP; logistic: the expected-log-likelihood fit, `ddssp.expected`), and
each next point theta_{k+1} = theta_k - shrink(H(theta_k)^-1 g_k), where g_k is the noisy gradient
at theta_k (the gradient at theta_0 plus the difference theta_0 -> theta_k, plus the public penalty's
`PENALTY` theta), H the model's Hessian of the penalised loss (linear: X^T X from its marginals;
logistic: sum of sigmoid'(x.theta) x x^T over rows drawn from the model with a fixed public seed;
plus `PENALTY` on the diagonal but the intercept's), and shrink the
positive-part James-Stein factor max(0, 1 - sd_j^2 / step_j^2) per coefficient (sd_j: the step's
noise sd), so a step that is mostly noise does not move the next point (whose sensitivity grows with
the step).

Intervals (`refined_fit`): around theta = theta_{K-1} - H(theta_{K-1})^-1 g_{K-1}, the last Newton
step, unshrunk. Its error is -H^-1 e (e: the last gradient's noise, variance sigma_{K-1}^2 for a fresh
gradient, sigma_0^2 + sigma_{K-1}^2 for a difference) plus (I - H^-1 H_rows)(theta_{K-1} - theta_rows):
the model's Hessian differs from the rows' on the pairs it inferred, and each step multiplies that
error by the same contraction. The interval is the normal one from the noise, H^-1 (sigma^2 I) H^-1;
the second term is what the steps are for (benchmarks/results/analysis_coverage: coverage and width
against the spread). That unbiased estimate is noisy where the rows are few, so ``coef_`` (and every
prediction) is the last measured point theta_{K-1} instead, whose steps were shrunk where they were
noise: better predictions (test MSE and AUC in the same results), an interval not centred on it.
"""

from __future__ import annotations

import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from scipy.special import expit

from marginals.gradients import NoisyStatistic, RegressionSpec
from marginals.randomness import sampling_rng

from .encoding import Encoding
from .expected import released_model, soft_labels
from .statistics import InferredPairsWarning, sufficient_statistics
from .target_levels import TargetClasses

#: Newton steps per loss (one measured statistic each) and the share of the analysis budget the first
#: (the gradient) gets, the rest split equally among the later ones. Pilots (16-20 releases at eps 1,
#: share 0.3; benchmarks/analysis_coverage.py): linear on acs-income-lin, 1 step covers 85% (the
#: model's Hessian leaves a bias), 2 steps 89-90%; logistic on acs-employment, 3 steps 82%, 4 steps
#: 83% with a trust region of 1 and 84.5% with 0.5 (of 3: 78%). The model's Hessian is off the rows'
#: by factors 0.2-1.8 along some directions (contraction up to 0.8 per step), so logistic steps
#: converge slowly: 6 steps cover 86.9 / 86.0 / 85.4% at eps 0.5 / 1 / 4 (50 releases each, against
#: 84.7 / 84.0 / 83.9% with 4), at a cost of 0.001-0.002 AUC for ``coef_``; re-running the analysis on
#: 16 saved eps-4 releases x 2 noise draws, 10 steps covered 86.6% against 87.4% for 6 (each step's
#: share gets smaller), and an active-set trust region (clipped coordinates fixed, the rest re-solved)
#: 85.6%.
STEPS = {"linear": 2, "logistic": 6}
FIRST_SHARE = {"linear": 0.8, "logistic": 0.3}
#: the refined fit's L2 penalty (in rows) on every coefficient but the intercept: its estimand is the
#: private rows' fit with this penalty (negligible beside thousands of rows, except on levels the
#: rows separate, whose unpenalised logistic coefficient is infinite), and levels the model gives no
#: mass stay solvable.
PENALTY = 1.0
#: rows drawn from the model for a logistic Hessian, and their public seed (post-processing of the
#: public model, so the seed is no secret; fixed so that the refined estimate is a function of the release).
HESSIAN_SAMPLES = 100_000
HESSIAN_SEED = 20261128


#: the largest move of one coefficient between two measured points (a trust region: the model's Hessian
#: can be far from the rows' where the model puts too little mass, and a logistic Newton step from a
#: saturated coefficient can overshoot by orders of magnitude).
MAX_STEP = {"linear": 1.0, "logistic": 0.5}
#: the plan's own fit per release (weak keys: gone with the release).
_PLAN_FITS: "weakref.WeakKeyDictionary[Any, tuple[Any, Any]]" = weakref.WeakKeyDictionary()


class AnalysisMismatchWarning(UserWarning):
    """The release was refined for another regression: the fit ignores its analysis."""


def regression_spec(encoding: Encoding, kind: str, classes: TargetClasses | None) -> RegressionSpec:
    """The public `RegressionSpec` of an encoded regression (a logistic target's non-class levels excluded)."""
    values = np.asarray(encoding.target_encoding.matrix[0], dtype=np.float64)
    if classes is not None and classes.conditioned:
        full = np.full(classes.levels, np.nan)
        full[list(classes.codes)] = values
        values = full
    features = tuple((f.attr, np.asarray(f.matrix)) for f in encoding.features)
    return RegressionSpec(kind, encoding.target, features, values, encoding.intercept)


def same_spec(a: RegressionSpec, b: RegressionSpec) -> bool:
    """Whether two specs name the same regression (loss, target, encoding)."""
    if (a.kind, a.target, a.intercept, [f for f, _ in a.features]) != (b.kind, b.target, b.intercept, [f for f, _ in b.features]):
        return False
    if not all(m.shape == n.shape and np.allclose(m, n) for (_, m), (_, n) in zip(a.features, b.features)):
        return False
    return a.target_values.shape == b.target_values.shape and np.allclose(a.target_values, b.target_values, equal_nan=True)


def penalty_vector(encoding: Encoding) -> np.ndarray:
    """`PENALTY` for every coefficient but the intercept."""
    out = np.full(encoding.n_features, PENALTY)
    if encoding.intercept:
        out[0] = 0.0
    return out


def model_hessian(source: Any, encoding: Encoding, kind: str, theta: np.ndarray) -> np.ndarray:
    """The penalised loss's Hessian at ``theta`` under the released model (see the module docstring)."""
    if kind == "linear":
        with warnings.catch_warnings():  # inferred pairs: the steps correct their bias, the fit already warned
            warnings.simplefilter("ignore")
            gram = sufficient_statistics(source, encoding).XtX
    else:
        model, classes = released_model(source)
        rows = model.synthetic_data(HESSIAN_SAMPLES, sampling_rng(HESSIAN_SEED))
        weight, _ = soft_labels(model, encoding.target, rows, classes)
        X = encoding.encode_features(rows)
        p = expit(X @ theta)
        w = weight * p * (1 - p) * (model.total / len(rows))
        gram = (X * w[:, None]).T @ X
    return gram + np.diag(penalty_vector(encoding))


def gradient_estimate(statistics: Sequence[NoisyStatistic], theta: np.ndarray, penalty: np.ndarray) -> tuple[np.ndarray, float]:
    """(the noisy gradient of the penalised loss at the last point ``theta``, its per-coordinate noise variance)."""
    first, last = statistics[0], statistics[-1]
    if last.kind == "gradient":  # measured at the last point itself (the first statistic, or a fresh gradient)
        return last.values + penalty * theta, last.sigma**2
    return first.values + last.values + penalty * theta, first.sigma**2 + last.sigma**2


def newton_step(hessian: np.ndarray, grad: np.ndarray, variance: float) -> tuple[np.ndarray, np.ndarray]:
    """(H^-1 g, the covariance of its noise variance * H^-1 H^-1)."""
    inverse = np.linalg.inv(hessian)
    inverse = (inverse + inverse.T) / 2
    return inverse @ grad, variance * inverse @ inverse


def shrunk(step: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """The positive-part James-Stein shrinkage of each coordinate of ``step`` towards 0 (noise sd ``sd``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(step != 0, np.maximum(0.0, 1.0 - (sd / np.abs(step)) ** 2), 0.0)
    return step * factor


@dataclass(frozen=True, eq=False)
class RefinedFit:
    """A refined fit (coefficients intercept first when present): ``theta`` the last Newton step, unshrunk
    (the intervals' centre: unbiased to first order), its noise ``covariance``, and ``point``, the last
    measured point (every step shrunk where it is noise: the estimate ``coef_`` and predictions use)."""

    theta: np.ndarray
    covariance: np.ndarray
    point: np.ndarray
    record: Any  # the release's `aim.analysis.AnalysisRecord`

    def interval(self, alpha: float = 0.1) -> np.ndarray:
        """(p, 2) normal intervals of nominal coverage 1 - alpha from the noise covariance."""
        z = scipy_stats.norm.ppf(1 - alpha / 2)
        half = z * np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))
        return np.column_stack([self.theta - half, self.theta + half])


def refined_fit(record: Any, source: Any, encoding: Encoding) -> RefinedFit:
    """The last Newton step of ``record`` (see the module docstring) with the model of ``source``."""
    theta = record.points[-1]
    grad, variance = gradient_estimate(record.statistics, theta, penalty_vector(encoding))
    step, covariance = newton_step(model_hessian(source, encoding, record.spec.kind, theta), grad, variance)
    return RefinedFit(theta - step, covariance, theta, record)


def next_point(source: Any, encoding: Encoding, spec: RegressionSpec, points: Sequence[np.ndarray],
               statistics: Sequence[NoisyStatistic]) -> np.ndarray:  # fmt: skip
    """theta_{k+1} from theta_k = points[-1] and the statistics measured so far (a shrunk Newton step)."""
    grad, variance = gradient_estimate(statistics, points[-1], penalty_vector(encoding))
    step, covariance = newton_step(model_hessian(source, encoding, spec.kind, points[-1]), grad, variance)
    step = shrunk(step, np.sqrt(np.clip(np.diag(covariance), 0.0, None)))
    return points[-1] - np.clip(step, -MAX_STEP[spec.kind], MAX_STEP[spec.kind])


class NewtonPlanMixin:
    """The DD-SSP estimators' side of ``AIM(...).run(rows, analysis=estimator)`` (see the module docstring)."""

    def _plan_fit(self, release: Any) -> Any:
        """A copy of this estimator fitted to ``release`` without any analysis (its encoding and start; the
        fit is kept for the release's next calls)."""
        from sklearn.base import clone

        cached = _PLAN_FITS.get(release)
        if cached is not None and cached[0] is self:
            return cached[1]
        plain = clone(self).set_params(analysis="ignore", interval=None)
        if getattr(plain, "_task", "linear") == "logistic":
            plain.set_params(objective="expected", random_state=HESSIAN_SEED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = plain.fit(release)
        _PLAN_FITS[release] = (self, fitted)
        return fitted

    def analysis_plan(self, release: Any) -> tuple[RegressionSpec, int, float]:
        """(the regression's spec, Newton steps, the gradient's share of the analysis budget)."""
        fitted = self._plan_fit(release)
        kind = fitted._task
        return regression_spec(fitted.encoding_, kind, getattr(fitted, "target_classes_", None)), STEPS[kind], FIRST_SHARE[kind]

    def analysis_point(self, release: Any, spec: RegressionSpec, points: Sequence[np.ndarray],
                       statistics: Sequence[NoisyStatistic]) -> np.ndarray:  # fmt: skip
        """theta_0 (no statistics yet: this estimator's fit on ``release``), else the next point."""
        fitted = self._plan_fit(release)
        if not points:
            return np.concatenate([[fitted.intercept_], fitted.coef_]) if fitted.encoding_.intercept else fitted.coef_
        return next_point(_fit_source(fitted, release), fitted.encoding_, spec, points, statistics)

    def _apply_analysis(self, source: Any, encoding: Encoding) -> None:
        """Replace the fit by the release's refined estimate when the release was made for this regression."""
        self.analysis_ = None
        if self.analysis not in ("auto", "ignore"):
            raise ValueError(f"analysis must be 'auto' or 'ignore', got {self.analysis!r}")
        if self.analysis == "ignore":
            return
        from .target_levels import unconditioned

        record = getattr(unconditioned(source), "analysis", None)
        if record is None:
            return
        mine = regression_spec(encoding, self._task, getattr(self, "target_classes_", None))
        if not same_spec(mine, record.spec):
            warnings.warn(
                f"the release was refined for a {record.spec.kind} regression of {record.spec.target!r} on "
                f"{[a for a, _ in record.spec.features]} with its own encoding; this fit is another regression, so "
                "it ignores that analysis (fit the same estimator settings, or analysis='ignore' to silence this)",
                AnalysisMismatchWarning, stacklevel=4,
            )  # fmt: skip
            return
        if getattr(self, "interval", None) is not None:
            raise ValueError("this release was refined for this regression: its intervals come from the analysis "
                             "(conf_int()); leave interval=None")  # fmt: skip
        fit = refined_fit(record, source, encoding)
        self.analysis_, self.bootstrap_ = fit, None
        self._set_solution(fit.point, encoding)
        self.coef_interval_ = self.conf_int().to_numpy()


@contextmanager
def refined_warnings(estimator: Any):
    """Hold the fit's warnings until it knows whether the release's analysis refined it: a refined fit
    drops `InferredPairsWarning` (its Newton steps correct the inferred pairs' bias), others pass on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    refined = getattr(estimator, "analysis_", None) is not None
    for w in caught:
        if not (refined and issubclass(w.category, InferredPairsWarning)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _fit_source(fitted: Any, release: Any) -> Any:
    """The marginal source ``fitted`` was fitted on (a logistic fit conditioned on its target's classes)."""
    classes = getattr(fitted, "target_classes_", None)
    if classes is None:
        return release
    from .target_levels import condition_on_classes

    return condition_on_classes(release, classes)


def refined_frame(fit: RefinedFit, names: Sequence[str], intercept: bool, alpha: float) -> pd.DataFrame:
    """The coefficients' intervals as `conf_int` returns them."""
    out = fit.interval(alpha)
    out = out[1:] if intercept else out
    return pd.DataFrame(out, index=pd.Index(list(names), name="feature"), columns=["lower", "upper"])


def penalised_fit(table: Any, encoding: Encoding, kind: str, iters: int = 100) -> np.ndarray:
    """The estimand of a refined fit: the penalised fit (`PENALTY`) on the rows of ``table`` (a
    `marginals.Dataset`; NOT private: for tests and benchmarks), intercept first when present."""
    df = table.to_df()
    X, y = encoding.encode_features(df), encoding.encode_target(df)
    penalty = penalty_vector(encoding)
    if kind == "linear":
        return np.linalg.solve(X.T @ X + np.diag(penalty), X.T @ y)
    theta, t = np.zeros(X.shape[1]), (y + 1) / 2
    for _ in range(iters):
        p = expit(X @ theta)
        step = np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X + np.diag(penalty + 1e-12), X.T @ (p - t) + penalty * theta)
        theta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta
