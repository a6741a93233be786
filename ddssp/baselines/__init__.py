"""Baselines on the private rows: AdaSSP (linear), ObjPert (logistic) and non-private fits."""

from .adassp import AdaSSP
from .objpert import ObjPert
from .public import PublicLinearRegression, PublicLogisticRegression

__all__ = ["AdaSSP", "ObjPert", "PublicLinearRegression", "PublicLogisticRegression"]
