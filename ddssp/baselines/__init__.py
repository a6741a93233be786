"""Baselines on the private rows: AdaSSP, TukeyEM and PMT ridge (linear), ObjPert and PMT
logistic (logistic), and non-private fits."""

from .adassp import AdaSSP
from .objpert import ObjPert
from .pmt_models import PMTLinearRegression, PMTLogisticRegression
from .public import PublicLinearRegression, PublicLogisticRegression
from .tukeyem import MonotoneWeightsWarning, PTRFailedError, TukeyEM

__all__ = [
    "AdaSSP",
    "MonotoneWeightsWarning",
    "ObjPert",
    "PMTLinearRegression",
    "PMTLogisticRegression",
    "PTRFailedError",
    "PublicLinearRegression",
    "PublicLogisticRegression",
    "TukeyEM",
]
