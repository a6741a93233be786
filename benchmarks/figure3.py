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

Seeds: ``numpy.random.SeedSequence([--seed, key(dataset), round(1e6 * eps), trial, purpose, key(task)])``
with key(name) the first 4 bytes of its SHA-256 (no Python ``hash()``, so runs are reproducible).

Outputs in ``--out``: ``results.csv`` (one row per dataset x task x method x epsilon x trial
[x model size for the AIM methods]), ``figure3_<kind>_mms<size>.png`` (mean +- standard error vs
epsilon, log x axis, one panel per dataset/task, public as a horizontal line), ``summary.md``,
``run.json`` (arguments, timings, warnings) and ``aim-logs/`` (AIM's per-round progress of every
release computed in this run).

Usage::

    python benchmarks/figure3.py --quick                    # adult, eps {0.1, 1}, 1 trial
    python benchmarks/figure3.py                            # the full grid into benchmarks/results/full-200
    python benchmarks/figure3.py --max-model-size 200 80 --jobs 2
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported (also inherited by the spawned workers)

import argparse  # noqa: E402
import concurrent.futures as cf  # noqa: E402
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from aim import AIM, Release  # noqa: E402
from ddssp import (  # noqa: E402
    AdaSSP,
    AIMSynth,
    CollinearityWarning,
    DDSSPLinearRegression,
    DDSSPLogisticRegression,
    ObjPert,
    PublicLinearRegression,
    PublicLogisticRegression,
    categorical_preset,
    mean_squared_error,
    roc_auc,
)
from marginals import Dataset  # noqa: E402
from marginals.data import load_bundled  # noqa: E402

import figure3_others  # noqa: E402  (next to this file)

N_TRAIN = 50_000
DELTA = 1e-5
LINEAR_EPS = (0.05, 0.1, 0.5, 1.0, 2.0)
LOGISTIC_EPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
QUICK_EPS = (0.1, 1.0)
DATASETS = ("adult", "acs-income-lin", "acs-employment")
METHODS = ("public", "ddssp", "aim_synth", "adassp", "objpert", "ddssp_exact", "adassp_paper", "tukeyem", "pmt",
           "pmt_release", "dp_rr", "dp_lr")  # fmt: skip
AIM_METHODS = ("ddssp", "aim_synth", "pmt_release")
PURPOSE = {"aim": 0, "aim_synth": 1, "adassp": 2, "objpert": 3, "adassp_paper": 4, "tukeyem": 5, "pmt": 6,
           "pmt_release": 7, "dp_rr": 8, "dp_lr": 9}  # fmt: skip
COLUMNS = [
    "dataset", "task", "kind", "target", "method", "epsilon", "delta", "trial", "seed", "metric_name", "metric",
    "seconds", "release_seconds", "release_cached", "aim_rounds", "aim_model_mb", "max_model_size", "release_file",
    "n_train", "n_test", "n_synthetic", "collinearity_warnings", "ptr_passed", "n_models", "public_moment",
]  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One regression task: ``name`` is unique per data set (the ``task`` column)."""

    dataset: str
    name: str
    kind: str  # "linear" or "logistic"
    target: str
    drop: tuple[str, ...] = ()

    @property
    def eps_grid(self) -> tuple[float, ...]:
        return LINEAR_EPS if self.kind == "linear" else LOGISTIC_EPS

    @property
    def metric_name(self) -> str:
        return "mse" if self.kind == "linear" else "auc"

    @property
    def label(self) -> str:
        return f"{self.dataset} / {self.name} ({self.target})"


TASKS = (
    Task("adult", "linear", "linear", "education-num"),
    Task("adult", "linear-no-education", "linear", "education-num", drop=("education",)),
    Task("acs-income-lin", "linear", "linear", "PINCP"),
    Task("adult", "logistic", "logistic", "income>50K"),
    Task("acs-employment", "logistic", "logistic", "ESR"),
)


# -- seeds, data, caching -------------------------------------------------------------------------


def name_key(name: str) -> int:
    """A stable 32-bit integer for a string (the first 4 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "little")


def derive_seed(base: int, dataset: str, eps: float, trial: int, purpose: str, task: str = "") -> int:
    """A 32-bit seed from (base seed, dataset, epsilon, trial, purpose[, task]) via SeedSequence."""
    entropy = [int(base), name_key(dataset), int(round(eps * 1e6)), int(trial), PURPOSE[purpose]]
    if task:
        entropy.append(name_key(task))
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint32)[0])


@lru_cache(maxsize=None)
def load_split(dataset: str) -> tuple[Dataset, pd.DataFrame]:
    """(train Dataset: first N_TRAIN rows of train.csv, test DataFrame: test.csv)."""
    train = load_bundled(dataset, "train", limit=N_TRAIN)
    test = load_bundled(dataset, "test").to_df()
    return train, test


def data_fingerprint(train: Dataset) -> str:
    """A short digest of the training rows (part of the release cache key)."""
    digest = hashlib.sha256(json.dumps(train.domain.to_dict()).encode())
    digest.update(np.ascontiguousarray(pd.util.hash_pandas_object(train.to_df(), index=False).to_numpy()).tobytes())
    return digest.hexdigest()[:16]


def aim_config(aim: AIM) -> dict:
    """Every AIM hyperparameter except the seed (`AIMConfig.to_dict`)."""
    return aim.config.to_dict()


def release_path(cache: Path, dataset: str, eps: float, trial: int, seed: int, mms: float, delta: float, key: str) -> Path:
    return cache / f"{dataset}_eps{eps:g}_trial{trial}_seed{seed}_mms{mms:g}_delta{delta:g}_{key}.npz"


def config_hash(aim: AIM, dataset: str, train: Dataset) -> str:
    payload = {"aim": aim_config(aim), "dataset": dataset, "n_train": len(train), "data": data_fingerprint(train)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


def get_release(
    dataset: str, eps: float, trial: int, mms: float, delta: float, base_seed: int, cache: Path | None,
    log_dir: Path | None = None,
):
    """(release, info) — from the cache when present and consistent, else a fresh AIM run (then cached)."""
    train, _ = load_split(dataset)
    seed = derive_seed(base_seed, dataset, eps, trial, "aim")
    aim = AIM(eps, delta, max_model_size=mms, insecure_seed=seed)
    info = {"seed": seed, "cached": False, "file": ""}
    path = None
    if cache is not None:
        path = release_path(cache, dataset, eps, trial, seed, mms, delta, config_hash(aim, dataset, train))
        info["file"] = str(path)
        meta_path = path.with_suffix(".json")
        if path.is_file() and meta_path.is_file():
            try:
                release = Release.load(path)
                meta = json.loads(meta_path.read_text())
                cfg = release.config
                if (
                    meta.get("seed") == seed
                    and math.isclose(cfg.get("epsilon", -1), eps)
                    and math.isclose(cfg.get("max_model_size", -1), mms)
                    and math.isclose(release.delta, delta)
                ):
                    info.update(cached=True, seconds=float(meta["release_seconds"]))
                    return release, info
                print(f"warning: cached release {path.name} does not match its name; recomputing", file=sys.stderr)
            except Exception as exc:  # a corrupt or outdated file: recompute
                print(f"warning: cannot reuse cached release {path.name} ({exc}); recomputing", file=sys.stderr)
    start = time.perf_counter()
    if log_dir is not None:  # AIM's per-round progress lines go to one log file per release
        aim.progress = True
        log_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{dataset}_eps{eps:g}_trial{trial}_mms{mms:g}"
        with open(log_dir / f"{stem}.log", "w") as log, contextlib.redirect_stderr(log):
            release = aim.run(train)
    else:
        release = aim.run(train)
    info["seconds"] = time.perf_counter() - start
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        release.save(path)
        meta = {"release_seconds": info["seconds"], "dataset": dataset, "epsilon": eps, "trial": trial, "seed": seed,
                "max_model_size": mms, "delta": delta, "aim_config": aim_config(aim), "created": time.time()}  # fmt: skip
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=1, default=str))
        os.replace(tmp, path.with_suffix(".json"))
        release = Release.load(path)  # use exactly what a later run will read back
    return release, info


# -- fitting and evaluation -----------------------------------------------------------------------


def evaluate(model, task: Task, test: pd.DataFrame) -> float:
    if task.kind == "linear":
        return mean_squared_error(model.encoding_.encode_target(test), model.predict_encoded(test))  # the encoded target scale
    return roc_auc(test[task.target].to_numpy(), model.decision_function(test))


def timed_fit(model, source, counter: dict):
    """Fit with warnings recorded: CollinearityWarning is counted, others are kept (deduplicated) for the log."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(source)
        seconds = time.perf_counter() - start
    n_col = 0
    for w in caught:
        if issubclass(w.category, CollinearityWarning):
            n_col += 1
        else:
            key = f"{w.category.__name__}: " + re.sub(r"\d+", "#", str(w.message))[:110] + "..."
            counter[key] = counter.get(key, 0) + 1
    return seconds, n_col


def task_train(task: Task, train: Dataset) -> Dataset:
    return train.project([a for a in train.domain.attrs if a not in task.drop]) if task.drop else train


def categorical(task: Task) -> list[str]:
    return [a for a in categorical_preset(task.dataset) if a not in task.drop]


def paper_adassp(task: Task, data: Dataset, eps: float, delta: float, seed: int) -> PublicLinearRegression:
    """DIAGNOSTIC, not a DP method of this project: AdaSSP as the DD-SSP paper's code calibrates it
    (reference report section 3.6: eps/3 for lambda_min, (2/3)(0.95) eps for X^T X, (2/3)(0.05) eps
    for X^T y, each release with noise sqrt(log(2/delta_i)) * sensitivity / eps_i and the deltas
    split the same way). That calibration is not a valid Gaussian mechanism for every eps_i; it is
    run only to show what the paper's baseline scores on our split. Returns a fitted linear model."""
    model = PublicLinearRegression(task.target, categorical=categorical(task)).fit(data)
    encoding = model.encoding_
    X, y = encoding.encode(data.to_df())
    x_bound, y_bound = encoding.norm_bounds()
    rng = np.random.default_rng(seed)
    p = X.shape[1]
    eps1, delta1 = eps / 3, delta / 3
    eps2, delta2 = eps * (2 / 3) * 0.95, delta * (2 / 3) * 0.95
    eps3, delta3 = eps * (2 / 3) * 0.05, delta * (2 / 3) * 0.05
    XtX, Xty = X.T @ X, X.T @ y
    lam_min = max(0.0, float(np.linalg.eigvalsh(XtX)[0]))
    lam_tilde = max(0.0, lam_min + math.sqrt(math.log(2 / delta1)) / eps1 * x_bound**2 * rng.standard_normal()
                    - x_bound**2 * math.log(6 / delta) / eps1)  # fmt: skip
    ridge = max(0.0, math.sqrt(p * math.log(2 / delta1) * math.log(2 * p**2 / 0.05)) * x_bound**2 / eps1 - lam_tilde)
    upper = np.triu(rng.standard_normal((p, p)))
    XtX_noisy = XtX + math.sqrt(math.log(2 / delta2)) / eps2 * x_bound**2 * (upper + np.triu(upper, 1).T)
    Xty_noisy = Xty + math.sqrt(math.log(2 / delta3)) / eps3 * x_bound * y_bound * rng.standard_normal(p)
    theta = np.linalg.lstsq(XtX_noisy + ridge * np.eye(p), Xty_noisy, rcond=None)[0]
    model._set_solution(theta, encoding)
    return model


def base_row(task: Task, method: str, eps: float, trial: int, delta: float, n_train: int, n_test: int) -> dict:
    return {"dataset": task.dataset, "task": task.name, "kind": task.kind, "target": task.target, "method": method,
            "epsilon": eps, "delta": delta, "trial": trial, "metric_name": task.metric_name,
            "n_train": n_train, "n_test": n_test}  # fmt: skip


def release_unit(spec: dict) -> dict:
    """One AIM release (cached or fresh) and DD-SSP + AIM-Synth on every task that uses it."""
    dataset, eps, trial, mms, delta = spec["dataset"], spec["eps"], spec["trial"], spec["mms"], spec["delta"]
    cache = Path(spec["cache"]) if spec["cache"] else None
    train, test = load_split(dataset)
    log_dir = Path(spec["aim_logs"]) if spec.get("aim_logs") else None
    release, info = get_release(dataset, eps, trial, mms, delta, spec["seed"], cache, log_dir)
    rows, other_warnings = [], {}
    for task in (Task(**t) for t in spec["tasks"]):
        source = release.without(task.drop) if task.drop else release
        if task.kind == "linear":
            ddssp = DDSSPLinearRegression(task.target, categorical=categorical(task))
        else:
            ddssp = DDSSPLogisticRegression(task.target, categorical=categorical(task))
        synth_seed = derive_seed(spec["seed"], dataset, eps, trial, "aim_synth", task.name)
        synth = AIMSynth(task.target, task=task.kind, categorical=categorical(task), random_state=synth_seed)
        pmt_seed = derive_seed(spec["seed"], dataset, eps, trial, "pmt_release", task.name)
        pmt = figure3_others.pmt_model(task.kind, eps, delta, task.target, categorical(task), source, pmt_seed)
        for method, model, seed in (("ddssp", ddssp, info["seed"]), ("aim_synth", synth, synth_seed),
                                    ("pmt_release", pmt, pmt_seed)):  # fmt: skip
            fit_data = task_train(task, train) if method == "pmt_release" else source
            seconds, n_col = timed_fit(model, fit_data, other_warnings)
            row = base_row(task, method, eps, trial, delta, len(train), len(test))
            row.update(seed=seed, metric=evaluate(model, task, test), seconds=seconds, release_seconds=info["seconds"],
                       release_cached=info["cached"], aim_rounds=len(release.rounds), aim_model_mb=release.model.size_mb,
                       max_model_size=mms, release_file=info["file"], collinearity_warnings=n_col,
                       n_synthetic=getattr(model, "n_synthetic_", None),
                       public_moment=getattr(model, "public_moment_source_", None))  # fmt: skip
            rows.append(row)
    release_info = {"dataset": dataset, "epsilon": eps, "trial": trial, "max_model_size": mms, "seed": info["seed"],
                    "seconds": info["seconds"], "cached": info["cached"], "rounds": len(release.rounds),
                    "model_mb": release.model.size_mb, "total": release.total, "file": info["file"]}  # fmt: skip
    return {"rows": rows, "release": release_info, "warnings": other_warnings}


def baseline_unit(spec: dict) -> dict:
    """Public, AdaSSP (linear) and ObjPert (logistic) fits on the private rows for one data set."""
    dataset, delta, trials = spec["dataset"], spec["delta"], spec["trials"]
    train, test = load_split(dataset)
    rows, other_warnings = [], {}
    for t in spec["tasks"]:
        task = Task(**t)
        data = task_train(task, train)
        eps_list = spec["eps"][task.name]
        public_cls = PublicLinearRegression if task.kind == "linear" else PublicLogisticRegression
        public = public_cls(task.target, categorical=categorical(task))
        seconds, n_col = timed_fit(public, data, other_warnings)
        metric = evaluate(public, task, test)
        for eps in eps_list:  # non-private: one fit, repeated on every (eps, trial) cell of the grid
            for trial in range(trials):
                row = base_row(task, "public", eps, trial, delta, len(train), len(test))
                row.update(metric=metric, seconds=seconds, collinearity_warnings=n_col)
                rows.append(row)
        # Diagnostic: DD-SSP on the exact marginals of the training rows (non-private; its ceiling).
        exact_cls = DDSSPLinearRegression if task.kind == "linear" else DDSSPLogisticRegression
        exact = exact_cls(task.target, categorical=categorical(task))
        seconds, n_col = timed_fit(exact, data, other_warnings)
        exact_metric = evaluate(exact, task, test)
        for eps in eps_list:
            for trial in range(trials):
                row = base_row(task, "ddssp_exact", eps, trial, delta, len(train), len(test))
                row.update(metric=exact_metric, seconds=seconds, collinearity_warnings=n_col)
                rows.append(row)
        if task.kind == "linear":  # Diagnostic: AdaSSP as the paper's code calibrates it (see paper_adassp)
            for eps in eps_list:
                for trial in range(trials):
                    seed = derive_seed(spec["seed"], dataset, eps, trial, "adassp_paper", task.name)
                    start = time.perf_counter()
                    model = paper_adassp(task, data, eps, delta, seed)
                    row = base_row(task, "adassp_paper", eps, trial, delta, len(train), len(test))
                    row.update(seed=seed, metric=evaluate(model, task, test), seconds=time.perf_counter() - start)
                    rows.append(row)
        method = "adassp" if task.kind == "linear" else "objpert"
        for eps in eps_list:
            for trial in range(trials):
                seed = derive_seed(spec["seed"], dataset, eps, trial, method, task.name)
                cls = AdaSSP if method == "adassp" else ObjPert
                model = cls(eps, delta, task.target, categorical=categorical(task), random_state=seed)
                seconds, n_col = timed_fit(model, data, other_warnings)
                row = base_row(task, method, eps, trial, delta, len(train), len(test))
                row.update(seed=seed, metric=evaluate(model, task, test), seconds=seconds, collinearity_warnings=n_col)
                rows.append(row)
        seed_for = lambda m, e, t: derive_seed(spec["seed"], dataset, e, t, m, task.name)  # noqa: E731
        fits = figure3_others.baseline_fits(task, data, eps_list, trials, delta, categorical(task), seed_for)
        for method, eps, trial, seed, model, fit_data, extra in fits:
            seconds, n_col = timed_fit(model, fit_data, other_warnings)
            row = base_row(task, method, eps, trial, delta, len(fit_data), len(test))
            row.update(seed=seed, metric=figure3_others.score(model, task, test, evaluate), seconds=seconds,
                       collinearity_warnings=n_col, ptr_passed=getattr(model, "ptr_passed_", None), **extra)  # fmt: skip
            rows.append(row)
    return {"rows": rows, "release": None, "warnings": other_warnings}


def run_unit(kind: str, spec: dict) -> dict:
    start = time.perf_counter()
    try:
        out = (release_unit if kind == "release" else baseline_unit)(spec)
        out["error"] = None
    except Exception:
        out = {"rows": [], "release": None, "warnings": {}, "error": traceback.format_exc()}
    out["unit_seconds"] = time.perf_counter() - start
    return out


# -- planning and driving -------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
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
    p.add_argument("--release-cache", type=Path, default=ROOT / "benchmarks" / "cache" / "releases",
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
    if args.out is None:
        args.out = ROOT / "benchmarks" / "results" / args.run_name
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
        union = sorted({e for t in ds_tasks for e in task_eps[t]})
        for mms in args.max_model_size:
            for eps in union:
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


def main(argv=None) -> int:
    args = parse_args(argv)
    wall_start = time.perf_counter()
    releases, baselines = plan(args)
    units = [("baseline", s) for s in baselines] + [("release", s) for s in releases]
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"figure3: {len(releases)} AIM releases + {len(baselines)} baseline units on {args.jobs} process(es) "
          f"-> {args.out}", file=sys.stderr, flush=True)  # fmt: skip
    results: list[dict] = []
    done = 0

    def report(kind, spec, out):
        nonlocal done
        done += 1
        elapsed = time.perf_counter() - wall_start
        if out["error"]:
            status = "FAILED"
        elif kind == "release":
            r = out["release"]
            status = (f"{'cached' if r['cached'] else 'AIM'} {r['seconds']:.1f}s, {r['rounds']} rounds, "
                      f"{r['model_mb']:.2f} MB; {len(out['rows'])} fits")  # fmt: skip
        else:
            status = f"{len(out['rows'])} rows"
        print(f"[{done}/{len(units)} {elapsed:7.1f}s] {describe(kind, spec)}: {status} ({out['unit_seconds']:.1f}s)",
              file=sys.stderr, flush=True)  # fmt: skip
        if out["error"]:
            print(out["error"], file=sys.stderr, flush=True)
        results.append({"kind": kind, "spec": spec, **out})

    if args.jobs == 1:
        for kind, spec in units:
            report(kind, spec, run_unit(kind, spec))
    else:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            futures = {pool.submit(run_unit, kind, spec): (kind, spec) for kind, spec in units}
            for fut in cf.as_completed(futures):
                kind, spec = futures[fut]
                try:
                    out = fut.result()
                except Exception:  # the worker itself died
                    out = {"rows": [], "release": None, "warnings": {}, "error": traceback.format_exc(), "unit_seconds": 0.0}
                report(kind, spec, out)

    rows = [row for r in results for row in r["rows"]]
    df = pd.DataFrame(rows).reindex(columns=COLUMNS)
    df["ptr_passed"] = df["ptr_passed"].astype("boolean")
    for col in ("seed", "aim_rounds", "n_synthetic", "collinearity_warnings", "n_train", "n_test", "trial", "n_models"):
        df[col] = df[col].astype("Int64")  # integers with blanks (baselines have no release)
    df["release_cached"] = df["release_cached"].astype("boolean")
    if len(df):
        df = df.sort_values(["dataset", "task", "method", "max_model_size", "epsilon", "trial"], na_position="first")
    df.to_csv(args.out / "results.csv", index=False)
    release_log = [r["release"] for r in results if r["release"]]
    warn_counts: dict[str, int] = {}
    for r in results:
        for k, v in r["warnings"].items():
            warn_counts[k] = warn_counts.get(k, 0) + v
    errors = [{"unit": describe(r["kind"], r["spec"]), "error": r["error"]} for r in results if r["error"]]
    wall = time.perf_counter() - wall_start

    import figure3_report  # noqa: E402  (next to this file)

    plots = [] if args.no_plots else figure3_report.make_plots(df, args.out)
    wall = time.perf_counter() - wall_start
    run_info = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "wall_seconds": wall,
        "jobs": args.jobs,
        "releases": release_log,
        "collinearity_warnings": int(df["collinearity_warnings"].fillna(0).sum()) if len(df) else 0,
        "other_warnings": warn_counts,
        "errors": errors,
        "plots": [p.name for p in plots],
    }
    (args.out / "summary.md").write_text(figure3_report.summary_markdown(df, run_info))
    (args.out / "run.json").write_text(json.dumps(run_info, indent=1, default=str))
    print(f"figure3: {len(df)} rows, {len(release_log)} releases "
          f"({sum(r['cached'] for r in release_log)} from cache), {run_info['collinearity_warnings']} "
          f"CollinearityWarning(s), {len(errors)} failed unit(s); total wall time {wall:.1f}s -> {args.out}",
          file=sys.stderr, flush=True)  # fmt: skip
    print(f"total wall time: {wall:.1f}s")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
