"""`Release`: everything a DP run publishes — measurements, the fitted model, the privacy ledger,
the per-round log and the configuration — and its one-file, versioned storage.

No seed, generator state or anything derived from them is ever stored: the noise comes from the
operating system's secure source. A run on a seeded (test-only) source is marked
``private = False`` in the header; `load` warns when it reads such a file.

File format: an ``.npz`` (no pickle) holding a JSON header (``header``) plus one array per
measurement (``measurement_<i>``) and per model potential (``potential_<i>``); written atomically.
Everything here is post-processing of the DP measurements: no private rows are kept.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from marginals.domain import Domain, write_bytes_atomic
from marginals.mechanisms import Measurement
from marginals.privacy import Accountant
from marginals.randomness import sampling_rng
from pgm.model import Model

from . import release_checks
from .release_checks import ReleaseFormatError

FORMAT = "dp-marginals-release"
VERSION = 2  # 1 stored the seed that undoes the noise: such files are refused


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

    @property
    def epsilon(self) -> float | None:
        return self.config.get("epsilon")

    @property
    def delta(self) -> float | None:
        return self.ledger.delta

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
        return self.model.marginals([tuple(attrs)])[0]

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many model marginals in one batched call (what DD-SSP consumes)."""
        return self.model.marginals([tuple(c) for c in cliques])

    def synthetic_data(self, n: int | None = None, rng: np.random.Generator | int | None = None) -> pd.DataFrame:
        """Synthetic rows from the model (default n = round(total)).

        Sampling is post-processing of the public model, so ``rng`` may be a seed or Generator
        for reproducible rows: they reveal nothing beyond the model. None uses fresh OS entropy.
        """
        return self.model.synthetic_data(n, sampling_rng(rng))

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
            if header.get("version") != VERSION:
                hint = " (version 1 files stored the seed that undoes their noise: re-run the mechanism)" if header.get("version") == 1 else ""
                raise ReleaseFormatError(
                    f"{path}: release format version {header.get('version')} is not supported (expected {VERSION}){hint}"
                )
            checked = release_checks.check_header(header, path)
            domain = checked["domain"]
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
        )

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
            *([] if self.private else ["NOT PRIVATE: made with a seeded noise source (tests and benchmarks only)"]),
        ]
        return "\n".join(lines)


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

    def synthetic_data(self, n: int | None = None, rng: np.random.Generator | int | None = None) -> pd.DataFrame:
        """The release's synthetic rows without the dropped columns."""
        return self.release.synthetic_data(n, rng).drop(columns=list(self.dropped))
