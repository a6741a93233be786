"""Baselines on the private rows: AdaSSP, TukeyEM and PMT ridge (linear), ObjPert and PMT
logistic (logistic), and non-private fits.

Each takes its budget (epsilon, delta) (both required) and fits a `marginals.Dataset` with ``target=``,
a DataFrame of codes with ``target=`` and ``domain=`` (its public `Domain`), or ``X, y`` with ``domain=``:
``AdaSSP(1.0, 1e-6, target="education-num").fit(load_adult())``. Every fit is its own release (see
`ddssp.base.ModelSelectionBudgetWarning` for cross-validation)."""

from ..base import ModelSelectionBudgetWarning
from .adassp import AdaSSP
from .objpert import ObjPert
from .pmt_models import PMTLinearRegression, PMTLogisticRegression, PublicMomentWarning
from .public import PublicLinearRegression, PublicLogisticRegression
from .tukeyem import MonotoneWeightsWarning, PTRFailedWarning, TukeyEM

__all__ = [
    "AdaSSP",
    "ModelSelectionBudgetWarning",
    "MonotoneWeightsWarning",
    "ObjPert",
    "PMTLinearRegression",
    "PMTLogisticRegression",
    "PTRFailedWarning",
    "PublicLinearRegression",
    "PublicLogisticRegression",
    "PublicMomentWarning",
    "TukeyEM",
]
