"""Coefficient intervals for DD-SSP fitted on an AIM release: parametric bootstraps of the noise.

What is random in a release: every measurement r is y_r = M_r p + N(0, sigma_r^2 I) with a known
sigma_r (`Measurement.sigma`); the model is a deterministic function of the measurements (the
clique *selection* is treated as fixed). Both methods replay that noise with the released model
p_hat as the truth of the bootstrap world (a numpy Generator: post-processing of public output):

- ``"measurements"`` (default, fast): every marginal DD-SSP needs that lies inside measured cliques
  gets the noise of those measurements, marginalised to it and combined with inverse-variance
  weights (one draw e_r per measurement and replicate, so blocks cut from the same clique stay
  correlated); marginals that the model only *infers* (no measured clique contains the pair) are
  kept as released. This is the propagation of noise_cov through the encoding A_j (x) A_k.
- ``"refit"``: y_r* = M_r p_hat + e_r for every measurement, the model refitted by `pgm.estimate`
  (warm start at the release) and the estimator refitted on it; inferred pairs then carry the noise
  of the measurements they are inferred from. Much slower (a full mirror-descent fit per replicate)
  and, on large junction trees, limited by how far the fit converges in ``iters``.

The spread of theta* - theta_hat estimates that of theta_hat - theta_0; the "basic" interval is
[theta_hat - q_{1-alpha/2}(theta* - theta_hat), theta_hat - q_{alpha/2}(theta* - theta_hat)] (it also
removes first-order noise bias); "percentile" uses the quantiles of theta* directly.

What the interval covers: the noise of the measurements, not the bias of the model's
conditional-independence structure for pairs it never measured. Its estimand is therefore the
**measured-pair estimand** (`measured_pair_estimand`: DD-SSP with the exact marginals wherever a
measured clique covers the block and the model's inferred marginals elsewhere). It equals the OLS
fit on the private rows (DD-SSP on exact marginals) when every pair needed for Z^T Z was measured;
otherwise the structural gap is not in the interval (benchmarks/bayes_coverage.py measures both).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from marginals.domain import Domain
from marginals.mechanisms import Measurement
from marginals.source import MeasuredSource, implements
from pgm.estimation import estimate

#: bootstrap interval kinds and methods.
KINDS = ("basic", "percentile")
METHODS = ("measurements", "refit")


@dataclass(frozen=True, eq=False)
class ModelSource:
    """A fitted model seen as a marginal source over ``domain`` (a subset of the model's attributes)."""

    domain: Domain
    model: Any

    @property
    def total(self) -> float:
        """The model's total count."""
        return self.model.total

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The model's marginals over ``cliques``."""
        return self.model.marginals([tuple(c) for c in cliques])


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Bootstrap replicates of the full coefficient vector (intercept first when present)."""

    estimate: np.ndarray
    replicates: np.ndarray

    @property
    def std(self) -> np.ndarray:
        """Bootstrap standard errors."""
        return self.replicates.std(axis=0, ddof=1)

    def interval(self, alpha: float = 0.1, kind: str = "basic") -> np.ndarray:
        """(p, 2) two-sided intervals of nominal coverage 1 - alpha."""
        return bootstrap_interval(self.estimate, self.replicates, alpha, kind)


def bootstrap_interval(estimate_: np.ndarray, replicates: np.ndarray, alpha: float = 0.1, kind: str = "basic") -> np.ndarray:
    """(p, 2) basic or percentile bootstrap intervals of nominal coverage 1 - alpha."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    lo_q, hi_q = np.quantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    if kind == "percentile":
        return np.column_stack([lo_q, hi_q])
    return np.column_stack([2 * estimate_ - hi_q, 2 * estimate_ - lo_q])


def release_parts(source: Any) -> tuple[Any, Domain]:
    """(the underlying `Release`, the domain the estimator sees) for a release or a release view."""
    if not implements(source, MeasuredSource):
        raise TypeError(
            f"coefficient intervals need an AIM release (with .measurements and .model), got {type(source).__name__}"
        )
    return getattr(source, "release", source), source.domain


def _full_theta(est: Any) -> np.ndarray:
    return np.concatenate([[est.intercept_], est.coef_]) if est.encoding_.intercept else est.coef_.copy()


def refit_model(release: Any, measurements: Sequence[Measurement], iters: int, tol: float | None) -> Any:
    """The release's model refitted to other measurements on the same cliques (warm start at the release)."""
    return estimate(release.domain, list(measurements), iters=iters, tol=tol, warm_start=release.model)


def _marginalise(values: np.ndarray, clique: tuple[str, ...], target: tuple[str, ...]) -> np.ndarray:
    """Sum ``values`` (axes in ``clique`` order) down to ``target`` (axes in ``target`` order)."""
    summed = tuple(i for i, a in enumerate(clique) if a not in target)
    kept = [a for a in clique if a in target]
    out = values.sum(axis=summed) if summed else values
    return np.transpose(out, [kept.index(a) for a in target])


def covering_measurements(measurements: Sequence[Measurement], domain: Domain, clique: Sequence[str]) -> list[tuple[int, float]]:
    """(index, per-cell noise variance after marginalising to ``clique``) of every measurement containing it."""
    out = []
    for i, m in enumerate(measurements):
        if set(clique) <= set(m.clique):
            rest = [a for a in m.clique if a not in clique]
            out.append((i, m.sigma**2 * float(np.prod([domain[a] for a in rest]))))
    return out


class NoisyModelSource(ModelSource):
    """Model marginals plus one fresh draw of the covering measurements' noise per `marginals` call."""

    def __init__(self, domain: Domain, model: Any, measurements: Sequence[Measurement], rng: np.random.Generator):
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "model", model)
        self._measurements = list(measurements)
        self._rng = rng
        self._cache: dict[tuple[str, ...], np.ndarray] = {}

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        cliques = [tuple(c) for c in cliques]
        todo = [c for c in cliques if c not in self._cache]
        if todo:
            self._cache.update(zip(todo, self.model.marginals(todo)))
        draws: dict[int, np.ndarray] = {}
        out = []
        for c in cliques:
            table = self._cache[c].copy()
            cover = covering_measurements(self._measurements, self.model.domain, c)
            if cover:
                weights = np.array([1.0 / v for _, v in cover])
                weights /= weights.sum()
                for (i, _), w in zip(cover, weights):
                    m = self._measurements[i]
                    if i not in draws:
                        draws[i] = self._rng.normal(0.0, m.sigma, size=m.noisy_counts.shape)
                    table += w * _marginalise(draws[i], m.clique, c)
            out.append(table)
        return out


class MeasuredPairSource(ModelSource):
    """Exact marginals of ``data`` where a measured clique covers the query, the model's elsewhere."""

    def __init__(self, domain: Domain, model: Any, measurements: Sequence[Measurement], data: Any):
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "model", model)
        self._cliques = [set(m.clique) for m in measurements]
        self._data = data

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        cliques = [tuple(c) for c in cliques]
        inferred = self.model.marginals(cliques)
        return [
            np.asarray(self._data.marginal(c), dtype=np.float64) if any(set(c) <= r for r in self._cliques) else t
            for c, t in zip(cliques, inferred)
        ]


def measured_pair_estimand(estimator: Any, source: Any, data: Any) -> np.ndarray:
    """The estimand of the ``"measurements"`` interval (needs the private ``data``: a diagnostic only)."""
    release, domain = release_parts(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = copy.deepcopy(estimator).fit(MeasuredPairSource(domain, release.model, release.measurements, data))
    return _full_theta(fitted)


def bootstrap_coefficients(
    estimator: Any,
    source: Any,
    n_boot: int = 200,
    random_state: int | np.random.Generator | None = None,
    method: str = "measurements",
    iters: int = 1000,
    tol: float | None = 1e-5,
) -> BootstrapResult:
    """Parametric bootstrap of a DD-SSP estimator's coefficients (``method``: see the module docstring)."""
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    release, domain = release_parts(source)
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theta_hat = _full_theta(copy.deepcopy(estimator).fit(ModelSource(domain, release.model)))
    if method == "measurements":
        reps = np.empty((n_boot, theta_hat.size))
        noisy = NoisyModelSource(domain, release.model, release.measurements, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in range(n_boot):
                reps[b] = _full_theta(copy.deepcopy(estimator).fit(noisy))
        return BootstrapResult(theta_hat, reps)
    cliques = [m.clique for m in release.measurements]
    means = release.model.marginals(cliques)
    reps = np.empty((n_boot, theta_hat.size))
    for b in range(n_boot):
        noisy = [
            Measurement(m.clique, mu + rng.normal(0.0, m.sigma, size=mu.shape), m.sigma)
            for m, mu in zip(release.measurements, means)
        ]
        model = refit_model(release, noisy, iters, tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reps[b] = _full_theta(copy.deepcopy(estimator).fit(ModelSource(domain, model)))
    return BootstrapResult(theta_hat, reps)


def structural_estimand(estimator: Any, source: Any, data: Any, iters: int = 2000, tol: float | None = 1e-7) -> np.ndarray:
    """What the bootstrap interval covers: the estimator on the model fitted to the *exact* marginals of
    the release's measured cliques (computed from the private ``data``: a diagnostic, not releasable)."""
    release, domain = release_parts(source)
    exact = [Measurement(m.clique, data.marginal(m.clique), m.sigma) for m in release.measurements]
    # a cold start: from the released model the line search first has to undo its noise, which is slow
    model = estimate(release.domain, exact, iters=iters, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _full_theta(copy.deepcopy(estimator).fit(ModelSource(domain, model)))


class CoefficientIntervalMixin:
    """``conf_int(alpha)`` and ``coef_interval_`` for DD-SSP estimators (see the module docstring).

    Hyperparameters read from the estimator: ``interval`` (None, "measurements" or "refit"), ``n_boot``,
    ``interval_alpha`` (nominal 1 - interval_alpha, default 0.1 for 90%), ``interval_kind`` ("basic" or
    "percentile") and ``random_state`` (seed of the bootstrap's post-processing Generator).
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
                f"interval={method!r} needs an AIM release (its measurements and sigmas); got {type(source).__name__}"
            )
        plain = copy.deepcopy(self)
        plain.interval = None
        self.bootstrap_ = bootstrap_coefficients(plain, source, self.n_boot, self.random_state, method=method)
        self.coef_interval_ = self.conf_int()

    def conf_int(self, alpha: float | None = None) -> np.ndarray:
        """(n_features_in_, 2) intervals of nominal coverage 1 - alpha (default interval_alpha) for ``coef_``."""
        if getattr(self, "bootstrap_", None) is None:
            raise RuntimeError(f"no intervals: fit this {type(self).__name__} with interval='measurements' on a release")
        out = self.bootstrap_.interval(self.interval_alpha if alpha is None else alpha, self.interval_kind)
        return out[1:] if self.encoding_.intercept else out

    def intercept_interval(self, alpha: float | None = None) -> np.ndarray:
        """(2,) interval for ``intercept_`` (requires an intercept column)."""
        if not self.encoding_.intercept:
            raise AttributeError("the model has no intercept column")
        return self.bootstrap_.interval(self.interval_alpha if alpha is None else alpha, self.interval_kind)[0]
