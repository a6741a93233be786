"""DD-SSP from a default AIM release vs a target-aware one (``AIM(..., targets=[...])``), issue 27 item 1.

Protocol (`benchmarks.figure3`'s: its tasks, loaders, seeds and metrics): train = the first 50,000
rows of the bundled ``train.csv``, test = the bundled 1,000-row ``test.csv``, delta = 1e-5, AIM at
its default max_model_size (80 MB). Per (data set, epsilon, trial) two releases from the same seed:

* ``default``: AIM's all-pairs workload;
* ``targets``: ``AIM(..., targets=[task.target])``, one release per task (adult: one for
  ``income>50K``, one for ``education-num``; the default release serves both tasks).

On each release DD-SSP (``DDSSPLinearRegression`` / ``DDSSPLogisticRegression`` with the task's
``categorical_preset``) is fitted and scored on the test split (linear: test MSE on the encoded
target scale, lower is better; logistic: test AUC, higher is better). AdaSSP (linear) / ObjPert
(logistic) on the private rows and the non-private fit come from `benchmarks.figure3_fits`.

Tasks: adult logistic ``income>50K``, adult linear ``education-num`` without the ``education``
column (its bijection), acs-employment logistic ``ESR``, acs-income-lin linear ``PINCP``.

Releases are cached in ``--release-cache`` (name from data set, epsilon, trial, seed, mode and a
hash of the AIM configuration), so a rerun only fits. ``--option key=value`` passes extra AIM
options to the ``targets`` releases (the pilot that chose ``target_share``).

Outputs in ``--out`` (default benchmarks/results/target_workload): ``results.csv`` (one row per
task x method x epsilon x trial), ``summary.md`` (mean +- sd table) and ``run.json``.

Usage::

    python -m benchmarks.target_workload                              # the full grid
    python -m benchmarks.target_workload --datasets acs-employment --eps 0.1 1 --trials 3 \\
        --option target_share=0.3 --out /tmp/pilot                   # one pilot setting
"""

from __future__ import annotations

from .harness import CACHE, RESULTS, single_threaded

single_threaded()  # before numpy is imported

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from .figure3_fits import TASKS, Task, derive_seed, evaluate, nonprivate_rows, private_rows, timed_fit  # noqa: E402
from .harness import grid, load_split, mean_se, results_frame, timed, write_csv, write_json, write_text  # noqa: E402

DELTA = 1e-5
EPS = (0.1, 0.5, 1.0, 4.0)
N_TRAIN = 50_000
TASK_NAMES = {"adult": ("logistic", "linear-no-education"), "acs-employment": ("logistic",),
              "acs-income-lin": ("linear",)}  # fmt: skip
MODES = ("default", "targets")
COLUMNS = ["dataset", "task", "kind", "target", "method", "epsilon", "delta", "trial", "seed", "metric_name",
           "metric", "seconds", "release_seconds", "aim_rounds", "n_train", "n_test", "collinearity_warnings", "target_share"]  # fmt: skip


def tasks_of(dataset: str) -> list[Task]:
    """The figure-3 tasks this benchmark runs on ``dataset``."""
    return [t for t in TASKS if t.dataset == dataset and t.name in TASK_NAMES[dataset]]


def parse_option(text: str) -> tuple[str, object]:
    """``key=value`` with value parsed as JSON (numbers, lists), else kept as a string."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--option needs key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", choices=sorted(TASK_NAMES), default=sorted(TASK_NAMES))
    p.add_argument("--eps", nargs="+", type=float, default=list(EPS))
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--option", type=parse_option, action="append", default=[],
                   help="extra AIM option for the targets releases, key=value (repeatable)")  # fmt: skip
    p.add_argument("--alloc-power", type=float, default=None,
                   help="pilot only: aim.targets.ALLOC_POWER for this run (target pairs' budget ~ cells^power)")
    p.add_argument("--no-baselines", action="store_true", help="skip AdaSSP / ObjPert / public")
    p.add_argument("--seed", type=int, default=242)
    p.add_argument("--out", type=Path, default=RESULTS / "target_workload")
    p.add_argument("--release-cache", type=Path, default=CACHE / "target_workload")
    args = p.parse_args(argv)
    if args.trials < 1 or any(not e > 0 for e in args.eps):
        p.error("--trials must be >= 1 and --eps values > 0")
    args.options = dict(args.option)
    if args.alloc_power is not None:
        import aim.targets

        aim.targets.ALLOC_POWER = args.alloc_power  # read at run time by aim.targets.pair_sigmas
    return args


def aim_kwargs(eps: float, seed: int, mode: str, options: dict, domain, targets: tuple[str, ...]) -> dict:
    """The AIM arguments of one release (the targets and options only in ``targets`` mode). The
    options ``target_weight`` / ``width_power`` build the rounds' workload with
    `aim.targets.target_workload` (given with ``targets``, the two combine)."""
    from aim.targets import target_workload

    kwargs = {"epsilon": eps, "delta": DELTA, "insecure_seed": seed}
    if mode == "targets":
        options = dict(options)
        weights = {k: options.pop(k) for k in ("target_weight", "width_power") if k in options}
        kwargs.update(targets=list(targets), **options)
        if weights:
            kwargs["workload"] = target_workload(domain, targets, **weights)
    return kwargs


def cache_file(cache: Path, dataset: str, eps: float, trial: int, seed: int, mode: str, kwargs: dict) -> Path:
    """The release's cache file: readable parameters and a hash of its full AIM configuration."""
    from aim import AIMConfig

    settings = AIMConfig(**kwargs).to_dict()  # without targets: what the versions before targets wrote
    key = hashlib.sha256(json.dumps({"aim": settings, "n_train": N_TRAIN}, sort_keys=True, default=str).encode())
    return cache / f"{dataset}_eps{eps:g}_trial{trial}_seed{seed}_{mode}_{key.hexdigest()[:12]}.npz"


def get_release(dataset: str, eps: float, trial: int, mode: str, args, targets: tuple[str, ...] = ()) -> tuple[object, float]:
    """(release, AIM seconds): from the cache, else a fresh run (saved, then read back); ``targets``
    in ``targets`` mode."""
    from aim import AIM, Release

    seed = derive_seed(args.seed, dataset, eps, trial, "aim")
    train, _ = load_split(dataset, N_TRAIN)
    kwargs = aim_kwargs(eps, seed, mode, args.options, train.domain, targets)
    tag = mode if mode == "default" else re.sub(r"[^A-Za-z0-9_.-]", "_", f"{mode}-{'+'.join(targets)}")
    tag += "" if args.alloc_power is None or mode == "default" else f"-alloc{args.alloc_power:g}"
    path = cache_file(args.release_cache, dataset, eps, trial, seed, tag, kwargs)
    meta = path.with_suffix(".json")
    if path.is_file() and meta.is_file():
        return Release.load(path), float(json.loads(meta.read_text())["seconds"])
    release, seconds = timed(AIM(**kwargs).run, train)
    path.parent.mkdir(parents=True, exist_ok=True)
    release.save(path)
    write_json(meta, {"seconds": seconds, "seed": seed, "mode": mode, "options": args.options if mode == "targets" else {}})
    return Release.load(path), seconds


def release_rows(dataset: str, eps: float, trial: int, mode: str, args, warns: dict) -> list[dict]:
    """DD-SSP on the release(s) of one (data set, epsilon, trial, mode) for every task of the data
    set: the default release serves every task, a targets release one task."""
    from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    train, test = load_split(dataset, N_TRAIN)
    rows = []
    for task in tasks_of(dataset):
        release, aim_seconds = get_release(dataset, eps, trial, mode, args, (task.target,) if mode == "targets" else ())
        cls = DDSSPLinearRegression if task.kind == "linear" else DDSSPLogisticRegression
        model = cls(task.target, categorical=task.categorical)
        seconds, n_col = timed_fit(model, release.without(task.drop) if task.drop else release, warns)
        rows.append(task.row(f"ddssp_{mode}", eps, trial, DELTA, len(train), len(test), metric=evaluate(model, task, test),
                             seconds=seconds, release_seconds=aim_seconds, aim_rounds=len(release.rounds),
                             collinearity_warnings=n_col, target_share=_share(release)))  # fmt: skip
    return rows


def _share(release) -> float | None:
    """The share of rho a targets release spent on its target pairs (None for a default release)."""
    return (release.config.get("mechanism") or {}).get("target_share")


def baseline_rows(dataset: str, args, warns: dict) -> list[dict]:
    """Public, AdaSSP (linear) / ObjPert (logistic) as `figure3_fits` computes them."""
    train, test = load_split(dataset, N_TRAIN)
    spec = {"delta": DELTA, "seed": args.seed}
    rows = []
    for task in tasks_of(dataset):
        data, cells = task.train(train), grid(args.eps, args.trials)
        rows += [r for r in nonprivate_rows(task, data, cells, spec, len(test), test, warns) if r["method"] == "public"]
        rows += [r for r in private_rows(task, data, cells, spec, len(test), test, warns) if r["method"] != "adassp_paper"]
    return rows


def summary_table(df) -> str:
    """Markdown: per task and epsilon, mean +- sd of every method, and targets minus default."""
    stats = mean_se(df, ["dataset", "task", "metric_name", "method", "epsilon"])
    methods = [m for m in ("ddssp_default", "ddssp_targets", "adassp", "objpert", "public") if m in set(stats["method"])]
    lines = ["| data set / task | metric | eps | " + " | ".join(methods) + " | targets - default |",
             "|" + "---|" * (len(methods) + 4)]
    for (dataset, task, metric, eps), g in stats.groupby(["dataset", "task", "metric_name", "epsilon"]):
        by = g.set_index("method")
        cells = [f"{by.loc[m, 'mean']:.4g} ± {by.loc[m, 'std']:.2g}" if m in by.index else "" for m in methods]
        diff = (f"{by.loc['ddssp_targets', 'mean'] - by.loc['ddssp_default', 'mean']:+.4g}"
                if {"ddssp_targets", "ddssp_default"} <= set(by.index) else "")  # fmt: skip
        lines.append(f"| {dataset} / {task} | {metric} | {eps:g} | " + " | ".join(cells) + f" | {diff} |")
    return "\n".join(lines)


def write_results(rows: list[dict], args, warns: dict, start: float) -> str:
    """results.csv, summary.md and run.json of the rows so far; returns the summary table."""
    df = results_frame(rows, COLUMNS, ("trial", "aim_rounds", "n_train", "n_test", "collinearity_warnings"), (),
                       ("dataset", "task", "method", "epsilon", "trial"))  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(df, args.out / "results.csv")
    table = summary_table(df)
    write_text(args.out / "summary.md", f"# DD-SSP: default vs target workload\n\nmean ± sd over {args.trials} "
               f"trials, delta {DELTA:g}; targets options {args.options or 'defaults'}\n\n{table}\n")
    write_json(args.out / "run.json", {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                       "wall_seconds": time.perf_counter() - start, "warnings": warns})
    return table


def main(argv=None) -> int:
    import warnings

    from aim import NotPrivateWarning
    from marginals.randomness import InsecureSeedWarning

    warnings.simplefilter("ignore", InsecureSeedWarning)  # every release here is seeded, on purpose
    warnings.simplefilter("ignore", NotPrivateWarning)
    args = parse_args(argv)
    start, warns, rows = time.perf_counter(), {}, []
    if not args.no_baselines:
        for dataset in args.datasets:
            rows += baseline_rows(dataset, args, warns)
    for eps in sorted(args.eps):  # epsilon-major: the long eps = 4 releases come last
        for dataset in args.datasets:
            for trial in range(args.trials):
                for mode in args.modes:
                    t0 = time.perf_counter()
                    rows += release_rows(dataset, eps, trial, mode, args, warns)
                    print(f"[{time.perf_counter() - start:7.1f}s] {dataset} eps={eps:g} trial={trial} {mode}: "
                          f"{rows[-1]['metric']:.4g} ({time.perf_counter() - t0:.1f}s)", file=sys.stderr, flush=True)
            table = write_results(rows, args, warns, start)  # after every block: a stopped run keeps its rows
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
