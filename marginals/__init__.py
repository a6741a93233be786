"""Everything that touches private rows or privacy: domains, datasets, contingency tables,
zCDP and mu-GDP accounting, secure randomness, and the exact discrete Gaussian and exponential mechanisms."""

from .dataset import DataError, Dataset
from .discretize import Discretizer
from .distributed import DaskDataset  # imports dask only when a DaskDataset is built
from .domain import Domain
from .gdp import gdp_compose, gdp_delta, gdp_eps, gdp_mu
from .mechanisms import (
    Measurement,
    exponential_mechanism,
    gaussian_measure,
    measure_counts,
    selection_probabilities,
)
from .privacy import Accountant, BudgetExceeded, Charge, cdp_delta, cdp_eps, cdp_rho
from .source import MarginalSource, MeasuredSource, ModelSource, RowSource, as_marginal_source, implements
from .randomness import InsecureRandom, InsecureSeedWarning, RandomSource, SecureRandom, noise_source, sampling_rng

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
    "as_marginal_source",
    "cdp_delta",
    "cdp_eps",
    "cdp_rho",
    "exponential_mechanism",
    "gdp_compose",
    "gdp_delta",
    "gdp_eps",
    "gdp_mu",
    "gaussian_measure",
    "implements",
    "measure_counts",
    "noise_source",
    "sampling_rng",
    "selection_probabilities",
]
