"""A release that serves one regression: AIM's Newton refinement (``AIM(...).run(rows, analysis=est)``).

A model fitted to measured marginals infers the pairs it never measured; the regression it implies
is biased by that inference as much as by noise, so no noise-only interval covers the coefficients
of the private rows' fit (benchmarks/results/coefficient_spread). With ``analysis=`` (a DD-SSP
estimator: public hyperparameters) AIM keeps ``analysis_share`` of rho and, after its final model,
spends it on the regression itself, by private Newton steps from the release's own estimate:

1. the estimator fits itself to the release (post-processing) and names its loss and encoding
   (`marginals.gradients.RegressionSpec`) and its start theta_0;
2. the loss's gradient at theta_0 over the private rows is measured (share ``first`` of the
   analysis budget); the estimator takes a Newton step with the model's Hessian
   (post-processing) and proposes the next point theta_1 (a step shrunk where it is noise);
3. for each further step, with an equal part of the rest, whichever gives the gradient at theta_k
   the smaller noise variance for that budget (public: the sensitivities depend on the points only):
   the gradient difference between theta_0 and theta_k (no labels: a much smaller sensitivity than a
   gradient when the step is small; the gradient at theta_k is then the first gradient plus it) or a
   fresh gradient at theta_k. The last Newton step from it is the refined estimate.

Each statistic is a Gaussian mechanism whose L2 sensitivity is derived from the public encoding
and the public points (`marginals.gradients`), times k rows per privacy unit; all are charged to the
run's one ledger, adaptively composed (every point is computed from what was already released).
The record (`AnalysisRecord`) is part of the release: spec, points, noisy statistics, sigmas. The
estimator turns it into coefficients and intervals (`ddssp.newton`). Nothing here reads a row
except `gradient` / `gradient_difference` inside `run_analysis`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from marginals.gradients import (
    NoisyStatistic,
    RegressionSpec,
    difference_sensitivity,
    gradient,
    gradient_difference,
    gradient_sensitivity,
    measure_statistic,
    spec_from_arrays,
)
from marginals.maps import GaussianMap
from marginals.privacy import Accountant
from marginals.randomness import RandomSource

#: default share of rho an analysis gets (benchmarks/analysis_coverage.py: 0.3 kept coverage within
#: a few points of nominal at eps 0.5-4 and beat the unrefined fit's error at eps >= 1).
DEFAULT_SHARE = 0.3
#: the plan methods an ``analysis=`` object must have (the DD-SSP estimators do: `ddssp.newton`).
PLAN_METHODS = ("analysis_plan", "analysis_point")


def check_analysis_share(share: Any) -> float | None:
    """``analysis_share`` as a float in (0, 1), or None (`DEFAULT_SHARE` when an analysis is given)."""
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, numbers.Real) or not 0 < share < 1:
        raise ValueError(f"analysis_share must be a number in (0, 1), got {share!r}")
    return float(share)


def check_plan(plan: Any, domain: Any = None) -> None:
    """TypeError unless ``plan`` can plan an analysis (a DD-SSP estimator); ValueError when its target or
    one-hot attributes are not in ``domain`` (checked before any row is read or budget spent)."""
    missing = [m for m in PLAN_METHODS if not callable(getattr(plan, m, None))]
    if missing:
        raise TypeError(f"analysis must be a DD-SSP estimator (e.g. ddssp.DDSSPLinearRegression('y')); "
                        f"a {type(plan).__name__} has no {', '.join(missing)}")  # fmt: skip
    if domain is None:
        return
    target, one_hot = getattr(plan, "target", None), list(getattr(plan, "categorical", None) or [])
    if target not in domain.attrs:
        raise ValueError(f"the analysis' target {target!r} is not an attribute of the domain {list(domain.attrs)}")
    unknown = [a for a in one_hot if a not in domain.attrs]
    if unknown:
        raise ValueError(f"the analysis' categorical attributes {unknown} are not in the domain {list(domain.attrs)}")


def step_budgets(rho: float, steps: int, first: float) -> list[float]:
    """The analysis budget split over its statistics: ``first`` of it to the gradient, the rest equally."""
    if steps == 1:
        return [rho]
    return [rho * first] + [rho * (1 - first) / (steps - 1)] * (steps - 1)


@dataclass(frozen=True, eq=False)
class AnalysisRecord:
    """What a release publishes about its regression (see the module docstring)."""

    spec: RegressionSpec
    points: tuple[np.ndarray, ...]  # theta_0 .. theta_{K-1}
    statistics: tuple[NoisyStatistic, ...]  # the gradient at theta_0, then the differences theta_0 -> theta_k
    share: float
    estimator: dict  # {"class": ..., "params": {...}}: the plan's public hyperparameters, for reading

    def __post_init__(self) -> None:
        if len(self.points) != len(self.statistics) or not self.points:
            raise ValueError("an analysis record needs one statistic per point, and at least one")
        for theta in self.points:
            self.spec.check_theta(theta)
        if self.statistics[0].kind != "gradient" or any(s.kind not in ("gradient", "difference") for s in self.statistics):
            raise ValueError("an analysis record starts with a gradient; each later statistic is a gradient or a difference")
        for stat in self.statistics:
            if np.shape(stat.values) != (self.spec.width,) or not np.all(np.isfinite(stat.values)):
                raise ValueError(f"analysis statistic {stat.label!r}: expected {self.spec.width} finite values")

    @property
    def steps(self) -> int:
        """Newton steps: one per measured statistic."""
        return len(self.statistics)

    @property
    def rho(self) -> float:
        """The zCDP the analysis spent."""
        return math.fsum(s.rho for s in self.statistics)

    def header(self) -> dict:
        """The JSON part of the record (arrays go to `arrays`)."""
        spec = self.spec
        return {
            "kind": spec.kind, "target": spec.target, "intercept": spec.intercept,
            "features": [a for a, _ in spec.features], "widths": [m.shape[0] for _, m in spec.features],
            "share": self.share, "estimator": self.estimator,
            "statistics": [{"label": s.label, "sigma": s.sigma, "sensitivity": s.sensitivity, "rho": s.rho,
                            "kind": s.kind} for s in self.statistics],
        }  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray]:
        """The record's arrays, keyed for the release file."""
        out = {"analysis_target_values": self.spec.target_values}
        out.update({f"analysis_feature_{i}": m for i, (_, m) in enumerate(self.spec.features)})
        out.update({f"analysis_point_{i}": p for i, p in enumerate(self.points)})
        out.update({f"analysis_statistic_{i}": s.values for i, s in enumerate(self.statistics)})
        return out

    @classmethod
    def from_parts(cls, header: dict, arrays: dict[str, np.ndarray]) -> "AnalysisRecord":
        """The record from `header` and `arrays` (as read back from a release file)."""
        features = [(a, arrays[f"analysis_feature_{i}"]) for i, a in enumerate(header["features"])]
        spec = spec_from_arrays(header["kind"], header["target"], features, arrays["analysis_target_values"],
                                header["intercept"])  # fmt: skip
        stats = tuple(NoisyStatistic(s["label"], np.asarray(arrays[f"analysis_statistic_{i}"], dtype=np.float64),
                                     float(s["sigma"]), float(s["sensitivity"]), float(s["rho"]), str(s["kind"]))
                      for i, s in enumerate(header["statistics"]))  # fmt: skip
        points = tuple(np.asarray(arrays[f"analysis_point_{i}"], dtype=np.float64) for i in range(len(stats)))
        return cls(spec, points, stats, float(header["share"]), dict(header["estimator"]))


def _plan(plan: Any, release: Any) -> tuple[RegressionSpec, int, float]:
    with warnings.catch_warnings():  # the plan's own fit on the release: its warnings are the analyst's later
        warnings.simplefilter("ignore")
        spec, steps, first = plan.analysis_plan(release)
    if not isinstance(spec, RegressionSpec):
        raise TypeError(f"analysis_plan must return a RegressionSpec, got {type(spec).__name__}")
    if not (isinstance(steps, int) and steps >= 1 and 0 < first <= 1):
        raise ValueError(f"analysis_plan: steps must be an int >= 1 and first in (0, 1], got {steps}, {first}")
    return spec, steps, float(first)


def _point(plan: Any, release: Any, spec: RegressionSpec, points: Sequence[np.ndarray],
           stats: Sequence[NoisyStatistic]) -> np.ndarray:  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.check_theta(plan.analysis_point(release, spec, tuple(points), tuple(stats)))


def _measure(values: np.ndarray, sensitivity: float, rho: float, rng: RandomSource, ledger: Accountant,
             label: str, exact: bool, rows_per_unit: float, kind: str = "gradient") -> NoisyStatistic:  # fmt: skip
    if sensitivity == 0.0:  # the points coincide: the difference is 0 on every table, nothing to hide
        return NoisyStatistic(label, np.zeros_like(values), 0.0, 0.0, 0.0, kind)
    return measure_statistic(values, sensitivity, rho, rng, ledger, label, exact, rows_per_unit, kind)


def _step_statistic(spec: RegressionSpec, codes: dict, theta0: np.ndarray, theta: np.ndarray, first: NoisyStatistic,
                    rho: float, rows_per_unit: float) -> tuple[str, float, Any]:  # fmt: skip
    """(kind, sensitivity, how to compute it) of step k's statistic: the one whose gradient at ``theta`` is
    less noisy for ``rho`` (variance Delta^2 / (2 rho), plus the first gradient's for a difference)."""
    grad_sens = gradient_sensitivity(spec, theta, rows_per_unit)
    diff_sens = difference_sensitivity(spec, theta0, theta, rows_per_unit)
    if first.sigma**2 + GaussianMap(diff_sens).sigma(rho) ** 2 < GaussianMap(grad_sens).sigma(rho) ** 2:
        return "difference", diff_sens, lambda: gradient_difference(spec, codes, theta0, theta)
    return "gradient", grad_sens, lambda: gradient(spec, codes, theta)


def run_analysis(release: Any, rows: Any, plan: Any, share: float, rng: RandomSource, ledger: Accountant,
                 exact: bool = True, rows_per_unit: float = 1.0) -> AnalysisRecord:  # fmt: skip
    """The Newton refinement of ``release`` for ``plan``'s regression on ``rows`` (a `marginals.Dataset`),
    spending at most ``share`` of the ledger's rho on it (see the module docstring)."""
    rho = share * ledger.rho
    spec, steps, first = _plan(plan, release)
    spec.check_domain(rows.domain)
    codes = {a: rows.column(a) for a in spec.attrs}
    budgets = step_budgets(rho, steps, first)
    theta0 = _point(plan, release, spec, (), ())
    g0 = gradient(spec, codes, theta0)
    points, stats = [theta0], [_measure(g0, gradient_sensitivity(spec, theta0, rows_per_unit), budgets[0], rng, ledger,
                                        "analysis gradient", exact, rows_per_unit)]  # fmt: skip
    for k in range(1, steps):
        theta = _point(plan, release, spec, points, stats)
        kind, sens, compute = _step_statistic(spec, codes, theta0, theta, stats[0], budgets[k], rows_per_unit)
        label = f"analysis gradient difference {k}" if kind == "difference" else f"analysis gradient {k}"
        stats.append(_measure(compute(), sens, budgets[k], rng, ledger, label, exact, rows_per_unit, kind))
        points.append(theta)
    estimator = {"class": type(plan).__name__, "params": _scalar_params(plan)}
    return AnalysisRecord(spec, tuple(points), tuple(stats), share, estimator)


def _scalar_params(plan: Any) -> dict:
    """The plan's hyperparameters that are JSON scalars or lists of text (what a reader needs to see)."""
    get = getattr(plan, "get_params", None)
    params = get(deep=False) if callable(get) else {}
    out = {}
    for key, value in params.items():
        if value is None or isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
    return out
