"""Everything that touches private rows or privacy, the first package of the chain (pgm, aim and
ddssp build on it). Its modules, grouped:

- the vocabulary every package shares: `domain` (attributes and their sizes), `measurement` (one
  noisy marginal), `files` (atomic writes, strict JSON reads), `cell_keys` (one key per raw cell),
  `rules` (public rules over codes as structural zeros);
- the DP primitives: `privacy` (zCDP <-> (eps, delta), the `Accountant`), `maps` (each
  mechanism's privacy map), `mechanisms` (measure a marginal, select by the exponential
  mechanism), `exact` and `lattice` (exact samplers), `randomness` (secure and test sources),
  `gdp` (mu-GDP conversions);
- the data tables: `dataset` (validated codes), `tables` (contingency tables), `distributed`
  (dask), `source` (the `MarginalSource` contract), `datasets` (the shipped Adult table),
  `units` (person-level privacy: the privacy unit and the bound on its rows);
- the spec subsystem, `marginals/spec/`: discretization specs, public drafts or completed from
  the rows under DP.

`pgm` imports only the vocabulary (`domain`, `measurement`) and `randomness`: no module that reads rows."""

from .dataset import DataError, Dataset
from .spec.discretize import Discretizer
from .distributed import DaskDataset  # imports dask only when a DaskDataset is built
from .domain import Domain
from .gdp import gdp_compose, gdp_delta, gdp_eps, gdp_mu
from .maps import ExponentialMap, GaussianMap, LaplaceMap
from .measurement import Measurement
from .mechanisms import exponential_mechanism, gaussian_measure, measure_counts, selection_probabilities
from .privacy import Accountant, BudgetExceeded, Charge, cdp_delta, cdp_eps, cdp_rho, check_epsilon_delta
from .source import MarginalSource, MeasuredSource, ModelSource, RowSource, as_marginal_source, implements
from .randomness import InsecureRandom, InsecureSeedWarning, RandomSource, SecureRandom, noise_source, sampling_rng
from .spec.infer import SpecInferenceWarning, infer_spec
from .spec.public import draft_spec, spec_gaps
from .units import PrivacyUnit

__all__ = [
    "Accountant",
    "BudgetExceeded",
    "Charge",
    "DaskDataset",
    "DataError",
    "Dataset",
    "Discretizer",
    "Domain",
    "ExponentialMap",
    "GaussianMap",
    "InsecureRandom",
    "InsecureSeedWarning",
    "LaplaceMap",
    "MarginalSource",
    "Measurement",
    "MeasuredSource",
    "ModelSource",
    "PrivacyUnit",
    "RandomSource",
    "RowSource",
    "SecureRandom",
    "SpecInferenceWarning",
    "as_marginal_source",
    "cdp_delta",
    "cdp_eps",
    "cdp_rho",
    "check_epsilon_delta",
    "draft_spec",
    "exponential_mechanism",
    "gdp_compose",
    "gdp_delta",
    "gdp_eps",
    "gdp_mu",
    "gaussian_measure",
    "implements",
    "infer_spec",
    "measure_counts",
    "noise_source",
    "sampling_rng",
    "selection_probabilities",
    "spec_gaps",
]
