"""DD-SSP linear and logistic regression from marginals, and AIM-Synth (regression on synthetic rows).

DD-SSP (Ferrando & Sheldon, Alg. 1) reads X^T X and X^T y off pairwise marginals and solves
the regression from them: pure post-processing of whatever released the marginals, so it
spends no privacy of its own. AIM-Synth instead samples a synthetic table from the release
and fits ordinary (non-private) regression to it.

Example:
    >>> from marginals.datasets import demo_dataset
    >>> data = demo_dataset(2000)
    >>> model = DDSSPLinearRegression(target="income").fit(data)
    >>> model.predict(data.to_df()).shape
    (2000,)
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

from sklearn.utils import ClassifierTags

from marginals import Dataset
from marginals.randomness import SamplingSeed, sampling_rng
from marginals.source import ModelSource, implements, implements_member

from .base import LinearRegressor, LogisticClassifier
from .bayes.intervals import CoefficientIntervalMixin
from .chebyshev import chebyshev_coefficients, log_sigmoid, monomial_coefficients
from .encoding import Encoding, EncodingOptions
from .expected import DEFAULT_SAMPLES, expected_logistic
from .inputs import DomainLike
from .newton import NewtonPlanMixin, refined_warnings
from .solvers import DEFAULT_RIDGE, fit_encoded, quadratic_logistic_solution, solve_normal_equations
from .statistics import sufficient_statistics
from .target_levels import unconditioned

#: DDSSPLogisticRegression's objectives: the paper's degree-2 surrogate, or the model's expected log-likelihood.
OBJECTIVES = ("chebyshev", "expected")

#: What a DD-SSP fit holds besides ``coef_`` & co.: all read off its source, so on a release all of it is
#: post-processing of the release (on private rows DD-SSP claims no privacy at all).
DDSSP_RELEASED = {
    "statistics_": "X^T X, X^T y, y^T y and n read off the source's marginals: post-processing of the release",
    "bootstrap_": "the bootstrap replicates (None without interval): post-processing of the release",
    "coef_interval_": "the coefficient intervals (with interval set): post-processing of the release",
    "inferred_target_pairs_": "(with interval set) features whose pair with the target lies in no model clique: "
                              "from the release's public cliques",
    "analysis_": "the refined estimate from the release's analysis record (None without one): post-processing of the "
                 "release (its noisy gradients at public points and its model)",
}


class DDSSPLinearRegression(NewtonPlanMixin, CoefficientIntervalMixin, LinearRegressor):
    """Linear regression theta = (X^T X + ridge I)^-1 X^T y with X^T X, X^T y from marginals.

    Fit on a release (or any marginal source: exact marginals of a `Dataset`), on a DataFrame of
    codes holding the target, or on ``X, y``; with a public ``domain`` for tables (`ddssp.inputs`).

    Args:
        target: the attribute to predict (encoded numerically, [-1, 1] by default); with
            ``fit(X, y)`` it may be None (then y's name, or "y").
        categorical: one-hot attributes, all others numeric (None: the domain's ordinal attributes numeric, the
            others one-hot; every feature one-hot, warning `EncodingDefaultWarning`, when it says nothing about order).
        encoding: `EncodingOptions` (reference level, numeric scaling, intercept).
        ridge: added to the diagonal of X^T X; the default 1e-12 is absolute, like the paper's
            code, and only guards exact singularity (see `ddssp.solvers`).
        interval: None, or coefficient intervals on an AIM release by a parametric bootstrap
            (`ddssp.bayes.intervals`): "mechanism" (AIM rerun on rows drawn from the released model;
            n_boot AIM runs) or "measurements" (fast: raw measurement noise on the measured blocks;
            conservative in sparse tables). They do not cover the model's bias on pairs AIM never measured.
        n_boot, interval_alpha, interval_kind: bootstrap replicates, nominal level 1 - interval_alpha,
            "bias_aware", "basic" or "percentile".
        random_state: seed of the bootstrap (post-processing of the public release, so a seed is safe).
        progress: with interval="mechanism", report each AIM rerun on stderr (a tqdm bar on a terminal
            with the ``progress`` extra, plain lines otherwise; counts only, no times).
        domain: the public domain of tabular input: a `Domain`, a `Discretizer` or an int number of levels.
        analysis: "auto" (default): on a release made for this regression (``AIM(...).run(rows,
            analysis=estimator)``, `aim.analysis`), the coefficients are its Newton-refined estimate of the
            private rows' (lightly penalised) fit and ``conf_int()`` gives normal intervals from its noise
            (`ddssp.newton`); "ignore": fit the release's model only.

    Learned: ``coef_``, ``intercept_`` (0.0 without an intercept column), ``encoded_feature_names_``,
    ``n_features_in_``, ``feature_names_in_``, ``encoding_``, ``discretizer_``, ``statistics_`` (X^T X,
    X^T y, y^T y, n read off the marginals); with ``interval`` set also ``bootstrap_`` and
    ``coef_interval_`` (the (len(coef_), 2) array of ``conf_int()``, a DataFrame indexed by
    ``encoded_feature_names_``).
    """

    def __init__(
        self, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, ridge: float = DEFAULT_RIDGE, interval: str | None = None,
        n_boot: int = 50, interval_alpha: float = 0.1, interval_kind: str = "bias_aware",
        random_state: SamplingSeed = None, progress: bool = True, domain: DomainLike = None, analysis: str = "auto",
    ) -> None:  # fmt: skip
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.analysis = analysis
        self.ridge = ridge
        self.interval = interval
        self.n_boot = n_boot
        self.interval_alpha = interval_alpha
        self.interval_kind = interval_kind
        self.random_state = random_state
        self.progress = progress
        self.domain = domain

    _released_attributes = DDSSP_RELEASED

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        with refined_warnings(self):
            self.statistics_ = sufficient_statistics(source, encoding)
            self._set_solution(solve_normal_equations(self.statistics_.XtX, self.statistics_.Xty, self.ridge), encoding)
            self._apply_analysis(source, encoding)
        if self.analysis_ is None:
            self._fit_intervals(source)


class DDSSPLogisticRegression(NewtonPlanMixin, CoefficientIntervalMixin, LogisticClassifier):
    """Logistic regression from a release: a degree-2 Chebyshev approximation of the log-likelihood
    (``objective="chebyshev"``, the paper's) or the exact log-likelihood expected under the released
    model (``objective="expected"``, `ddssp.expected`).

    With y in {-1, +1} the approximation is n b0 + b1 theta.X^T y + b2 theta^T X^T X theta
    (b: monomial coefficients of log sigmoid on [-radius, radius]), maximised in closed form
    theta = -b1/(2 b2) (X^T X + (ridge + alpha/(-2 b2)) I)^-1 X^T y: a multiple of least squares.

    Args:
        target: a 2-level attribute; code 1 is the positive class (``classes_[1]``).
        categorical, encoding, domain: as for `DDSSPLinearRegression`.
        objective: "chebyshev" (pairwise marginals only) or "expected" (Newton on the expected
            log-likelihood under the release's model: ``n_samples`` feature rows drawn from it, the
            target's conditional probability exact given each row; needs a release or a model, and
            on a `marginals.Dataset` it is the maximum likelihood on the rows). ``degree``, ``radius``,
            ``method`` and ``ridge`` apply to "chebyshev" only.
        n_samples: rows drawn from the model for objective="expected".
        degree: polynomial degree; only 2 is supported (higher degrees need moments of order
            > 2, which pairwise marginals do not determine).
        radius: the approximation interval [-radius, radius] (paper: 6).
        method: "interpolation" (at Chebyshev nodes, as the paper) or "projection".
        alpha: L2 penalty (alpha/2)||theta||^2 subtracted from the (approximate or expected) log-likelihood
            of all rows.
        ridge: numerical safeguard added to X^T X (default 1e-12, absolute).
        interval, n_boot, interval_alpha, interval_kind, random_state, progress: as for `DDSSPLinearRegression`
            (intervals need objective="chebyshev"); ``random_state`` also seeds objective="expected"'s draws.
        analysis: as for `DDSSPLinearRegression`: on a release made for this regression the coefficients
            estimate the private rows' (lightly penalised) maximum-likelihood fit, whatever the objective.

    A target whose spec adds ``<other>`` / ``<missing>`` to two classes (any DP-inferred spec) is fitted
    on the rows of those classes (`ddssp.target_levels`: exact, from 3-way marginals with the target).

    Learned: as `DDSSPLinearRegression` (intervals included), plus ``classes_`` ([0, 1], or the spec's
    two class labels), ``target_classes_``, ``cheb_coef_`` (Chebyshev-basis coefficients in t = s / radius, numpy convention) and
    ``monomial_coef_`` (b_0, b_1, b_2 in s).
    """

    def __init__(
        self, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, degree: int = 2, radius: float = 6.0,
        method: str = "interpolation", alpha: float = 0.0, ridge: float = DEFAULT_RIDGE,
        interval: str | None = None, n_boot: int = 50, interval_alpha: float = 0.1, interval_kind: str = "bias_aware",
        random_state: SamplingSeed = None, progress: bool = True, domain: DomainLike = None,
        objective: str = "chebyshev", n_samples: int = DEFAULT_SAMPLES, analysis: str = "auto",
    ) -> None:  # fmt: skip
        self.analysis = analysis
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.objective = objective
        self.n_samples = n_samples
        self.degree = degree
        self.radius = radius
        self.method = method
        self.alpha = alpha
        self.ridge = ridge
        self.interval = interval
        self.n_boot = n_boot
        self.interval_alpha = interval_alpha
        self.interval_kind = interval_kind
        self.random_state = random_state
        self.progress = progress
        self.domain = domain

    _released_attributes = {
        **DDSSP_RELEASED,
        "cheb_coef_": "the Chebyshev coefficients of log sigmoid: from the hyperparameters only",
        "monomial_coef_": "the same approximation in the monomial basis: from the hyperparameters only",
    }

    def _check_params(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not (
                math.isfinite(self.alpha) and self.alpha >= 0):  # fmt: skip
            raise ValueError(f"alpha must be a finite number >= 0, got {self.alpha!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.objective == "expected":
            samples = self.n_samples
            if isinstance(samples, bool) or not isinstance(samples, numbers.Integral) or samples < 1:
                raise ValueError(f"n_samples must be an integer >= 1, got {self.n_samples!r}")
            if self.interval is not None:
                raise ValueError("interval needs objective='chebyshev': the bootstrap of objective='expected' is not "
                                 "implemented")  # fmt: skip
            return
        if self.degree != 2:
            raise ValueError(
                f"DDSSPLogisticRegression supports only degree=2 (got {self.degree}): the degree-M objective needs "
                "moments of order M of the encoded data, and pairwise marginals give only second moments "
                "(ddssp.chebyshev itself computes approximations of any degree)"
            )

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        with refined_warnings(self):
            self._fit_objective(source, encoding)
        if self.analysis_ is None and self.objective == "chebyshev":
            self._fit_intervals(unconditioned(source))  # the bootstrap conditions each refit again

    def _fit_objective(self, source: Any, encoding: Encoding) -> None:
        """The fit of ``objective`` (then the release's analysis, when it is this regression's)."""
        if self.objective == "expected":
            stale = ("cheb_coef_", "monomial_coef_", "statistics_", "coef_interval_", "inferred_target_pairs_")
            for name in stale:  # a refit with the other objective leaves none of its state
                self.__dict__.pop(name, None)
            theta = expected_logistic(source, encoding, self.n_samples, self.random_state, self.alpha)
            self._set_solution(theta, encoding)
            self.bootstrap_ = None
            self._apply_analysis(source, encoding)
            return
        self.cheb_coef_ = chebyshev_coefficients(log_sigmoid, self.degree, self.radius, self.method)
        self.monomial_coef_ = monomial_coefficients(self.cheb_coef_, self.radius)
        self.statistics_ = sufficient_statistics(source, encoding)
        theta = quadratic_logistic_solution(self.statistics_.XtX, self.statistics_.Xty, self.monomial_coef_,
                                            self.alpha, self.ridge)  # fmt: skip
        self._set_solution(theta, encoding)
        self._apply_analysis(source, encoding)


class AIMSynth(LinearRegressor):
    """Ordinary regression on synthetic rows sampled from a release (or on a given table).

    A regressor for ``task="linear"`` and a binary classifier for ``task="logistic"`` (its
    scikit-learn tags and ``score`` follow ``task``).

    Args:
        target: the attribute to predict.
        task: "linear" (least squares, minimum-norm solution) or "logistic" (unpenalised
            maximum likelihood by damped Newton; all-zero or collinear columns end at the
            minimum-norm solution).
        categorical, encoding, domain: as for `DDSSPLinearRegression`.
        n_synthetic: rows to sample from a release (None: the release's default, its total).
        random_state: int seed or Generator for sampling the synthetic rows (post-processing of the
            public release, so a seed is safe here; on a private Dataset the fit is not DP anyway).

    Learned: as `DDSSPLinearRegression` (no intervals), ``n_synthetic_`` (rows fitted) and, for
    ``task="logistic"``, ``classes_`` and ``target_classes_``. A logistic target whose spec adds
    ``<other>`` / ``<missing>`` to two classes is fitted on the synthetic rows of those classes (rows
    whose target is a pseudo-level are left out, so ``n_synthetic_`` may be below ``n_synthetic``).
    """

    def __init__(
        self, target: str | None = None, task: str = "linear", categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, n_synthetic: int | None = None,
        random_state: SamplingSeed = None, domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.target = target
        self.task = task
        self.categorical = categorical
        self.encoding = encoding
        self.n_synthetic = n_synthetic
        self.random_state = random_state
        self.domain = domain

    _released_attributes = {
        "n_synthetic_": "the number of synthetic rows fitted: n_synthetic, or the release's (noisy) total",
        "classes_": "(task='logistic') the two classes: the public domain's codes or the spec's labels",
        "target_classes_": "(task='logistic') the target's two classes and their codes: read off the public spec",
    }

    @property
    def _task(self) -> str:  # type: ignore[override]
        return self.task

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.task == "logistic":
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags(multi_class=False)
            tags.regressor_tags = None
        return tags

    def _check_params(self) -> None:
        if self.task not in ("linear", "logistic"):
            raise ValueError(f"task must be 'linear' or 'logistic', got {self.task!r}")

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        if implements(source, ModelSource):
            rng = sampling_rng(self.random_state)
            draw = source.synthetic_codes if implements_member(source, "synthetic_codes") else source.synthetic_data
            table = Dataset(draw(n=self.n_synthetic, rng=rng), source.domain)  # codes (a spec would decode)
        elif isinstance(source, Dataset):
            table = source
        else:
            raise TypeError(
                f"AIMSynth cannot fit on a {type(source).__name__}: pass a release with .synthetic_data, "
                "a marginals.Dataset, or a DataFrame of codes with domain=..."
            )
        theta = fit_encoded(encoding, table.to_df(), self.task)
        self.n_synthetic_ = len(table)
        self._set_solution(theta, encoding)
