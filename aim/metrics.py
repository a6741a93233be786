"""Workload error: how far a model's (or a synthetic table's) marginals are from the true ones.

error = mean over the workload of || p_r - q_r ||_1, with p_r, q_r the true and estimated
marginals over clique r, each normalised to sum to 1. (mbi's AIM script prints half of this,
the total-variation distance, weighted by the workload weights.)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from marginals.dataset import Dataset
from pgm.model import Model

from .workload import split_item


def workload_error(
    dataset: Dataset,
    estimate: "Model | pd.DataFrame | Dataset",
    workload: Sequence[tuple[Sequence[str], float]] | Sequence[Sequence[str]],
    weighted: bool = False,
) -> float:
    """Mean L1 distance between normalised true and estimated marginals over the workload cliques.

    ``estimate`` is a fitted `pgm.Model` (or anything with ``.marginals``), a synthetic
    DataFrame, or a `Dataset`. ``weighted=True`` multiplies each term by its workload weight.
    """
    cliques, weights = [], []
    for item in workload:
        clique, weight = split_item(item)
        cliques.append(tuple(clique))
        weights.append(weight)
    if not cliques:
        raise ValueError("the workload is empty")
    if isinstance(estimate, pd.DataFrame):
        estimate = Dataset(estimate, dataset.domain)
    true_tables = dataset.marginals(cliques)
    est_tables = estimate.marginals(cliques)
    errors = []
    for t, e, w in zip(true_tables, est_tables, weights):
        t = np.asarray(t, dtype=np.float64)
        e = np.asarray(e, dtype=np.float64)
        e_sum = e.sum()
        q = e / e_sum if e_sum > 0 else np.full(e.shape, 1.0 / e.size)
        errors.append((w if weighted else 1.0) * np.abs(t / t.sum() - q).sum())
    return float(np.mean(errors))
