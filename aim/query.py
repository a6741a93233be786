"""Answers with error bars: a release's marginal over a few attributes, with a standard error per
cell (`query`, also ``Release.query``). Everything is post-processing of the release: its
measurements, model and configuration; no row is read and no budget is spent.

How the standard error (``se``) is obtained, per query (column ``se_from``):

- ``"measured"``: some measurement's clique holds every queried attribute. ``se`` is then the exact
  standard deviation of the best linear unbiased (GLS) estimate of each cell's count from all the
  release's measurements, around the count of the private rows (with a privacy unit: the rows kept,
  at most k per unit): the measurements are unbiased, independent and Gaussian with their recorded
  sigmas (for the exact discrete Gaussian, the square root of its variance; `pgm.measured`). One measurement of the set gives sigma; one of a larger clique C
  gives sigma sqrt(|C| / |S|) (cells); several are combined by inverse variance, and the 1-way
  measurements reduce it further. The release's answer is the model's marginal, which equals that
  GLS estimate when the fit has converged and the model's non-negativity does not bind; in small
  cells the model is pulled towards zero and towards its structure, so there ``se`` is the error bar
  of the unbiased estimate the model smooths, not of the model itself.
- ``"inferred"``: no measurement holds the set; the model inferred its marginal from its
  conditional independences. ``se`` is a parametric bootstrap of the model fit: ``n_boot`` times,
  draw fresh noisy measurements of the measured cliques from the released model's marginals with
  the release's sigmas, refit the model (warm-started from the released one, the release's loss
  weight and estimator options) and take the queried marginal; ``se`` is their standard deviation.
  It is the noise of the fit with the released model as the truth: it does not cover the bias of
  the model's independence assumptions (the truth may not follow them).

A cell the release's public rules forbid (a structural zero: the model gives it exactly 0, and so
does the truth) has ``se`` 0; the GLS above does not use the rules, so it is unbiased but not the
minimum variance when they forbid cells of a measured clique.

``se_fraction`` is the standard error of ``fraction`` (the count over the model's total): the delta
method on the GLS count and total when measured, the replicates' spread of count / total when
inferred. With ``alpha``, ``lower`` and ``upper`` are count +- z_{1 - alpha/2} se (the lower bound
clipped at 0, which never uncovers a count), and ``lower_fraction`` / ``upper_fraction`` likewise.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from marginals.limits import check_cells
from marginals.measurement import Measurement
from marginals.randomness import SamplingSeed, sampling_rng
from pgm.estimation import estimate
from pgm.measured import gls_variance, is_measured

#: how a query's standard error was obtained (the ``se_from`` column).
SE_SOURCES = ("measured", "inferred")
#: default number of bootstrap refits for an inferred query.
DEFAULT_BOOT = 30
#: least mirror-descent iterations of a bootstrap refit (the release's final fit may run fewer: it
#: starts next to its optimum; a refit starts from the released model, one noise draw away).
BOOT_ITERS = 200
#: the table's value columns, in order (``lower`` .. ``upper_fraction`` only with ``alpha``).
VALUE_COLUMNS = ("count", "fraction", "se", "se_fraction", "se_from")
BOUND_COLUMNS = ("lower", "upper", "lower_fraction", "upper_fraction")


def check_query(release: Any, attrs: Any) -> tuple[str, ...]:
    """``attrs`` as a tuple of the release's attribute names; TypeError / ValueError naming ``attrs``."""
    if isinstance(attrs, str) or not isinstance(attrs, Sequence) or not all(isinstance(a, str) for a in attrs):
        raise TypeError(f"attrs must be a list of attribute names, got {attrs!r}")
    if not attrs:
        raise ValueError("attrs must name at least one attribute")
    try:
        return release.domain.check(attrs)
    except ValueError as exc:
        raise ValueError(f"attrs: {exc}") from None


def _check_options(alpha: float | None, n_boot: int) -> None:
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1):
        raise ValueError(f"alpha must be None or lie in (0, 1), got {alpha!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")


def measured_se(release: Any, attrs: Sequence[str], counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(se of the counts, se of the fractions) of a measured query (see the module docstring)."""
    variance, cov_total = gls_variance(release.measurements, release.domain, attrs)
    total = float(counts.sum())
    se = np.full(counts.shape, math.sqrt(variance))
    if total <= 0:
        return se, np.full(counts.shape, np.nan)
    frac = counts / total
    # delta method for x / N: Var(N) = |S| cov_total, Cov(x_c, N) = cov_total (pgm.measured)
    frac_var = (variance - 2 * frac * cov_total + frac**2 * counts.size * cov_total) / total**2
    return se, np.sqrt(np.maximum(frac_var, 0.0))


def refit_options(release: Any) -> dict:
    """The `pgm.estimate` settings of a bootstrap refit: the release's loss weight and estimator
    options, at least `BOOT_ITERS` iterations (defaults when the release records no configuration)."""
    mechanism = release.config.get("mechanism") if isinstance(release.config, dict) else None
    if not mechanism:
        return {"iters": BOOT_ITERS}
    cfg = release.mechanism_config(insecure_seed=0)  # the seed only lets a float-noise config build
    return {"iters": max(BOOT_ITERS, cfg.final_iters), "tol": cfg.final_tol, "loss_weight": cfg.loss_weight,
            **cfg.estimator_options}


def bootstrap_marginals(release: Any, queries: Sequence[Sequence[str]], n_boot: int = DEFAULT_BOOT,
                        random_state: SamplingSeed = None, **options: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Parametric bootstrap of the model fit (see the module docstring): for each query, the
    (n_boot, *shape) refitted marginals and the (n_boot,) refitted totals. ``options`` override
    `refit_options` (e.g. ``iters``)."""
    _check_options(None, n_boot)
    queries = [check_query(release, q) for q in queries]
    check_cells(n_boot * sum(release.domain.size(q) for q in queries), f"{n_boot} bootstrap replicates")
    rng = sampling_rng(random_state, "random_state")
    settings = {**refit_options(release), **options}
    means = release.model.marginals([m.clique for m in release.measurements])
    tables: list[list[np.ndarray]] = [[] for _ in queries]
    totals = []
    for _ in range(n_boot):
        draws = [Measurement(m.clique, mu + rng.normal(0.0, m.sigma, size=mu.shape), m.sigma)
                 for m, mu in zip(release.measurements, means)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = estimate(release.domain, draws, warm_start=release.model, **settings)
        for out, table in zip(tables, model.marginals(queries)):
            out.append(table)
        totals.append(model.total)
    totals = np.array(totals)
    return [(np.array(t), totals) for t in tables]


def cell_values(release: Any, attrs: Sequence[str]) -> dict[str, Any]:
    """One column per attribute over the cells of the marginal (C order): the spec's labels when the
    release has one (categorical), the integer codes otherwise."""
    shape = tuple(release.domain[a] for a in attrs)
    codes = np.indices(shape).reshape(len(shape), -1)
    disc = release.discretizer
    out = {}
    for a, c in zip(attrs, codes):
        if disc is None:
            out[a] = c.astype(np.int64)
            continue
        labels = list(disc.labels(a))
        unique = len(set(labels)) == len(labels)
        out[a] = pd.Categorical.from_codes(c, labels) if unique else np.asarray(labels, dtype=object)[c]
    return out


def query(release: Any, attrs: Sequence[str], *, alpha: float | None = None, n_boot: int = DEFAULT_BOOT,
          random_state: SamplingSeed = None) -> pd.DataFrame:
    """The model's marginal over ``attrs`` with a standard error per cell, one row per cell (see
    the module docstring for what ``se`` is). ``n_boot`` and ``random_state`` (a seed is safe: this
    is post-processing of public data) drive the bootstrap of an inferred query only."""
    attrs = check_query(release, attrs)
    _check_options(alpha, n_boot)
    counts = release.marginal(attrs)
    total = float(counts.sum())
    if is_measured(release.measurements, attrs):
        source = "measured"
        se, se_fraction = measured_se(release, attrs, counts)
    else:
        source = "inferred"
        tables, totals = bootstrap_marginals(release, [attrs], n_boot, random_state)[0]
        se = tables.std(axis=0, ddof=1)
        se_fraction = (tables / totals.reshape((-1,) + (1,) * len(attrs))).std(axis=0, ddof=1)
    forbidden = counts == 0.0  # only a structural zero (a public rule's -inf potential) gives exactly 0
    se, se_fraction = np.where(forbidden, 0.0, se), np.where(forbidden, 0.0, se_fraction)
    table = pd.DataFrame(cell_values(release, attrs))
    table["count"] = counts.ravel()
    table["fraction"] = counts.ravel() / total if total > 0 else np.nan
    table["se"] = se.ravel()
    table["se_fraction"] = se_fraction.ravel()
    table["se_from"] = source
    if alpha is not None:
        z = float(stats.norm.ppf(1 - alpha / 2))
        for name, value, spread in (("", "count", "se"), ("_fraction", "fraction", "se_fraction")):
            table["lower" + name] = np.maximum(table[value] - z * table[spread], 0.0)
            table["upper" + name] = table[value] + z * table[spread]
    return table
