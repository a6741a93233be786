"""`Model`: a fitted graphical model — log-potentials on cliques, a total, and a junction tree.

Calibrated beliefs are computed once (lazily, or handed over by the estimator) and shared by
every query: `project`, the batched `marginals`, and `synthetic_data`. A model fitted by
`pgm.estimate` also carries the step size its descent ended with (`stepsize`, None otherwise):
a warm-started fit resumes from it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from marginals.domain import Domain
from marginals.randomness import SamplingSeed

from .factor import Factor
from .inference import TreeEngine
from .junction_tree import Clique, JunctionTree, build_junction_tree
from .kernels.blas import blas_single_threaded
from .queries import MarginalOracle


class Model:
    """A graphical model over ``domain`` with log-potentials on ``cliques`` and ``total`` rows."""

    def __init__(
        self,
        domain: Domain,
        cliques: Sequence[Sequence[str]],
        potentials: Sequence[np.ndarray],
        total: float,
        tree: JunctionTree | None = None,
        beliefs: Sequence[np.ndarray] | None = None,
        info: dict | None = None,
        stepsize: float | None = None,
    ) -> None:
        self.domain = domain
        self.cliques: tuple[Clique, ...] = tuple(domain.check(c) for c in cliques)
        if len(set(self.cliques)) != len(self.cliques):
            dup = sorted({c for c in self.cliques if self.cliques.count(c) > 1})
            raise ValueError(f"repeated clique(s) {dup}: give one potential table per clique")
        if len(potentials) != len(self.cliques):
            raise ValueError(f"{len(self.cliques)} cliques but {len(potentials)} potential tables")
        self.potentials: dict[Clique, Factor] = {
            c: Factor(domain.project(c), np.asarray(p, dtype=np.float64)) for c, p in zip(self.cliques, potentials)
        }
        self.total = float(total)
        self.tree = tree if tree is not None else build_junction_tree(domain, self.cliques)
        self.info = dict(info or {})
        #: the mirror-descent step size the fit ended with (None unless fitted by `pgm.estimate`);
        #: a warm-started `estimate` resumes from it.
        self.stepsize = None if stepsize is None else float(stepsize)
        self._beliefs = None if beliefs is None else list(beliefs)
        self._oracle: MarginalOracle | None = None

    @property
    def beliefs(self) -> list[np.ndarray]:
        """Calibrated node marginals (counts) of the junction tree, computed once."""
        if self._beliefs is None:
            engine = TreeEngine(self.tree, self.cliques)
            self._beliefs = engine.calibrate([f.values for f in self.potentials.values()], self.total)
        return self._beliefs

    @property
    def oracle(self) -> MarginalOracle:
        if self._oracle is None:
            self._oracle = MarginalOracle(self.tree, self.beliefs, self.total)
        return self._oracle

    @property
    def size_mb(self) -> float:
        """Memory of the junction-tree tables in MiB."""
        return self.tree.size_mb

    @blas_single_threaded
    def project(self, attrs: Sequence[str]) -> Factor:
        """The model's marginal (counts) over ``attrs`` as a `Factor`, axes in the order given."""
        attrs = self.domain.check(attrs)
        return Factor(self.domain.project(attrs), self.oracle.marginal(attrs))

    @blas_single_threaded
    def marginals(self, subsets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Marginals (counts, axes in the order given) of many attribute subsets, sharing one calibration."""
        return self.oracle.marginals(subsets)

    @blas_single_threaded
    def synthetic_data(self, n: int | None = None, rng: SamplingSeed = None,
                       given: Mapping[str, Any] | pd.DataFrame | None = None) -> pd.DataFrame:
        """``n`` synthetic rows (default round(total)) as a DataFrame in domain order.

        Sampling is post-processing of the model: ``rng`` may be a Generator or an int seed for
        reproducible rows, None for fresh OS entropy (`marginals.randomness.sampling_rng`).
        ``given`` conditions the rows on codes (`pgm.conditional`): a dict ``{attr: code or codes}``
        (default n: round(total * p(given))), or a DataFrame of codes, one row drawn per given row
        (NaN cells and absent columns drawn, the rest kept; n must be None or its length).
        """
        if given is None:
            from .sampling import sample_rows

            return sample_rows(self, n, rng)
        from . import conditional

        if isinstance(given, pd.DataFrame):
            if n is not None and int(n) != len(given):
                raise ValueError(f"n={n} but given holds {len(given)} rows: one row is drawn per given row")
            return conditional.impute(self, given, rng)
        return conditional.sample_given(self, n, given, rng)

    def __repr__(self) -> str:
        return f"Model({len(self.cliques)} cliques, total={self.total:.1f}, {self.size_mb:.3f} MB)"
