"""Everything that touches private rows or privacy: domains, datasets, contingency tables,
zCDP and mu-GDP accounting, secure randomness, the exact discrete Gaussian and exponential
mechanisms, the measurement record they publish, the `MarginalSource` contract, and
discretization specs (public drafts, or completed from the rows under DP)."""

from .dataset import DataError, Dataset
from .spec.discretize import Discretizer
from .distributed import DaskDataset  # imports dask only when a DaskDataset is built
from .domain import Domain
from .gdp import gdp_compose, gdp_delta, gdp_eps, gdp_mu
from .measurement import Measurement
from .mechanisms import exponential_mechanism, gaussian_measure, measure_counts, selection_probabilities
from .privacy import Accountant, BudgetExceeded, Charge, cdp_delta, cdp_eps, cdp_rho, check_epsilon_delta
from .source import MarginalSource, MeasuredSource, ModelSource, RowSource, as_marginal_source, implements
from .randomness import InsecureRandom, InsecureSeedWarning, RandomSource, SecureRandom, noise_source, sampling_rng
from .spec.infer import SpecInferenceWarning, infer_spec
from .spec.public import draft_spec, spec_gaps

__all__ = [
    "Accountant",
    "BudgetExceeded",
    "Charge",
    "DaskDataset",
    "DataError",
    "Dataset",
    "Discretizer",
    "Domain",
    "InsecureRandom",
    "InsecureSeedWarning",
    "MarginalSource",
    "Measurement",
    "MeasuredSource",
    "ModelSource",
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
