"""Coefficient intervals for DD-SSP fitted on an AIM release, from bootstrap replicates of its error.

`resampling` draws errors delta*_b = theta*_b - theta*_0,b (B replicates; ``"mechanism"``: AIM rerun
on rows drawn from the released model, the default; ``"measurements"``: raw measurement noise on
the measured blocks). They stand for the error delta = theta_hat - theta_0 of the release's
estimate, modelled per coefficient as delta ~ N(b, s^2), with s = sd(delta*) and b = mean(delta*).

Intervals of nominal coverage 1 - alpha (``interval_kind``):

- ``"bias_aware"`` (default): theta_hat -+ c s with c = cv(|b| / s), the 1 - alpha quantile of
  |N(|b| / s, 1)| (a folded normal): the fixed-length interval for an estimator whose bias has size
  |b| and unknown sign (Donoho 1994; Armstrong & Kolesar 2020). Why not subtract b: near the
  boundary of the marginal polytope (small or empty cells) the bias of the non-negative fit
  changes quickly with the truth, so the bias at the released model is a noisy guess of the bias at
  the truth; subtracting it adds that noise, widening by it does not (``"basic"``, which subtracts
  it, covers less: benchmarks/results/bayes/summary.md). With b = 0 it is theta_hat -+ z_{1-alpha/2} s.
- ``"basic"``: [theta_hat - q_{1-alpha/2}(delta*), theta_hat - q_{alpha/2}(delta*)] (subtracts the bias).
- ``"percentile"``: [theta_hat + q_{alpha/2}(delta*), theta_hat + q_{1-alpha/2}(delta*)].

What the intervals do not cover: the bias of the model on pairs AIM never measured (the bootstrap
world follows the model), a bias at the truth larger than |b| (the released model is smoother than
the private rows, so |b| tends to fall short of it), and the Monte Carlo error of b and s (relative
O(1 / sqrt(B)); B >= 50 recommended). Their estimand is the estimator on the exact
marginals of the private rows: the OLS of the private rows for linear DD-SSP.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from marginals.source import MeasuredSource, implements

from ..statistics import uncovered_pairs

#: interval kinds and bootstrap methods.
KINDS = ("bias_aware", "basic", "percentile")
METHODS = ("mechanism", "measurements")


def bias_aware_critical_value(t: np.ndarray | float, alpha: float = 0.1) -> np.ndarray:
    """c with P(|N(t, 1)| <= c) = 1 - alpha (the folded normal's quantile); c(0) = z_{1 - alpha/2}."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return stats.foldnorm.ppf(1 - alpha, np.abs(np.asarray(t, dtype=np.float64)))


def bootstrap_interval(estimate: np.ndarray, errors: np.ndarray, alpha: float = 0.1, kind: str = "bias_aware") -> np.ndarray:
    """(p, 2) intervals of nominal coverage 1 - alpha from (B, p) error replicates (see the module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    estimate, errors = np.asarray(estimate, dtype=np.float64), np.asarray(errors, dtype=np.float64)
    if kind == "bias_aware":
        bias, sd = errors.mean(axis=0), errors.std(axis=0, ddof=1)
        half = np.abs(bias)  # the limit of c(|b| / s) s as s -> 0
        spread = sd > 0
        half[spread] = bias_aware_critical_value(half[spread] / sd[spread], alpha) * sd[spread]
        return np.column_stack([estimate - half, estimate + half])
    lo_q, hi_q = np.quantile(errors, [alpha / 2, 1 - alpha / 2], axis=0)
    if kind == "percentile":
        return np.column_stack([estimate + lo_q, estimate + hi_q])
    return np.column_stack([estimate - hi_q, estimate - lo_q])


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """The release's estimate and (B, p) error replicates (full coefficient vector, intercept first when present)."""

    estimate: np.ndarray
    errors: np.ndarray

    @property
    def std(self) -> np.ndarray:
        """Bootstrap standard errors s."""
        return self.errors.std(axis=0, ddof=1)

    @property
    def bias(self) -> np.ndarray:
        """Bootstrap bias b = mean(delta*)."""
        return self.errors.mean(axis=0)

    def interval(self, alpha: float = 0.1, kind: str = "bias_aware") -> np.ndarray:
        """(p, 2) two-sided intervals of nominal coverage 1 - alpha."""
        return bootstrap_interval(self.estimate, self.errors, alpha, kind)


def bootstrap_coefficients(
    estimator: Any,
    source: Any,
    n_boot: int = 50,
    random_state: int | np.random.Generator | None = None,
    method: str = "mechanism",
    progress: bool = False,
) -> BootstrapResult:
    """Bootstrap of a DD-SSP estimator's error on a release (``method``: see `resampling`; ``progress``:
    report each AIM rerun of ``"mechanism"`` on stderr)."""
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    from .resampling import ModelMarginals, fitted_theta, measurement_errors, mechanism_errors, release_parts  # loads AIM

    release, domain = release_parts(source)
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    theta_hat = fitted_theta(estimator, ModelMarginals(domain, release.model))
    draw = mechanism_errors if method == "mechanism" else measurement_errors
    return BootstrapResult(theta_hat, draw(estimator, source, n_boot, rng, progress))


class CoefficientIntervalMixin:
    """``conf_int(alpha)`` and ``coef_interval_`` for DD-SSP estimators (see the module docstring).

    Hyperparameters read from the estimator: ``interval`` (None, "mechanism" or "measurements"),
    ``n_boot``, ``interval_alpha`` (nominal 1 - interval_alpha, default 0.1 for 90%),
    ``interval_kind`` ("bias_aware", "basic" or "percentile"), ``random_state`` (seed of the
    bootstrap's Generator: post-processing of the public release, so a seed is safe) and ``progress``
    (report each AIM rerun of "mechanism" on stderr, `aim.progress`'s look).
    """

    def _fit_intervals(self, source: Any) -> None:
        method = getattr(self, "interval", None)
        if method is None:
            self.bootstrap_ = None
            return
        if method not in METHODS:
            raise ValueError(f"interval must be None or one of {METHODS}, got {method!r}")
        if not implements(source, MeasuredSource):
            raise TypeError(
                f"interval={method!r} needs an AIM release (its measurements and configuration); got {type(source).__name__}"
            )
        if self.interval_kind not in KINDS:
            raise ValueError(f"interval_kind must be one of {KINDS}, got {self.interval_kind!r}")
        plain = copy.deepcopy(self)
        plain.interval = None
        self.bootstrap_ = bootstrap_coefficients(plain, source, self.n_boot, self.random_state, method=method,
                                                 progress=self.progress)  # fmt: skip
        target = self.encoding_.target
        unmeasured = uncovered_pairs([(f.attr, target) for f in self.encoding_.features], source.cliques)
        self.inferred_target_pairs_ = tuple(a for a, _ in unmeasured)
        self.coef_interval_ = self.conf_int().to_numpy()

    def conf_int(self, alpha: float | None = None, inferred: str = "keep") -> pd.DataFrame:
        """Intervals of nominal coverage 1 - alpha (default interval_alpha) for ``coef_``: columns "lower" and
        "upper", one row per coefficient, indexed by ``encoded_feature_names_``.

        The bootstrap world follows the released model, so an interval does not cover the model's bias on a
        (feature, target) pair that no model clique holds (the model inferred it; ``inferred_target_pairs_``
        lists those features; a release made with ``targets=`` measures every such pair). ``inferred="nan"``
        gives NaN bounds for their coefficients instead of a number; "keep" (default) keeps them.

        On a release made for this regression (``analysis_`` set, `ddssp.newton`) the intervals are the normal
        ones of the refined estimate's noise; every pair is then accounted for and ``inferred`` does not apply."""
        fit = getattr(self, "analysis_", None)
        if fit is not None:
            from ..newton import refined_frame

            return refined_frame(fit, self.encoded_feature_names_, self.encoding_.intercept,
                                 self.interval_alpha if alpha is None else alpha)  # fmt: skip
        if getattr(self, "bootstrap_", None) is None:
            raise RuntimeError(f"no intervals: fit this {type(self).__name__} with interval='mechanism' on a release")
        if inferred not in ("keep", "nan"):
            raise ValueError(f"inferred must be 'keep' or 'nan', got {inferred!r}")
        out = self.bootstrap_.interval(self.interval_alpha if alpha is None else alpha, self.interval_kind)
        out = out[1:] if self.encoding_.intercept else out
        if inferred == "nan":
            hidden = set(getattr(self, "inferred_target_pairs_", ()))
            out[[f.attr in hidden for f in self.encoding_.features for _ in range(f.width)]] = np.nan
        index = pd.Index(self.encoded_feature_names_, name="feature")
        return pd.DataFrame(out, index=index, columns=["lower", "upper"])

    def intercept_interval(self, alpha: float | None = None) -> np.ndarray:
        """(2,) interval for ``intercept_`` (requires an intercept column)."""
        if not self.encoding_.intercept:
            raise AttributeError("the model has no intercept column")
        fit = getattr(self, "analysis_", None)
        if fit is not None:
            return fit.interval(self.interval_alpha if alpha is None else alpha)[0]
        return self.bootstrap_.interval(self.interval_alpha if alpha is None else alpha, self.interval_kind)[0]
