"""Everything that touches private rows or privacy: domains, datasets, contingency tables,
zCDP accounting, and the Gaussian and exponential mechanisms."""

from .dataset import DataError, Dataset
from .discretize import Discretizer
from .distributed import DaskDataset  # imports dask only when a DaskDataset is built
from .domain import Domain
from .mechanisms import (
    Measurement,
    exponential_mechanism,
    gaussian_measure,
    measure_counts,
    selection_probabilities,
)
from .privacy import Accountant, BudgetExceeded, Charge, cdp_delta, cdp_eps, cdp_rho

__all__ = [
    "Accountant",
    "BudgetExceeded",
    "Charge",
    "DaskDataset",
    "DataError",
    "Dataset",
    "Discretizer",
    "Domain",
    "Measurement",
    "cdp_delta",
    "cdp_eps",
    "cdp_rho",
    "exponential_mechanism",
    "gaussian_measure",
    "measure_counts",
    "selection_probabilities",
]
