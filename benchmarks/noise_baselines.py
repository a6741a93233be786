"""Baseline errors with the regression mechanisms' noise samplers (issue 23, item 6): AdaSSP
(linear), ObjPert (logistic) and PMT on the public 5% split (both kinds) on the Figure-3 tasks,
``--trials`` seeds per (task, method, epsilon); one CSV row per fit (metric and fit seconds).

Run the same command on two checkouts to compare samplers (old float noise vs exact lattice noise):

    PYTHONPATH=. python -m benchmarks.noise_baselines --out /tmp/noise_new.csv
    python -m benchmarks.noise_baselines --summary /tmp/noise_old.csv /tmp/noise_new.csv
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd

EPS = (0.1, 0.5, 1.0, 2.0, 5.0)
TASK_NAMES = (("adult", "linear"), ("acs-income-lin", "linear"), ("adult", "logistic"), ("acs-employment", "logistic"))


def run(out: str, trials: int, eps_list, n_train: int) -> None:
    """Fit every (task, method, eps, trial) and write the rows to ``out``."""
    from ddssp import AdaSSP, ObjPert

    from .figure3_fits import TASKS, evaluate
    from .figure3_others import pmt_model, public_split
    from .harness import load_split

    rows = []
    warnings.simplefilter("ignore")
    for task in TASKS:
        if (task.dataset, task.name) not in TASK_NAMES:
            continue
        train, test = load_split(task.dataset, n_train)
        data = task.train(train)
        private, public = public_split(data)
        for eps in eps_list:
            for trial in range(trials):
                seed = 1000 * trial + int(100 * eps)
                cls, method = (AdaSSP, "adassp") if task.kind == "linear" else (ObjPert, "objpert")
                fits = [(method, cls(eps, 1e-5, task.target, categorical=task.categorical, insecure_seed=seed), data),
                        ("pmt", pmt_model(task.kind, eps, 1e-5, task.target, task.categorical, public, seed), private)]
                for name, model, source in fits:
                    start = time.process_time()
                    model.fit(source)
                    seconds = time.process_time() - start
                    rows.append({"dataset": task.dataset, "task": task.name, "method": name, "epsilon": eps,
                                 "trial": trial, "metric": evaluate(model, task, test), "seconds": seconds})
                print(task.dataset, task.name, eps, trial, file=sys.stderr, flush=True)
    pd.DataFrame(rows).to_csv(out, index=False)


def summary(old: str, new: str) -> str:
    """A markdown table: mean +- sd of the metric (old, new) and mean fit seconds per cell."""
    frames = []
    for label, path in (("old", old), ("new", new)):
        df = pd.read_csv(path)
        g = df.groupby(["dataset", "task", "method", "epsilon"])
        frames.append(g["metric"].agg(["mean", "std"]).add_prefix(label + "_").join(g["seconds"].mean().rename(label + "_s")))
    t = frames[0].join(frames[1]).reset_index()
    lines = ["| dataset | task | method | eps | old mean +- sd | new mean +- sd | old s | new s |", "|" + "---|" * 8]
    for r in t.itertuples():
        lines.append(f"| {r.dataset} | {r.task} | {r.method} | {r.epsilon:g} | {r.old_mean:.4f} +- {r.old_std:.4f} | "
                     f"{r.new_mean:.4f} +- {r.new_std:.4f} | {r.old_s:.3f} | {r.new_s:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="noise_baselines.csv")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--eps", nargs="+", type=float, default=list(EPS))
    p.add_argument("--n-train", type=int, default=50_000)
    p.add_argument("--summary", nargs=2, metavar=("OLD", "NEW"))
    args = p.parse_args(argv)
    if args.summary:
        print(summary(*args.summary))
    else:
        run(args.out, args.trials, args.eps, args.n_train)


if __name__ == "__main__":
    main()
