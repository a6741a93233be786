"""Encoding defaults (issue 27, item 4): the old ``categorical=None`` (every feature one-hot) vs the new
one (the domain's ordinal attributes scaled to [-1, 1], nominal ones one-hot) vs the DD-SSP paper's
preset (`ddssp.categorical_preset`) vs the new one with two hinge columns per ordinal attribute
(``EncodingOptions(knots=2)``, `ddssp.ordinal`), on the Figure-3 tasks.

    python -m benchmarks.encoding_defaults                 # 3 AIM releases (eps 1) per data set
    python -m benchmarks.encoding_defaults --trials 1 --out /tmp/enc

Per task and encoding: the number of encoded features, the public (non-private) test AUC / MSE, and
DD-SSP from ``--trials`` seeded AIM releases at ``--epsilon`` (the paper's first 50,000 training rows,
the bundled test split, max_model_size 200, delta 1e-5; `benchmarks.figure3_fits` makes and caches
the releases exactly as Figure 3 does, in the same cache) with its test metric and the number of
`CollinearityWarning`s per fit, and AdaSSP (linear) / ObjPert (logistic) on the same rows at the same
epsilon (Figure 3's seeds). The dev data sets' domains declare their ordinal attributes
(`benchmarks.data.ORDINAL`), so the release files carry them and ``categorical=None`` reads them (a
release cached before that is given them: they are public).
Linear MSE is on the encoded target scale ([-1, 1]). Seeded (insecure) releases: not private.
"""

from __future__ import annotations

from .harness import CACHE, single_threaded

single_threaded()  # one BLAS thread (the machine is shared), before numpy is imported

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ddssp import (  # noqa: E402
    AdaSSP,
    DDSSPLinearRegression,
    DDSSPLogisticRegression,
    EncodingOptions,
    ObjPert,
    PublicLinearRegression,
    PublicLogisticRegression,
)

from .data import ORDINAL  # noqa: E402
from .figure3_fits import N_TRAIN, TASKS, Task, derive_seed, evaluate, get_release, timed_fit  # noqa: E402
from .harness import load_split, machine_info, mean_se, results_frame, write_csv, write_json, write_text  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "encoding_defaults"
#: all one-hot (the old default) / categorical=None / the paper's / categorical=None with 2 hinges per ordinal attribute
ENCODINGS = ("old", "new", "preset", "new-knots2")
COLUMNS = ["dataset", "task", "kind", "encoding", "method", "epsilon", "trial", "seed", "metric_name", "metric",
           "n_features", "collinearity_warnings", "default_warnings", "seconds"]  # fmt: skip


def categorical(task: Task, encoding: str, features: list[str]) -> list[str] | None:
    """The ``categorical`` argument of an encoding: every feature, None (the default) or the preset."""
    return {"old": list(features), "new": None, "preset": task.categorical, "new-knots2": None}[encoding]


def model_of(method: str, task: Task, encoding: str, cat: list[str] | None, eps: float | None, seed: int | None):
    """The estimator of ``method``: public, ddssp (from a release), or the DP baseline on the rows
    (adassp for linear tasks, objpert for logistic ones, at ``eps`` with delta 1e-5 and ``seed``)."""
    linear = task.kind == "linear"
    options = EncodingOptions(knots=2 if encoding == "new-knots2" else 0)
    if method == "baseline":
        return (AdaSSP if linear else ObjPert)(eps, 1e-5, task.target, categorical=cat, encoding=options,
                                               insecure_seed=seed)  # fmt: skip
    cls = {("public", True): PublicLinearRegression, ("public", False): PublicLogisticRegression,
           ("ddssp", True): DDSSPLinearRegression, ("ddssp", False): DDSSPLogisticRegression}[(method, linear)]
    return cls(task.target, categorical=cat, encoding=options)


def fit_rows(task: Task, source, test, method: str, eps: float | None, trial: int | None, seed: int | None) -> list[dict]:
    """One fit per encoding of ``method`` on ``source``: its metric, width and warnings."""
    features = [a for a in source.domain.attrs if a != task.target]
    rows = []
    for encoding in ENCODINGS:
        warns: dict = {}
        model = model_of(method, task, encoding, categorical(task, encoding, features), eps, seed)
        seconds, n_col = timed_fit(model, source, warns)
        rows.append({"dataset": task.dataset, "task": task.name, "kind": task.kind, "encoding": encoding,
                     "method": method, "epsilon": eps, "trial": trial, "seed": seed, "metric_name": task.metric_name,
                     "metric": evaluate(model, task, test), "n_features": int(model.coef_.size),
                     "collinearity_warnings": n_col, "seconds": seconds,
                     "default_warnings": sum(v for k, v in warns.items() if k.startswith("EncodingDefaultWarning"))})
    return rows


def run(tasks: list[Task], eps: float, trials: int, seed: int, cache: str | None) -> list[dict]:
    """Public fits once per task, then DD-SSP on ``trials`` releases per data set (one at a time)."""
    rows = []
    for task in tasks:
        train, test = load_split(task.dataset, N_TRAIN)
        assert train.domain.ordinal is not None, f"{task.dataset}: its domain declares no ordinal attributes"
        rows += fit_rows(task, task.train(train), test, "public", None, None, None)
        for trial in range(trials):  # the DP baseline on the private rows (Figure 3's seeds)
            purpose = "adassp" if task.kind == "linear" else "objpert"
            seed_b = derive_seed(seed, task.dataset, eps, trial, purpose, task.name)
            rows += fit_rows(task, task.train(train), test, "baseline", eps, trial, seed_b)
    for dataset in dict.fromkeys(t.dataset for t in tasks):
        for trial in range(trials):
            spec = {"dataset": dataset, "eps": eps, "trial": trial, "mms": 200.0, "delta": 1e-5, "seed": seed,
                    "cache": cache}
            release, info = get_release(spec)
            if release.domain.ordinal is None:  # a release cached before domains carried it: public metadata
                release = dataclasses.replace(release, domain=release.domain.with_ordinal(ORDINAL[dataset]))
            print(f"{dataset} eps={eps:g} trial={trial}: {'cached' if info['cached'] else 'AIM'} "
                  f"{info['seconds']:.0f}s", file=sys.stderr, flush=True)
            _, test = load_split(dataset, N_TRAIN)
            for task in (t for t in tasks if t.dataset == dataset):
                source = release.without(task.drop) if task.drop else release
                rows += fit_rows(task, source, test, "ddssp", eps, trial, info["seed"])
    return rows


def summary(df) -> str:
    """A markdown table: per task and encoding, width, public metric and DD-SSP mean +- sd (warnings)."""
    keys = ["dataset", "task", "encoding"]
    pub = df[df.method == "public"].set_index(keys)
    stats = {m: mean_se(df[df.method == m], keys).set_index(keys) for m in ("ddssp", "baseline")}

    def cell(method: str, key: tuple) -> str:
        s = stats[method].loc[key] if key in stats[method].index else None
        if s is None:
            return ""
        fits = df[(df.method == method) & (df.dataset == key[0]) & (df.task == key[1]) & (df.encoding == key[2])]
        sd = 0.0 if np.isnan(s["std"]) else s["std"]
        return f"{s['mean']:.4f} +- {sd:.4f} ({int((fits.collinearity_warnings > 0).sum())}/{len(fits)})"

    lines = ["| data set | task | metric | encoding | features | public | DD-SSP (CW fits/fits) | "
             "AdaSSP or ObjPert (CW fits/fits) |", "|---|---|---|---|---|---|---|---|"]
    for key, p in pub.sort_index().iterrows():
        lines.append(f"| {key[0]} | {key[1]} | {p['metric_name']} | {key[2]} | {int(p['n_features'])} | "
                     f"{p['metric']:.4f} | {cell('ddssp', key)} | {cell('baseline', key)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--seed", type=int, default=242, help="base seed of the releases (Figure 3's)")
    p.add_argument("--tasks", nargs="+", default=None, help="dataset:task names (default: Figure 3's five)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write cached releases")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    tasks = [t for t in TASKS if args.tasks is None or f"{t.dataset}:{t.name}" in args.tasks]
    cache = None if args.no_cache else str(CACHE / "releases")
    rows = run(tasks, args.epsilon, args.trials, args.seed, cache)
    df = results_frame(rows, COLUMNS, integer=("trial", "seed", "n_features", "collinearity_warnings",
                                                "default_warnings"), sort=("dataset", "task", "method", "encoding", "trial"))
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / "results.csv")
    table = summary(df)
    write_text(args.out / "summary.md", f"# Encoding defaults (python -m benchmarks.encoding_defaults)\n\n"
               f"old = every feature one-hot (the old categorical=None); new = categorical=None with the domains' "
               f"ordinal metadata (benchmarks.data.ORDINAL); preset = the DD-SSP paper's categorical_preset; "
               f"new-knots2 = new with EncodingOptions(knots=2) (two hinge columns per ordinal attribute). "
               f"Linear MSE on the [-1, 1] target scale; DD-SSP from {args.trials} seeded AIM releases at "
               f"eps {args.epsilon:g} (delta 1e-5, max_model_size 200, first {N_TRAIN:,} train rows, bundled test); "
               f"AdaSSP (linear) / ObjPert (logistic) on the same rows at eps {args.epsilon:g}, {args.trials} seeds; "
               f"mean +- sd, and (fits with a CollinearityWarning / fits).\n\n"
               f"{table}\n")
    write_json(args.out / "run.json", {"argv": sys.argv[1:] if argv is None else argv, "machine": machine_info()})
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
