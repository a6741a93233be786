"""Figure 3 of Ferrando & Sheldon (DD-SSP): regression accuracy vs epsilon on the bundled data.

Protocol (paper section 4, reference report section 3.9): train = the first 50,000 rows of
``<data>/<dataset>/train.csv``, test = the bundled 1,000-row ``test.csv``, delta = 1e-5,
5 trials, AIM with the all-pairs workload (max_model_size 200 MB, optionally 80 as well).

Tasks (encodings from `ddssp.categorical_preset`; numeric features and the linear target
scaled to [-1, 1], logistic target -1/+1 for DD-SSP):

* linear  adult -> education-num (all other columns; `education` is a bijection of the target),
* linear  adult -> education-num without the `education` column (the real task),
* linear  acs-income-lin -> PINCP,
* logistic adult -> income>50K, acs-employment -> ESR.

Methods: ``public`` (non-private OLS / logistic regression on train), ``ddssp`` (DD-SSP fitted on
the AIM release), ``aim_synth`` (ordinary regression on round(model total) synthetic rows sampled
from the same release), ``adassp`` (linear) and ``objpert`` (logistic) on the private train rows,
and the other DP regression methods of `figure3_others`: ``tukeyem`` (linear), ``pmt`` (public
split), ``pmt_release`` (moment from the AIM release), ``dp_rr`` / ``dp_lr`` (private-only).

One AIM release per (dataset, epsilon, trial, max_model_size) serves DD-SSP and AIM-Synth on
every task of that data set (adult: three tasks; the no-education variant drops the column's
blocks for DD-SSP and the column from the synthetic rows for AIM-Synth). Releases are cached in
``--release-cache`` (file name from dataset, epsilon, trial, seed, model size, delta and a hash
of the AIM configuration and training data) and reused by later runs; a cached release is
used exactly as a fresh one (a fresh release is saved, then read back from disk).

Seeds: derived from ``--seed`` per (data set, epsilon, trial, purpose, task), see `figure3_fits`.

The fits of one unit are in `benchmarks.figure3_fits`, the plots and summary in
`benchmarks.figure3_report` (which can re-render them from a results folder).

Outputs in ``--out``: ``results.csv`` (one row per dataset x task x method x epsilon x trial
[x model size for the AIM methods]), ``figure3_<kind>_mms<size>.png`` (mean +- standard error vs
epsilon, log x axis, one panel per dataset/task, public as a horizontal line), ``summary.md``,
``run.json`` (arguments, timings, warnings) and ``aim-logs/`` (AIM's per-round progress of every
release computed in this run).

Usage::

    python -m benchmarks.figure3 --quick                    # adult, eps {0.1, 1}, 1 trial
    python -m benchmarks.figure3                            # the full grid into benchmarks/results/full-200
    python -m benchmarks.figure3 --max-model-size 200 80 --jobs 2
"""

from __future__ import annotations

from .harness import RESULTS, CACHE, single_threaded

single_threaded()  # before numpy is imported (inherited by the spawned workers)

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict  # noqa: E402
from pathlib import Path  # noqa: E402

from . import figure3_report  # noqa: E402
from .figure3_fits import BOOLEAN_COLUMNS, COLUMNS, INTEGER_COLUMNS, LINEAR_EPS, LOGISTIC_EPS, TASKS, run_unit  # noqa: E402
from .harness import results_frame, run_parallel, write_csv  # noqa: E402

DELTA = 1e-5
QUICK_EPS = (0.1, 1.0)
DATASETS = ("adult", "acs-income-lin", "acs-employment")
SORT = ("dataset", "task", "method", "max_model_size", "epsilon", "trial")


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, with --quick's defaults filled in and the values checked."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", choices=DATASETS, help="default: all (adult only with --quick)")
    p.add_argument("--eps", nargs="+", type=float,
                   help="epsilon grid for every task (default: the paper's, linear %s, logistic %s)"
                   % (list(LINEAR_EPS), list(LOGISTIC_EPS)))  # fmt: skip
    p.add_argument("--trials", type=int, help="trials per epsilon (default 5; 1 with --quick)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--out", type=Path, help="output folder (default benchmarks/results/<run-name>)")
    p.add_argument("--run-name", help="default 'quick' with --quick, else 'full-<sizes>'")
    p.add_argument("--max-model-size", nargs="+", type=float, default=[200.0],
                   help="AIM model-size cap(s) in MB; several values run each setting (default 200)")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="1 trial, eps {0.1, 1}, adult only (explicit flags override)")
    p.add_argument("--seed", type=int, default=242, help="base seed (default 242, the paper's)")
    p.add_argument("--delta", type=float, default=DELTA, help="delta (default 1e-5)")
    p.add_argument("--release-cache", type=Path, default=CACHE / "releases",
                   help="folder of cached AIM releases (default benchmarks/cache/releases)")  # fmt: skip
    p.add_argument("--no-cache", action="store_true", help="neither read nor write cached releases")
    p.add_argument("--no-aim-logs", action="store_true", help="do not write AIM's per-round log (<out>/aim-logs/)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs (matplotlib not needed)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    if args.trials is not None and args.trials < 1:
        p.error("--trials must be >= 1")
    if any(not (e > 0 and math.isfinite(e)) for e in args.eps or []):
        p.error("--eps values must be finite and > 0")
    if any(not (m > 0) for m in args.max_model_size):
        p.error("--max-model-size values must be > 0")
    if args.quick:
        args.datasets = args.datasets or ["adult"]
        args.eps = args.eps or list(QUICK_EPS)
        args.trials = args.trials or 1
    args.datasets = args.datasets or list(DATASETS)
    args.trials = args.trials or 5
    args.max_model_size = list(dict.fromkeys(args.max_model_size))
    if args.run_name is None:
        args.run_name = "quick" if args.quick else "full-" + "-".join(f"{m:g}" for m in args.max_model_size)
    args.out = args.out or RESULTS / args.run_name
    return args


def plan(args) -> tuple[list[dict], list[dict]]:
    """(release units, baseline units) for the chosen data sets, grids, trials and model sizes."""
    tasks = [t for t in TASKS if t.dataset in args.datasets]
    task_eps = {t: tuple(sorted(set(args.eps))) if args.eps else t.eps_grid for t in tasks}
    cache = None if args.no_cache else str(args.release_cache)
    releases, baselines = [], []
    for dataset in args.datasets:
        ds_tasks = [t for t in tasks if t.dataset == dataset]
        baselines.append({"dataset": dataset, "delta": args.delta, "trials": args.trials, "seed": args.seed,
                          "tasks": [asdict(t) for t in ds_tasks],
                          "eps": {t.name: list(task_eps[t]) for t in ds_tasks}})  # fmt: skip
        for mms in args.max_model_size:
            for eps in sorted({e for t in ds_tasks for e in task_eps[t]}):
                for trial in range(args.trials):
                    users = [asdict(t) for t in ds_tasks if eps in task_eps[t]]
                    releases.append({"dataset": dataset, "eps": eps, "trial": trial, "mms": mms, "delta": args.delta,
                                     "seed": args.seed, "cache": cache, "tasks": users,
                                     "aim_logs": None if args.no_aim_logs else str(args.out / "aim-logs")})  # fmt: skip
    # big releases first (AIM time grows with epsilon and the model size) for better load balance
    releases.sort(key=lambda s: (-s["eps"], -s["mms"], s["dataset"], s["trial"]))
    return releases, baselines


def describe(kind: str, spec: dict) -> str:
    if kind == "baseline":
        return f"baselines {spec['dataset']}"
    return f"AIM {spec['dataset']} eps={spec['eps']:g} trial={spec['trial']} mms={spec['mms']:g}"


def status(kind: str, out: dict | None, error: str | None) -> str:
    """The status of a finished unit on its progress line."""
    if error:
        return "FAILED"
    if kind == "release":
        r = out["release"]
        return (f"{'cached' if r['cached'] else 'AIM'} {r['seconds']:.1f}s, {r['rounds']} rounds, "
                f"{r['model_mb']:.2f} MB; {len(out['rows'])} fits")  # fmt: skip
    return f"{len(out['rows'])} rows"


def run_all(units: list[tuple[str, dict]], jobs: int, wall_start: float) -> list[dict]:
    """Every unit (progress on stderr); one record per unit with its rows, release, warnings, error."""
    results: list[dict] = []

    def done(unit, out, error, seconds):
        kind, spec = unit
        elapsed = time.perf_counter() - wall_start
        print(f"[{len(results) + 1}/{len(units)} {elapsed:7.1f}s] {describe(kind, spec)}: {status(kind, out, error)} "
              f"({seconds:.1f}s)", file=sys.stderr, flush=True)  # fmt: skip
        if error:
            print(error, file=sys.stderr, flush=True)
        out = out or {"rows": [], "release": None, "warnings": {}}
        results.append({"kind": kind, "spec": spec, "error": error, **out})

    run_parallel(run_unit, units, jobs, done)
    return results


def run_info(args, results: list[dict], df, wall: float) -> dict:
    """What run.json records: arguments, timings, releases, warnings and failed units."""
    warn_counts: dict[str, int] = {}
    for r in results:
        for k, v in r["warnings"].items():
            warn_counts[k] = warn_counts.get(k, 0) + v
    return {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "wall_seconds": wall,
        "jobs": args.jobs,
        "releases": [r["release"] for r in results if r["release"]],
        "collinearity_warnings": int(df["collinearity_warnings"].fillna(0).sum()) if len(df) else 0,
        "other_warnings": warn_counts,
        "errors": [{"unit": describe(r["kind"], r["spec"]), "error": r["error"]} for r in results if r["error"]],
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    wall_start = time.perf_counter()
    releases, baselines = plan(args)
    units = [("baseline", s) for s in baselines] + [("release", s) for s in releases]
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"figure3: {len(releases)} AIM releases + {len(baselines)} baseline units on {args.jobs} process(es) "
          f"-> {args.out}", file=sys.stderr, flush=True)  # fmt: skip
    results = run_all(units, args.jobs, wall_start)
    rows = [row for r in results for row in r["rows"]]
    df = results_frame(rows, COLUMNS, INTEGER_COLUMNS, BOOLEAN_COLUMNS, SORT)
    write_csv(df, args.out / "results.csv")
    info = run_info(args, results, df, 0.0)
    info["plots"] = [] if args.no_plots else [p.name for p in figure3_report.make_plots(df, args.out)]
    info["wall_seconds"] = wall = time.perf_counter() - wall_start
    figure3_report.write_report(df, info, args.out)
    n_cached = sum(r["cached"] for r in info["releases"])
    print(f"figure3: {len(df)} rows, {len(info['releases'])} releases ({n_cached} from cache), "
          f"{info['collinearity_warnings']} CollinearityWarning(s), {len(info['errors'])} failed unit(s); "
          f"total wall time {wall:.1f}s -> {args.out}", file=sys.stderr, flush=True)  # fmt: skip
    print(f"total wall time: {wall:.1f}s")
    return 1 if info["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
