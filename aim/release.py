"""`Release`: everything a DP run publishes — measurements, the fitted model, the privacy ledger,
the per-round log and the configuration (typed parts, see `aim.release_config`: for AIM every
hyperparameter but the seed) — and what it answers: marginals and synthetic rows.

Its storage is `aim.storage` (`Release.save`, `Release.load`), its views `aim.views`
(`Release.without`, `Release.summary`); the quality report is `aim.report.write_report`.

No seed, generator state or anything derived from them is ever stored: the noise comes from the
operating system's secure source. A run on a seeded (test-only) source is marked
``private = False``; `Release.load` warns when it reads such a file.

A release may carry its discretization spec (``spec``: public by construction, either given by
the user or inferred under DP and charged to the same ledger, see `aim.raw`); then
`Release.synthetic_data` returns readable values in the original column types. Everything here is
post-processing of the DP measurements: no private rows are kept.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from marginals.domain import Domain
from marginals.limits import check_cells, check_synthetic_size
from marginals.measurement import Measurement
from marginals.privacy import Accountant
from marginals.randomness import SamplingSeed, sampling_rng
from marginals.spec.discretize import Discretizer
from marginals.units import PrivacyUnit
from pgm.model import Model

from . import release_config, views
from .config import AIMConfig
from .storage import read_release, write_release


class NotPrivateWarning(UserWarning):
    """A release made with a seeded (replayable) noise source: its noise can be undone."""


@dataclass(eq=False)
class Release:
    """The output of a DP mechanism: ``measurements`` + fitted ``model`` + ``ledger``."""

    domain: Domain
    measurements: list[Measurement]
    model: Model
    ledger: Accountant
    rounds: list[dict] = field(default_factory=list)
    config: dict = field(default_factory=dict)  # {"mechanism": ..., "spec": ...}: see `aim.release_config`
    private: bool = True
    spec: dict | None = None  # the public discretization spec of the domain, if any
    analysis: Any = None  # the Newton refinement of the regression the release serves (`aim.analysis`), if any

    def __post_init__(self) -> None:
        release_config.check_config(self.config)
        self._discretizer = None
        if self.spec is not None:
            disc = Discretizer.from_spec(self.spec)
            if disc.domain != self.domain:
                raise ValueError(f"the spec's domain {disc.domain!r} differs from the release's {self.domain!r}")
            self.spec, self._discretizer = disc.to_spec(), disc
            if self.domain.ordinal is None:  # the spec says which columns are ordered (numeric ones)
                self.domain = disc.domain

    @property
    def discretizer(self) -> Discretizer | None:
        """The `marginals.Discretizer` of the stored spec (None when the release has none)."""
        return self._discretizer

    def with_spec(self, spec: Mapping[str, Any] | Discretizer) -> "Release":
        """A copy that carries ``spec`` (a public spec whose domain is this release's)."""
        return dataclasses.replace(self, spec=spec.to_spec() if isinstance(spec, Discretizer) else dict(spec))

    def mechanism_config(self, insecure_seed: int | None = None) -> AIMConfig:
        """The run's `AIMConfig` (a float-noise run needs its ``insecure_seed`` again); ValueError when
        the release records none (see `aim.release_config.mechanism_config`)."""
        return release_config.mechanism_config(self.config, insecure_seed)

    def spec_config(self) -> release_config.SpecConfig | None:
        """How the run split its budget with the DP spec inference (None when it inferred no spec)."""
        return release_config.spec_config(self.config)

    @property
    def epsilon(self) -> float | None:
        """The whole run's epsilon (None when the release records no configuration)."""
        return release_config.run_budget(self.config)[0]

    @property
    def delta(self) -> float | None:
        """The run's delta: the ledger's, plus what thresholded histograms reserved (``threshold_delta``)."""
        delta = release_config.run_budget(self.config)[1]
        return self.ledger.delta if delta is None else delta

    @property
    def constraints(self) -> list[dict]:
        """The public rules (over codes, `marginals.rules`) whose forbidden cells the model gives
        probability 0 ([] when the run had none)."""
        return views.release_rules(self)

    @property
    def privacy_unit(self) -> PrivacyUnit | None:
        """The privacy unit the ledger was priced for (`marginals.units`); None: one row."""
        return self.ledger.unit

    @property
    def total(self) -> float:
        """The model's (noisy) estimate of the number of rows."""
        return self.model.total

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        """The model's cliques: marginals inside them are fitted to measurements, others inferred."""
        return self.model.cliques

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """The released model's marginal (counts) over ``attrs``, axes in the order given."""
        return self.marginals([tuple(attrs)])[0]

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many model marginals in one batched call (what DD-SSP consumes); a `TooLargeError` when
        their cells exceed `marginals.limits.MAX_WORK_MB` (checked before any is computed)."""
        cliques = [tuple(c) for c in cliques]
        check_cells(sum(self.domain.size(c) for c in cliques), f"the marginals of {len(cliques)} clique(s)")
        return self.model.marginals(cliques)

    def query(self, attrs: Sequence[str], *, alpha: float | None = None, n_boot: int = 30,
              random_state: SamplingSeed = None) -> pd.DataFrame:
        """The model's marginal over ``attrs`` with a standard error per cell, one row per cell
        (measured exactly or bootstrapped: see `aim.query`)."""
        from .query import query

        return query(self, attrs, alpha=alpha, n_boot=n_boot, random_state=random_state)

    def synthetic_data(self, n: int | None = None, rng: SamplingSeed = None, decode: bool | None = None,
                       numeric: str = "uniform", given: Mapping[str, Any] | pd.DataFrame | None = None) -> pd.DataFrame:
        """Synthetic rows from the model (default n = round(total)).

        With a spec (``decode`` None or True) the values are readable, in the original types:
        categorical columns as `pandas.Categorical` (the spec's categories, plus ``<other>``),
        numeric columns in their units (``numeric``: "uniform" draws inside each bin, "midpoint",
        or "interval" labels), NaN where the spec has a missing level. ``decode=False`` (or no
        spec) gives the integer codes. Sampling is post-processing of the public model, so ``rng``
        may be a seed or Generator for reproducible rows: they reveal nothing beyond the model.
        None uses fresh OS entropy.

        ``given`` conditions the rows on evidence (`aim.evidence`): a dict (readable values with a
        spec, codes otherwise; e.g. ``{"sex": "Female", "age": (30, 40)}``; default n: the model's
        expected count of matching rows), or a DataFrame: one row per given row, its NaN cells and
        absent columns drawn conditioned on the rest (n must be None or its length).
        """
        if decode and self._discretizer is None:
            raise ValueError("decode=True needs a release with a spec (this one holds codes only)")
        if given is not None:
            from .evidence import conditional_rows

            return conditional_rows(self, n, rng, given, decode is not False and self._discretizer is not None, numeric)
        if n is None:
            n = round(self.model.total)  # noisy, public; a crafted total is capped below
        check_synthetic_size(n, len(self.domain))
        rng = sampling_rng(rng)
        codes = self.model.synthetic_data(n, rng)
        if decode is False or self._discretizer is None:
            return codes
        return self._discretizer.inverse_transform(codes, rng=rng, numeric=numeric, typed=True)

    def synthetic_codes(self, n: int | None = None, rng: SamplingSeed = None,
                        given: Mapping[str, Any] | pd.DataFrame | None = None) -> pd.DataFrame:
        """Synthetic rows as integer codes over `domain` (what estimators fitted on codes consume);
        ``given`` (in codes) as in `synthetic_data`."""
        return self.synthetic_data(n, rng, decode=False, given=given)

    def save(self, path: str | os.PathLike) -> None:
        """Write the release to one ``.npz`` file atomically (format: `aim.storage`)."""
        write_release(path, domain=self.domain, measurements=self.measurements, model=self.model, ledger=self.ledger,
                      rounds=self.rounds, config=self.config, private=self.private, spec=self.spec,
                      analysis=self.analysis)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Release":
        """Read a file written by `save`, checked before anything large is allocated (see
        `aim.storage.read_release`); any problem is a `ReleaseFormatError` naming the file."""
        parts = read_release(path)
        if not parts["private"]:
            warnings.warn(
                f"{path}: this release was made with a seeded noise source (tests/benchmarks): its noise can be "
                "undone by anyone who knows the seed; it is NOT differentially private",
                NotPrivateWarning,
                stacklevel=2,
            )
        return cls(**parts)

    def without(self, attrs: Sequence[str]) -> views.ReleaseView:
        """This release seen without ``attrs`` (e.g. a feature that leaks the target)."""
        return views.ReleaseView(self, tuple(self.domain.check(attrs)))

    def summary(self) -> str:
        """A short readable description: size, rounds, model and ledger (`aim.views.summary`)."""
        return views.summary(self)

    def threshold_lines(self) -> list[str]:
        """The delta that thresholded histograms (DP spec inference) add to the ledger's, as ledger lines."""
        return views.threshold_lines(self)
