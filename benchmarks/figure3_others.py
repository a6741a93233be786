"""TukeyEM and PMT in the Figure-3 benchmark: their fits (called by `figure3_fits`) and their
section of summary.md (called by `figure3_report`).

Methods (same encodings as DD-SSP; every fit at the grid's (epsilon, delta = 1e-5)):

* ``tukeyem`` (linear tasks): TukeyEM on the private train rows with m = the largest of
  250, 500, ..., 2000 that leaves every subset at least one row per feature (n and p are public).
  When PTR fails no model is released; the row then scores the zero model (prediction 0 on the
  encoded target scale, which is the middle of [-1, 1]) and ``ptr_passed`` is False.
* ``pmt`` (all tasks): DP-PMT ridge / logistic with the public moment from a public split, a fixed
  random 5% of the train rows (the paper's protocol: those rows are public, not protected); the
  fit uses the other 95%.
* ``pmt_release`` (all tasks): DP-PMT with the moment from the AIM release of the same data set,
  epsilon and trial (post-processing of the release that DD-SSP and AIM-Synth use), on all train
  rows. Its own fit spends another (epsilon, delta): the pair costs the composition of both.
* ``dp_rr`` (linear) / ``dp_lr`` (logistic): the PMT paper's private-only baselines on the same
  95% rows, with clipping radii from the public split's moment.

PMT is mu-GDP (replace-one, n public) at mu = gdp_mu(epsilon, delta), the exact conversion.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from ddssp import PMTLinearRegression, PMTLogisticRegression, TukeyEM, build_encoding
from marginals import Dataset

from .harness import grid

PUBLIC_FRACTION = 0.05
PUBLIC_SPLIT_SEED = 20240  # a fixed, public choice of which rows are public
M_GRID = (250, 500, 750, 1000, 1250, 1500, 1750, 2000)
LINEAR = ("tukeyem", "pmt", "pmt_release", "dp_rr")
LOGISTIC = ("pmt", "pmt_release", "dp_lr")
LABELS = {"tukeyem": "TukeyEM (zero model if PTR fails)", "pmt": "PMT (5% public split)", "pmt_release": "PMT (moment from the AIM release)",
          "dp_rr": "DP-RR (private-only)", "dp_lr": "DP-LR (private-only)"}  # fmt: skip
STYLE = {"tukeyem": ("tab:purple", "D"), "pmt": ("tab:brown", "P"), "pmt_release": ("tab:pink", "*"),
         "dp_rr": ("tab:cyan", "h"), "dp_lr": ("tab:cyan", "h")}  # fmt: skip


def choose_models(n: int, p: int) -> int:
    """The largest m in M_GRID with n // m >= p (at least one row per feature in every subset)."""
    fits = [m for m in M_GRID if n // m >= p]
    if not fits:
        raise ValueError(f"TukeyEM: {n} rows are too few for {p} features with m >= {M_GRID[0]}")
    return fits[-1]


@lru_cache(maxsize=None)
def split_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(private, public) row indices of a table of ``n`` rows, each sorted."""
    order = np.random.default_rng(PUBLIC_SPLIT_SEED).permutation(n)
    k = int(round(PUBLIC_FRACTION * n))
    return np.sort(order[k:]), np.sort(order[:k])


def public_split(data: Dataset) -> tuple[Dataset, Dataset]:
    """(private 95%, public 5%) of a table, by a fixed public random choice of rows."""
    private_idx, public_idx = split_indices(len(data))
    df = data.to_df()
    return (Dataset(df.iloc[private_idx].reset_index(drop=True), data.domain),
            Dataset(df.iloc[public_idx].reset_index(drop=True), data.domain))  # fmt: skip


def pmt_model(kind: str, eps: float, delta: float, target: str, categorical, public_moment, seed: int,
              transform: bool = True):  # fmt: skip
    cls = PMTLinearRegression if kind == "linear" else PMTLogisticRegression
    return cls(eps, delta, target, categorical=categorical, public_moment=public_moment, moment_transform=transform,
               insecure_seed=seed)  # fmt: skip


def baseline_fits(task, data: Dataset, eps_list, trials: int, delta: float, categorical, seed_for):
    """(method, eps, trial, seed, model, fit data, extra row fields) for TukeyEM, PMT and DP-RR/LR
    on the private rows; ``seed_for(method, eps, trial)`` gives each fit's seed."""
    private, public = public_split(data)
    p = build_encoding(data.domain, task.target, task.kind, categorical).n_features
    m = choose_models(len(data), p) if task.kind == "linear" else None
    methods = LINEAR if task.kind == "linear" else LOGISTIC
    for method in methods:
        if method == "pmt_release":
            continue  # fitted next to the release (figure3_fits.release_fits)
        for eps, trial in grid(eps_list, trials):
            seed = seed_for(method, eps, trial)
            if method == "tukeyem":
                model = TukeyEM(eps, delta, task.target, categorical=categorical, n_models=m, insecure_seed=seed)
                yield method, eps, trial, seed, model, data, {"n_models": m}
            else:
                model = pmt_model(task.kind, eps, delta, task.target, categorical, public, seed,
                                  transform=(method == "pmt"))  # fmt: skip
                yield method, eps, trial, seed, model, private, {"public_moment": f"public split ({len(public)} rows)"}


def score(model, task, test: pd.DataFrame, evaluate) -> float:
    """The test metric; a TukeyEM fit without a model scores the zero model."""
    if getattr(model, "ptr_passed_", True):
        return evaluate(model, task, test)
    y = model.encoding_.encode_target(test)
    return float(np.mean(y**2))


# -- summary ----------------------------------------------------------------------------------------


def _cell(df: pd.DataFrame, method: str, eps: float, kind: str, fmt) -> str:
    sub = df[(df["method"] == method) & np.isclose(df["epsilon"], eps)]["metric"]
    if sub.empty:
        return "–"
    se = sub.std(ddof=1) / np.sqrt(len(sub)) if len(sub) > 1 else float("nan")
    return fmt(float(sub.mean()), se, kind)


def others_section(df: pd.DataFrame, fmt, ordered) -> list[str]:
    """Markdown: per task and epsilon, TukeyEM and PMT next to DD-SSP, AIM-Synth and AdaSSP/ObjPert,
    and TukeyEM's PTR pass rate."""
    if not df["method"].isin(set(LINEAR) | set(LOGISTIC)).any():
        return []
    lines = ["### TukeyEM and PMT next to DD-SSP, AIM-Synth and AdaSSP/ObjPert", ""]
    lines.append(f"TukeyEM: m = the largest of {M_GRID[0]}..{M_GRID[-1]} (step 250) with at least one row per feature "
                 "per subset; when PTR fails no model is released and the row scores the zero model, so the TukeyEM "
                 "column mixes both; *passed only* is the mean over trials that passed. PMT: 5% of the train rows "
                 "form the public split (moment source), the fit uses the other 95%; *PMT release* takes the moment "
                 "from the AIM release of the same epsilon and trial (its own fit spends another (eps, delta), so "
                 "publishing both costs the composition). DP-RR/DP-LR: the PMT paper's private-only baselines, radii "
                 "from the public split's moment. PMT, DP-RR and DP-LR are mu-GDP at mu = gdp_mu(eps, delta) (exact "
                 "conversion, replace-one neighbours with n public).")  # fmt: skip
    lines.append("")
    for dataset, task, kind in ordered(zip(df["dataset"], df["task"], df["kind"])):
        cell = df[(df["dataset"] == dataset) & (df["task"] == task)]
        base = "adassp" if kind == "linear" else "objpert"
        cols = ["ddssp", "aim_synth", base] + list(LINEAR if kind == "linear" else LOGISTIC)
        names = ["DD-SSP", "AIM-Synth", "AdaSSP" if kind == "linear" else "ObjPert"] + [
            LABELS[c] for c in cols[3:]]  # fmt: skip
        if kind == "linear":
            names.insert(4, "PTR pass rate (m)")
            names.insert(5, "TukeyEM, passed only")
        metric = "test MSE" if kind == "linear" else "test AUC"
        lines.append(f"#### {dataset} / {task} ({metric})")
        lines.append("")
        lines.append("| epsilon | " + " | ".join(names) + " |")
        lines.append("|---" * (len(names) + 1) + "|")
        for eps in sorted(cell["epsilon"].unique()):
            row = [f"{eps:g}"]
            for c in cols:
                row.append(_cell(cell, c, eps, kind, fmt))
                if c == "tukeyem":
                    tk = cell[(cell["method"] == "tukeyem") & np.isclose(cell["epsilon"], eps)]
                    passed = tk["ptr_passed"].astype("boolean").fillna(False).astype(bool)
                    m = tk["n_models"].dropna()
                    row.append(f"{int(passed.sum())}/{len(tk)} ({int(m.iloc[0]) if len(m) else '?'})" if len(tk) else "–")
                    row.append(_cell(tk[passed], "tukeyem", eps, kind, fmt) if passed.any() else "–")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    tk = df[df["method"] == "tukeyem"]
    if not tk.empty:
        rate = tk.assign(passed=tk["ptr_passed"].astype("boolean").fillna(False).astype(float))
        table = rate.groupby("epsilon")["passed"].agg(["sum", "count"])
        lines.append("TukeyEM PTR pass rate per epsilon (all linear tasks): "
                     + ", ".join(f"eps {e:g}: {int(r['sum'])}/{int(r['count'])}" for e, r in table.iterrows()) + ".")
        lines.append("")
    return lines
