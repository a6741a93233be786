"""`Release`: everything a DP run publishes — measurements, the fitted model, the privacy ledger,
the per-round log and the configuration (for AIM, `aim.config.AIMConfig.to_dict`: every
hyperparameter but the seed) — and its one-file, versioned storage.

No seed, generator state or anything derived from them is ever stored: the noise comes from the
operating system's secure source. A run on a seeded (test-only) source is marked
``private = False`` in the header; `load` warns when it reads such a file.

A release may carry its discretization spec (``spec``: public by construction, either given by
the user or inferred under DP and charged to the same ledger, see `aim.raw`); then
`Release.synthetic_data` returns readable values in the original column types.

File format: an ``.npz`` (no pickle) holding a JSON header (``header``) plus one array per
measurement (``measurement_<i>``) and per model potential (``potential_<i>``); written atomically.
Version 3 adds the optional ``spec`` (version 2 files, without one, are still read).
Everything here is post-processing of the DP measurements: no private rows are kept.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from marginals.dataset import Dataset
from marginals.spec.discretize import Discretizer
from marginals.domain import Domain
from marginals.files import write_bytes_atomic
from marginals.measurement import Measurement
from marginals.privacy import Accountant
from marginals.randomness import SamplingSeed, sampling_rng
from pgm.model import Model

from . import release_checks
from .release_checks import ReleaseFormatError

FORMAT = "dp-marginals-release"
VERSION = 3  # 1 stored the seed that undoes the noise: such files are refused; 2 had no spec
READABLE_VERSIONS = (2, 3)


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
    config: dict = field(default_factory=dict)
    private: bool = True
    spec: dict | None = None  # the public discretization spec of the domain, if any

    def __post_init__(self) -> None:
        self._discretizer = None
        if self.spec is not None:
            disc = Discretizer.from_spec(self.spec)
            if disc.domain != self.domain:
                raise ValueError(f"the spec's domain {disc.domain!r} differs from the release's {self.domain!r}")
            self.spec, self._discretizer = disc.to_spec(), disc

    @property
    def discretizer(self) -> Discretizer | None:
        """The `marginals.Discretizer` of the stored spec (None when the release has none)."""
        return self._discretizer

    def with_spec(self, spec: Mapping[str, Any] | Discretizer) -> "Release":
        """A copy that carries ``spec`` (a public spec whose domain is this release's)."""
        return dataclasses.replace(self, spec=spec.to_spec() if isinstance(spec, Discretizer) else dict(spec))

    @property
    def epsilon(self) -> float | None:
        return self.config.get("epsilon")

    @property
    def delta(self) -> float | None:
        """The run's delta: the ledger's, plus what thresholded histograms reserved (``threshold_delta``)."""
        return self.config.get("delta", self.ledger.delta)

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
        their cells exceed `release_checks.MAX_WORK_MB` (checked before any is computed)."""
        cliques = [tuple(c) for c in cliques]
        release_checks.check_cells(sum(self.domain.size(c) for c in cliques), f"the marginals of {len(cliques)} clique(s)")
        return self.model.marginals(cliques)

    def synthetic_data(self, n: int | None = None, rng: SamplingSeed = None,
                       decode: bool | None = None, numeric: str = "uniform") -> pd.DataFrame:
        """Synthetic rows from the model (default n = round(total)).

        With a spec (``decode`` None or True) the values are readable, in the original types:
        categorical columns as `pandas.Categorical` (the spec's categories, plus ``<other>``),
        numeric columns in their units (``numeric``: "uniform" draws inside each bin, "midpoint",
        or "interval" labels), NaN where the spec has a missing level. ``decode=False`` (or no
        spec) gives the integer codes. Sampling is post-processing of the public model, so ``rng``
        may be a seed or Generator for reproducible rows: they reveal nothing beyond the model.
        None uses fresh OS entropy.
        """
        if decode and self._discretizer is None:
            raise ValueError("decode=True needs a release with a spec (this one holds codes only)")
        if n is None:
            n = round(self.model.total)  # noisy, public; a crafted total is capped below
        release_checks.check_synthetic_size(n, len(self.domain))
        rng = sampling_rng(rng)
        codes = self.model.synthetic_data(n, rng)
        if decode is False or self._discretizer is None:
            return codes
        return self._discretizer.inverse_transform(codes, rng=rng, numeric=numeric, typed=True)

    def synthetic_codes(self, n: int | None = None, rng: SamplingSeed = None) -> pd.DataFrame:
        """Synthetic rows as integer codes over `domain` (what estimators fitted on codes consume)."""
        return self.synthetic_data(n, rng, decode=False)

    def save(self, path: str | os.PathLike) -> None:
        """Write the release to one ``.npz`` file atomically (see the module docstring)."""
        header = {
            "format": FORMAT,
            "version": VERSION,
            "domain": self.domain.to_dict(),
            "measurements": [{"clique": list(m.clique), "sigma": m.sigma} for m in self.measurements],
            "model": {
                "cliques": [list(c) for c in self.model.cliques],
                "total": self.model.total,
                "info": {k: v for k, v in self.model.info.items() if isinstance(v, (int, float, str, bool))},
            },
            "ledger": self.ledger.to_dict(),
            "rounds": self.rounds,
            "config": self.config,
            "private": bool(self.private),
            "spec": self.spec,
        }
        arrays = {"header": np.array(json.dumps(header))}
        for i, m in enumerate(self.measurements):
            arrays[f"measurement_{i}"] = m.noisy_counts
        for i, factor in enumerate(self.model.potentials.values()):
            arrays[f"potential_{i}"] = factor.values
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        write_bytes_atomic(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Release":
        """Read a file written by `save`. Checks the format name and version, then everything a
        foreign or crafted file could get wrong before allocating (see `aim.release_checks`);
        any problem is a `ReleaseFormatError` naming the file."""
        try:
            return cls._read(path)
        except (ReleaseFormatError, FileNotFoundError, IsADirectoryError, PermissionError):
            raise
        except Exception as exc:  # zip, npz, JSON or key errors: a truncated or foreign file
            raise ReleaseFormatError(f"{path}: not a readable release file ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _read(cls, path: str | os.PathLike) -> "Release":
        with release_checks.open_archive(path) as npz:
            header = release_checks.read_header(npz, path)
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                found = header.get("format") if isinstance(header, dict) else None
                raise ReleaseFormatError(f"{path}: not a release file (format {found!r})")
            if header.get("version") not in READABLE_VERSIONS:
                hint = " (version 1 files stored the seed that undoes their noise: re-run the mechanism)" if header.get("version") == 1 else ""
                raise ReleaseFormatError(
                    f"{path}: release format version {header.get('version')} is not supported (expected {VERSION}){hint}"
                )
            checked = release_checks.check_header(header, path)
            domain = checked["domain"]
            spec = release_checks.check_spec(header.get("spec"), header["version"], domain, path)
            measurements = [
                Measurement(c, release_checks.read_array(npz, f"measurement_{i}", path, domain.project(c).shape), sigma)
                for i, (c, sigma) in enumerate(zip(checked["measured"], checked["sigmas"]))
            ]
            cliques = checked["cliques"]
            potentials = [
                release_checks.read_array(npz, f"potential_{i}", path, domain.project(c).shape)
                for i, c in enumerate(cliques)
            ]
        for c, p in zip(cliques, potentials):
            release_checks.check_potential(p, c, path)
        model = Model(domain, cliques, potentials, checked["total"], info=checked["info"])
        private = header.get("private")
        if not isinstance(private, bool):
            raise ReleaseFormatError(f"{path}: header field 'private' must be true or false, got {private!r}")
        if not private:
            warnings.warn(
                f"{path}: this release was made with a seeded noise source (tests/benchmarks): its noise can be "
                "undone by anyone who knows the seed; it is NOT differentially private",
                NotPrivateWarning,
                stacklevel=3,
            )
        return cls(
            domain=domain,
            measurements=measurements,
            model=model,
            ledger=checked["ledger"],
            rounds=header["rounds"],
            config=header["config"],
            private=private,
            spec=spec,
        )

    def report(self, path: str | os.PathLike, data: Dataset | pd.DataFrame | None = None, *,
               synthetic: Dataset | pd.DataFrame | None = None, labels: Callable[[str], Sequence[str] | None] | None = None,
               png_dir: str | os.PathLike | bool = True, title: str | None = None, worst: int = 6) -> Path:
        """Write the one-file HTML quality report (and its PNGs); see `aim.report.build.write_report`.
        ``data`` (the private rows) adds a NON-PRIVATE diagnostic: do not publish that report."""
        from .report.build import write_report  # loaded only when a report is written (its plots need an extra)

        return write_report(self, path, data, synthetic=synthetic, labels=labels, png_dir=png_dir, title=title,
                            worst=worst)

    def without(self, attrs: Sequence[str]) -> "ReleaseView":
        """This release seen without ``attrs`` (e.g. a feature that leaks the target)."""
        return ReleaseView(self, tuple(self.domain.check(attrs)))

    def summary(self) -> str:
        """A short readable description: size, rounds, model and ledger."""
        lines = [
            f"release over {len(self.domain)} attributes: {len(self.measurements)} measurements, "
            f"{len(self.rounds)} selection rounds, model {len(self.model.cliques)} cliques / {self.model.size_mb:.2f} MB, "
            f"estimated rows {self.model.total:,.0f}",
            self.ledger.summary(),
            *self.threshold_lines(),
            *([] if self._discretizer is None else [f"spec: readable values for {len(self.domain)} columns "
                                                    "(categories and bin edges are public or DP-derived)"]),
            *([] if self.private else ["NOT PRIVATE: made with a seeded noise source (tests and benchmarks only)"]),
        ]
        return "\n".join(lines)

    def threshold_lines(self) -> list[str]:
        """The delta that thresholded histograms (DP spec inference) add to the ledger's, as ledger lines."""
        reserved = self.config.get("threshold_delta", 0.0)
        if not reserved or self.ledger.delta is None:
            return []
        used = math.fsum(c.params.get("delta", 0.0) for c in self.ledger.charges)
        return [f"  thresholded histograms (DP spec): delta {used:.3g} of {reserved:.3g} reserved; the release is "
                f"(eps = {self.ledger.epsilon():.6g}, delta = {self.ledger.delta + reserved:g})-DP"]


class ReleaseView:
    """A release seen without some attributes: marginals over the rest, synthetic rows without them."""

    def __init__(self, release: Release, dropped: tuple[str, ...]) -> None:
        self.release = release
        self.dropped = dropped
        self.domain = release.domain.marginalize(dropped)
        self.model = release.model  # clique membership (which pairs were measured) is unchanged

    @property
    def total(self) -> float:
        """The model's (noisy) estimate of the number of rows."""
        return self.release.total

    @property
    def discretizer(self) -> Discretizer | None:
        """The release's spec (labels of the remaining columns; None without a spec)."""
        return self.release.discretizer

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        """The model's cliques (dropping attributes does not change which pairs were fitted)."""
        return self.release.cliques

    @property
    def measurements(self) -> list:
        """The release's noisy measurements (all of them, dropped attributes included)."""
        return self.release.measurements

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """The model's marginal over ``attrs`` (none of them dropped)."""
        return self.marginals([tuple(attrs)])[0]

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The model's marginals over cliques of the remaining attributes."""
        return self.release.marginals([tuple(self.domain.check(c)) for c in cliques])

    def synthetic_data(self, n: int | None = None, rng: SamplingSeed = None,
                       decode: bool | None = None, numeric: str = "uniform") -> pd.DataFrame:
        """The release's synthetic rows without the dropped columns (see `Release.synthetic_data`)."""
        return self.release.synthetic_data(n, rng, decode, numeric).drop(columns=list(self.dropped))

    def synthetic_codes(self, n: int | None = None, rng: SamplingSeed = None) -> pd.DataFrame:
        """The release's synthetic codes without the dropped columns."""
        return self.synthetic_data(n, rng, decode=False)
