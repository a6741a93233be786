"""Bootstrap replicates of a DD-SSP estimator's error on an AIM release (post-processing only).

Both generators return errors delta* = theta* - theta*_0 (replicate minus the estimand of its
bootstrap world), whose spread and mean stand for those of theta_hat - theta_0 (`intervals`).

``"mechanism"`` (`mechanism_errors`): a parametric bootstrap of the whole release. The released
model is the population: each replicate samples round(model.total) rows D* from it, runs AIM again
on D* with the release's configuration (epsilon, delta, workload, schedule and fitting settings:
``release.mechanism_config()``; float Gaussian noise of the same sigmas instead of the exact discrete
Gaussian, seeded from the caller's Generator), fits the estimator to that release, and subtracts
the estimator fitted to the exact marginals of D* (the OLS of D* for linear DD-SSP). This replays
every random step of a release (a person-level release's k-fold noise too; each drawn row is its
own unit): the measurement noise, the exponential-mechanism selection and
sigma annealing, the noisy total, and the Private-PGM fit that pools overlapping measurements, keeps
the model non-negative and stops early; and the estimator's own non-linearity. Cost: ``n_boot``
AIM runs (seconds each on a few attributes, far more on big domains).

``"measurements"`` (`measurement_errors`, fast): the selected cliques and the model are held fixed;
every marginal DD-SSP reads that lies inside measured cliques gets the raw noise of those
measurements (marginalised to it, combined by inverse variance; one draw per measurement and
replicate, so blocks cut from one clique stay correlated); the estimand is the estimator on the
model's marginals. It ignores the fit's pooling and non-negativity, which make the released
marginals much less noisy than the raw measurements in sparse tables, so it is conservative there
(benchmarks/results/bayes/summary.md).

Neither covers the bias of the model's conditional-independence structure on pairs AIM never
measured: in the bootstrap world the data follow the model, so such pairs are exactly as the model
infers them. Rows are never touched: only the released model, measurements and configuration.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Sequence, TextIO

import numpy as np

from aim import AIM, AIMConfig
from aim.progress import terminal_bar
from marginals.dataset import Dataset
from marginals.domain import Domain
from marginals.measurement import Measurement
from marginals.source import MeasuredSource, implements
from pgm.measured import covering_measurements, marginalise

from ..target_levels import condition_on_classes

@dataclass(frozen=True, eq=False)
class ModelMarginals:
    """A fitted model's marginals over ``domain`` (a subset of its attributes): a marginal source for a fit."""

    domain: Domain
    model: Any

    @property
    def total(self) -> float:
        """The model's total count."""
        return self.model.total

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The model's marginals over ``cliques``."""
        return self.model.marginals([tuple(c) for c in cliques])


def release_parts(source: Any) -> tuple[Any, Domain]:
    """(the underlying `Release`, the domain the estimator sees) for a release or a release view."""
    if not implements(source, MeasuredSource):
        raise TypeError(
            f"coefficient intervals need an AIM release (with .measurements and .model), got {type(source).__name__}"
        )
    return getattr(source, "release", source), source.domain


def full_theta(est: Any) -> np.ndarray:
    """The fitted coefficient vector, intercept first when the encoding has one."""
    return np.concatenate([[est.intercept_], est.coef_]) if est.encoding_.intercept else est.coef_.copy()


def fitted_theta(estimator: Any, source: Any) -> np.ndarray:
    """`full_theta` of a fresh copy of ``estimator`` fitted to ``source`` (coverage warnings silenced), on the
    rows of its logistic target's two classes when its fit left out ``<other>`` / ``<missing>``."""
    classes = getattr(estimator, "target_classes_", None)
    if classes is not None:
        source = condition_on_classes(source, classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return full_theta(copy.deepcopy(estimator).fit(source))


def rerun_config(release: Any, seed: int) -> AIMConfig:
    """The release's AIM configuration with float noise seeded by ``seed`` (ValueError when it records none)."""
    recorded = getattr(release, "mechanism_config", None)
    try:
        if recorded is None:
            raise ValueError(f"a {type(release).__name__} records no configuration")
        config = recorded(insecure_seed=seed)
    except ValueError as exc:
        raise ValueError(f"interval='mechanism' reruns AIM and needs an AIM release ({exc}); "
                         "use interval='measurements'") from None
    # float Gaussian noise of the same sigmas: the rerun is never published
    return dataclasses.replace(config, exact_noise=False)


def reruns(n_boot: int, enabled: bool, stream: TextIO | None = None) -> Iterator[int]:
    """0 .. n_boot - 1, reporting each finished AIM rerun on stderr when ``enabled`` (`aim.progress`'s look:
    a tqdm bar on a terminal, plain lines otherwise). Lines show only counts of reruns, never a time."""
    stream = sys.stderr if stream is None else stream
    bar = terminal_bar(stream, n_boot, "interval='mechanism': {n_fmt}/{total_fmt} AIM reruns |{bar}|") if enabled else None
    if enabled and bar is None:
        print(f"interval='mechanism': {n_boot} AIM reruns on rows drawn from the released model", file=stream, flush=True)
    try:
        for b in range(n_boot):
            yield b
            if bar is not None:
                bar.update(1)
            elif enabled:
                print(f"  AIM rerun {b + 1}/{n_boot} done", file=stream, flush=True)
    finally:
        if bar is not None:
            bar.close()


def mechanism_errors(estimator: Any, source: Any, n_boot: int, rng: np.random.Generator,
                     progress: bool = False) -> np.ndarray:  # fmt: skip
    """(n_boot, p) errors of ``estimator`` over AIM reruns on rows drawn from the released model
    (each rerun reported on stderr with ``progress``)."""
    release, domain = release_parts(source)
    rerun_config(release, 0)  # a clear error before any work
    attrs = list(domain.attrs)
    n = int(round(release.model.total))
    errors = []
    for _ in reruns(n_boot, progress):
        rows = release.model.synthetic_data(n, rng)
        config = rerun_config(release, int(rng.integers(2**63 - 1)))
        # a person-level release reruns with its k-fold noise; each drawn row is its own unit (the model
        # already describes the bounded rows, at most k per unit, so none is dropped again)
        units = None if config.unit is None else np.arange(len(rows))
        with warnings.catch_warnings():  # the seeded rerun warns that it is not private: it needs not be
            warnings.simplefilter("ignore")
            rerun = AIM.from_config(config).run(Dataset(rows, release.domain), units=units)
        theta = fitted_theta(estimator, ModelMarginals(domain, rerun.model))
        truth = fitted_theta(estimator, Dataset(rows[attrs], domain))
        errors.append(theta - truth)
    return np.array(errors)


class NoisyModelMarginals(ModelMarginals):
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
                    table += w * marginalise(draws[i], m.clique, c)
            out.append(table)
        return out


def measurement_errors(estimator: Any, source: Any, n_boot: int, rng: np.random.Generator,
                       progress: bool = False) -> np.ndarray:  # fmt: skip
    """(n_boot, p) errors of ``estimator`` with the measured blocks' noise added to the released model
    (fast: ``progress`` is accepted for symmetry and shows nothing)."""
    release, domain = release_parts(source)
    theta_hat = fitted_theta(estimator, ModelMarginals(domain, release.model))
    noisy = NoisyModelMarginals(domain, release.model, release.measurements, rng)
    return np.array([fitted_theta(estimator, noisy) - theta_hat for _ in range(n_boot)])
