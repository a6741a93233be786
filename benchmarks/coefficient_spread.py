"""Release-to-release spread and bias of DD-SSP coefficients, default vs ``targets=`` releases
(issue 27 item 2, the pilot that sizes the coverage study).

An interval covers the estimand only if the estimator's bias is small beside its spread. This
benchmark measures both without any bootstrap: R seeded AIM releases per (data set, workload,
epsilon) (all features of the task, the paper's categorical presets, the first 50,000 training rows,
delta 1e-5, max_model_size 80, `benchmarks.figure3_fits`'s seeds and release cache), DD-SSP fitted on
each, and per coefficient j the mean m_j and sd s_j over releases against the estimand theta_j:

* linear: the OLS of the private rows (the public fit);
* logistic, Chebyshev objective: DD-SSP on the exact marginals of the private rows (its estimand);
* logistic, expected objective: the public logistic MLE.

Reported per cell: the share of the pairs Z^T Z needs that lie inside a model clique (feature-target
and feature-feature), the median |m_j - theta_j| / s_j, and the "oracle" coverage of
theta_hat -+ 1.645 s_j (the best any interval of the right width and no bias term can do: a
bootstrap that reproduced the spread exactly would get this), pooled over (release, coefficient).

    python -m benchmarks.coefficient_spread --releases 20 --eps 1
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .figure3_fits import TASKS, get_release
from .harness import CACHE, RESULTS, load_split, write_csv, write_text

DELTA = 1e-5
N_TRAIN = 50_000
TASK_KEYS = ("acs-employment/logistic", "acs-income-lin/linear")


def _task(key: str):
    dataset, name = key.split("/")
    return next(t for t in TASKS if t.dataset == dataset and t.name == name)


def _coef(model) -> np.ndarray:
    return np.asarray(model.coef_, dtype=float).ravel()


def estimands(task) -> dict[str, np.ndarray]:
    """theta per method name, from the private rows."""
    from ddssp import DDSSPLogisticRegression, PublicLinearRegression, PublicLogisticRegression

    train, _ = load_split(task.dataset, N_TRAIN)
    data = task.train(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if task.kind == "linear":
            return {"ddssp": _coef(PublicLinearRegression(task.target, categorical=task.categorical).fit(data))}
        return {"ddssp": _coef(DDSSPLogisticRegression(task.target, categorical=task.categorical).fit(data)),
                "ddssp_expected": _coef(PublicLogisticRegression(task.target, categorical=task.categorical).fit(data))}


def release_coefs(task, eps: float, trial: int, workload: str, seed: int) -> dict:
    """Coefficients of every method on one release, and its pair coverage."""
    from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
    from ddssp.statistics import uncovered_pairs

    options = {"targets": [task.target]} if workload == "targets" else {}
    spec = {"dataset": task.dataset, "eps": eps, "trial": trial, "delta": DELTA, "mms": 80.0, "seed": seed,
            "cache": str(CACHE / "figure3"), "aim_options": options}  # fmt: skip
    release, _ = get_release(spec)
    source = release.without(task.drop) if task.drop else release
    features = [a for a in source.domain.attrs if a != task.target]
    ft = [(a, task.target) for a in features]
    ff = list(itertools.combinations(features, 2))
    out = {"ft_measured": 1 - len(uncovered_pairs(ft, release.cliques)) / len(ft),
           "ff_measured": 1 - len(uncovered_pairs(ff, release.cliques)) / len(ff)}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if task.kind == "linear":
            out["ddssp"] = _coef(DDSSPLinearRegression(task.target, categorical=task.categorical).fit(source))
        else:
            out["ddssp"] = _coef(DDSSPLogisticRegression(task.target, categorical=task.categorical).fit(source))
            out["ddssp_expected"] = _coef(DDSSPLogisticRegression(task.target, categorical=task.categorical,
                                                                  objective="expected", random_state=trial).fit(source))  # fmt: skip
    return out


def cell_stats(coefs: np.ndarray, theta: np.ndarray) -> dict:
    """Bias / spread summaries of (R, p) coefficients against theta."""
    mean, sd = coefs.mean(axis=0), coefs.std(axis=0, ddof=1)
    ok = sd > 0
    ratio = np.abs(mean - theta)[ok] / sd[ok]
    covered = np.abs(coefs - theta)[:, ok] <= 1.645 * sd[ok]
    return {"p": coefs.shape[1], "median_bias_over_sd": float(np.median(ratio)),
            "share_bias_over_1sd": float(np.mean(ratio > 1)), "oracle_coverage_90": float(covered.mean()),
            "median_sd": float(np.median(sd))}  # fmt: skip


def markdown(df: pd.DataFrame) -> str:
    """The rows as a markdown table (floats to 3 significant digits)."""
    cells = [[f"{v:.3g}" if isinstance(v, float) else str(v) for v in row] for row in df.itertuples(index=False)]
    return "\n".join(["| " + " | ".join(df.columns) + " |", "|---" * len(df.columns) + "|"]
                     + ["| " + " | ".join(c) + " |" for c in cells])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_KEYS))
    parser.add_argument("--eps", nargs="+", type=float, default=[1.0])
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--workloads", nargs="+", default=["default", "targets"])
    parser.add_argument("--seed", type=int, default=242)
    parser.add_argument("--out", type=Path, default=RESULTS / "coefficient_spread")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*(seeded|insecure).*")
    start, rows = time.perf_counter(), []
    for key in args.tasks:
        task = _task(key)
        theta = estimands(task)
        for eps in args.eps:
            for workload in args.workloads:
                got = [release_coefs(task, eps, r, workload, args.seed) for r in range(args.releases)]
                for method in theta:
                    row = {"task": key, "workload": workload, "epsilon": eps, "method": method, "releases": len(got),
                           "ft_measured": np.mean([g["ft_measured"] for g in got]),
                           "ff_measured": np.mean([g["ff_measured"] for g in got]),
                           **cell_stats(np.array([g[method] for g in got]), theta[method])}  # fmt: skip
                    rows.append(row)
                    print(f"[{time.perf_counter() - start:5.0f}s] " + " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                                                       for k, v in row.items()), file=sys.stderr, flush=True)  # fmt: skip
    df = pd.DataFrame(rows)
    write_csv(df, args.out / "results.csv")
    table = markdown(df)
    write_text(args.out / "summary.md", "# DD-SSP coefficients: bias against release-to-release spread\n\n"
               f"`python -m benchmarks.coefficient_spread --releases {args.releases} --eps {' '.join(f'{e:g}' for e in args.eps)}`"
               f" ({time.perf_counter() - start:.0f} s on a loaded 2-core machine)\n\n{table}\n")  # fmt: skip
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
