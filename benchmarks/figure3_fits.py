"""One unit of the Figure 3 grid (see `benchmarks.figure3`): the tasks, the seeds, the AIM release
of a (data set, epsilon, trial, model size) with DD-SSP / AIM-Synth / PMT on it, and the baseline
fits on the private rows; each unit returns result rows (``COLUMNS``).

Seeds: ``numpy.random.SeedSequence([seed, key(dataset), round(1e6 * eps), trial, purpose, key(task)])``
with key(name) the first 4 bytes of its SHA-256, so runs are reproducible.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from aim import AIM, AIMConfig, Release
from ddssp import (
    AdaSSP,
    AIMSynth,
    CollinearityWarning,
    DDSSPLinearRegression,
    DDSSPLogisticRegression,
    ObjPert,
    PublicLinearRegression,
    PublicLogisticRegression,
    build_encoding,
    categorical_preset,
    mean_squared_error,
    roc_auc,
)
from marginals import Dataset

from . import figure3_others
from .harness import grid, load_split, name_key, seed_from, timed, write_json

N_TRAIN = 50_000
LINEAR_EPS = (0.05, 0.1, 0.5, 1.0, 2.0)
LOGISTIC_EPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
PURPOSE = {"aim": 0, "aim_synth": 1, "adassp": 2, "objpert": 3, "adassp_paper": 4, "tukeyem": 5, "pmt": 6,
           "pmt_release": 7, "dp_rr": 8, "dp_lr": 9}  # fmt: skip
COLUMNS = [
    "dataset", "task", "kind", "target", "method", "epsilon", "delta", "trial", "seed", "metric_name", "metric",
    "seconds", "release_seconds", "release_cached", "aim_rounds", "aim_model_mb", "max_model_size", "release_file",
    "n_train", "n_test", "n_synthetic", "collinearity_warnings", "ptr_passed", "n_models", "public_moment",
]  # fmt: skip
INTEGER_COLUMNS = ("seed", "aim_rounds", "n_synthetic", "collinearity_warnings", "n_train", "n_test", "trial", "n_models")
BOOLEAN_COLUMNS = ("ptr_passed", "release_cached")


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
    def categorical(self) -> list[str]:
        return [a for a in categorical_preset(self.dataset) if a not in self.drop]

    def train(self, data: Dataset) -> Dataset:
        """The training table without the dropped columns."""
        return data.project([a for a in data.domain.attrs if a not in self.drop]) if self.drop else data

    def row(self, method: str, eps: float, trial: int, delta: float, n_train: int, n_test: int, **fields) -> dict:
        """A result row of this task (the other ``COLUMNS`` from ``fields``)."""
        return {"dataset": self.dataset, "task": self.name, "kind": self.kind, "target": self.target,
                "method": method, "epsilon": eps, "delta": delta, "trial": trial, "metric_name": self.metric_name,
                "n_train": n_train, "n_test": n_test, **fields}  # fmt: skip


TASKS = (
    Task("adult", "linear", "linear", "education-num"),
    Task("adult", "linear-no-education", "linear", "education-num", drop=("education",)),
    Task("acs-income-lin", "linear", "linear", "PINCP"),
    Task("adult", "logistic", "logistic", "income>50K"),
    Task("acs-employment", "logistic", "logistic", "ESR"),
)


def derive_seed(base: int, dataset: str, eps: float, trial: int, purpose: str, task: str = "") -> int:
    """A 32-bit seed from (base seed, dataset, epsilon, trial, purpose[, task])."""
    entropy = [int(base), name_key(dataset), int(round(eps * 1e6)), int(trial), PURPOSE[purpose]]
    return seed_from(entropy + ([name_key(task)] if task else []))


# -- AIM releases and their cache -----------------------------------------------------------------


def aim_settings(kwargs: dict) -> dict:
    """Every AIM hyperparameter of ``AIM(**kwargs)`` (the arguments given and the defaults of the
    rest) as a release records them, without the seed: a change of AIM's defaults changes the
    cache key."""
    return AIMConfig(**kwargs).to_dict()


def data_fingerprint(train: Dataset) -> str:
    """A short digest of the training rows (part of the release cache key)."""
    digest = hashlib.sha256(json.dumps(train.domain.to_dict()).encode())
    digest.update(np.ascontiguousarray(pd.util.hash_pandas_object(train.to_df(), index=False).to_numpy()).tobytes())
    return digest.hexdigest()[:16]


def release_path(cache: Path, spec: dict, seed: int, settings: dict, train: Dataset) -> Path:
    """The cache file of a release: readable parameters and a hash of the AIM settings and the data."""
    payload = {"aim": settings, "dataset": spec["dataset"], "n_train": len(train), "data": data_fingerprint(train)}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return cache / (f"{spec['dataset']}_eps{spec['eps']:g}_trial{spec['trial']}_seed{seed}_mms{spec['mms']:g}"
                    f"_delta{spec['delta']:g}_{key}.npz")  # fmt: skip


def cached_release(path: Path, seed: int, spec: dict) -> tuple[Release, float] | None:
    """(release, its original AIM seconds) from the cache, or None when absent or inconsistent."""
    meta_path = path.with_suffix(".json")
    if not (path.is_file() and meta_path.is_file()):
        return None
    try:
        release, meta = Release.load(path), json.loads(meta_path.read_text())
        cfg = release.mechanism_config()
        if (meta.get("seed") == seed and math.isclose(cfg.epsilon, spec["eps"])
                and math.isclose(cfg.max_model_size, spec["mms"])
                and math.isclose(release.delta, spec["delta"])):  # fmt: skip
            return release, float(meta["release_seconds"])
        print(f"warning: cached release {path.name} does not match its name; recomputing", file=sys.stderr)
    except Exception as exc:  # a corrupt or outdated file: recompute
        print(f"warning: cannot reuse cached release {path.name} ({exc}); recomputing", file=sys.stderr)
    return None


def run_aim(kwargs: dict, train: Dataset, log_file: Path | None) -> tuple[Release, float]:
    """(AIM(**kwargs).run(train), seconds); AIM's per-round progress goes to ``log_file`` if given."""
    if log_file is None:
        return timed(AIM(**kwargs).run, train)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "w") as log, contextlib.redirect_stderr(log):
        return timed(AIM(**kwargs, progress=True).run, train)


def get_release(spec: dict) -> tuple[Release, dict]:
    """(release, info) — from the cache when present and consistent, else a fresh AIM run (then
    cached, and read back so a fresh release is used exactly as a cached one)."""
    train, _ = load_split(spec["dataset"], N_TRAIN)
    seed = derive_seed(spec["seed"], spec["dataset"], spec["eps"], spec["trial"], "aim")
    kwargs = {"epsilon": spec["eps"], "delta": spec["delta"], "max_model_size": spec["mms"], "insecure_seed": seed,
              **spec.get("aim_options", {})}  # e.g. targets=[...]: part of the settings, so of the cache key
    settings = aim_settings(kwargs)
    info = {"seed": seed, "cached": False, "file": ""}
    path = release_path(Path(spec["cache"]), spec, seed, settings, train) if spec["cache"] else None
    if path is not None:
        info["file"] = str(path)
        hit = cached_release(path, seed, spec)
        if hit is not None:
            info.update(cached=True, seconds=hit[1])
            return hit[0], info
    stem = f"{spec['dataset']}_eps{spec['eps']:g}_trial{spec['trial']}_mms{spec['mms']:g}"
    log_file = Path(spec["aim_logs"]) / f"{stem}.log" if spec.get("aim_logs") else None
    release, info["seconds"] = run_aim(kwargs, train, log_file)
    if path is not None:
        release.save(path)
        write_json(path.with_suffix(".json"), {
            "release_seconds": info["seconds"], "dataset": spec["dataset"], "epsilon": spec["eps"],
            "trial": spec["trial"], "seed": seed, "max_model_size": spec["mms"], "delta": spec["delta"],
            "aim_config": settings, "created": time.time()})  # fmt: skip
        release = Release.load(path)
    return release, info


# -- fitting and evaluation -----------------------------------------------------------------------


def evaluate(model, task: Task, test: pd.DataFrame) -> float:
    """Test MSE on the encoded target scale (linear) or test AUC (logistic)."""
    if task.kind == "linear":
        return mean_squared_error(model.encoding_.encode_target(test), model.predict_encoded(test))  # the encoded target scale
    return roc_auc(test[task.target].to_numpy(), model.decision_function(test))


def timed_fit(model, source, counter: dict) -> tuple[float, int]:
    """(seconds, CollinearityWarnings) of ``model.fit(source)``; other warnings are counted in
    ``counter`` (digits masked, so repeats of one message share a key)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, seconds = timed(model.fit, source)
    n_col = 0
    for w in caught:
        if issubclass(w.category, CollinearityWarning):
            n_col += 1
        else:
            key = f"{w.category.__name__}: " + re.sub(r"\d+", "#", str(w.message))[:110] + "..."
            counter[key] = counter.get(key, 0) + 1
    return seconds, n_col


def paper_adassp_mse(task: Task, data: Dataset, test: pd.DataFrame, eps: float, delta: float, seed: int) -> float:
    """DIAGNOSTIC, not a DP method of this project: the test MSE of AdaSSP as the DD-SSP paper's code
    calibrates it (reference report section 3.6: eps/3 for lambda_min, (2/3)(0.95) eps for X^T X,
    (2/3)(0.05) eps for X^T y, each release with noise sqrt(log(2/delta_i)) * sensitivity / eps_i and
    the deltas split the same way). Not a valid Gaussian mechanism for every eps_i; run only to show
    what the paper's baseline scores on our split."""
    encoding = build_encoding(data.domain, task.target, "linear", task.categorical)
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
    return mean_squared_error(encoding.encode_target(test), encoding.encode_features(test) @ theta)


# -- the two kinds of unit ------------------------------------------------------------------------


def release_fits(task: Task, release, info: dict, spec: dict, warns: dict) -> list[dict]:
    """DD-SSP and AIM-Synth on the release, PMT with the release's moment on the private rows."""
    dataset, eps, trial, delta = spec["dataset"], spec["eps"], spec["trial"], spec["delta"]
    train, test = load_split(dataset, N_TRAIN)
    source = release.without(task.drop) if task.drop else release
    ddssp_cls = DDSSPLinearRegression if task.kind == "linear" else DDSSPLogisticRegression
    synth_seed = derive_seed(spec["seed"], dataset, eps, trial, "aim_synth", task.name)
    pmt_seed = derive_seed(spec["seed"], dataset, eps, trial, "pmt_release", task.name)
    fits = (
        ("ddssp", ddssp_cls(task.target, categorical=task.categorical), info["seed"], source),
        ("aim_synth", AIMSynth(task.target, task=task.kind, categorical=task.categorical, random_state=synth_seed),
         synth_seed, source),
        ("pmt_release", figure3_others.pmt_model(task.kind, eps, delta, task.target, task.categorical, source,
                                                 pmt_seed), pmt_seed, task.train(train)),
    )  # fmt: skip
    rows = []
    for method, model, seed, fit_data in fits:
        seconds, n_col = timed_fit(model, fit_data, warns)
        rows.append(task.row(
            method, eps, trial, delta, len(train), len(test), seed=seed, metric=evaluate(model, task, test),
            seconds=seconds, release_seconds=info["seconds"], release_cached=info["cached"],
            aim_rounds=len(release.rounds), aim_model_mb=release.model.size_mb, max_model_size=spec["mms"],
            release_file=info["file"], collinearity_warnings=n_col, n_synthetic=getattr(model, "n_synthetic_", None),
            public_moment=getattr(model, "public_moment_source_", None)))  # fmt: skip
    return rows


def release_unit(spec: dict) -> dict:
    """One AIM release (cached or fresh) and the fits of every task that uses it."""
    release, info = get_release(spec)
    rows, warns = [], {}
    for task in (Task(**t) for t in spec["tasks"]):
        rows += release_fits(task, release, info, spec, warns)
    summary = {"dataset": spec["dataset"], "epsilon": spec["eps"], "trial": spec["trial"], "max_model_size": spec["mms"],
               "seed": info["seed"], "seconds": info["seconds"], "cached": info["cached"], "rounds": len(release.rounds),
               "model_mb": release.model.size_mb, "total": release.total, "file": info["file"]}  # fmt: skip
    return {"rows": rows, "release": summary, "warnings": warns}


def nonprivate_rows(task: Task, data: Dataset, cells: list, spec: dict, n_test: int, test, warns: dict) -> list[dict]:
    """``public`` (OLS / logistic regression on the rows) and the diagnostic ``ddssp_exact`` (DD-SSP on
    the exact marginals, its ceiling): one fit each, repeated on every (eps, trial) cell."""
    linear = task.kind == "linear"
    rows = []
    for method, cls in (("public", PublicLinearRegression if linear else PublicLogisticRegression),
                        ("ddssp_exact", DDSSPLinearRegression if linear else DDSSPLogisticRegression)):  # fmt: skip
        model = cls(task.target, categorical=task.categorical)
        seconds, n_col = timed_fit(model, data, warns)
        metric = evaluate(model, task, test)
        rows += [task.row(method, eps, trial, spec["delta"], len(data), n_test, metric=metric, seconds=seconds,
                          collinearity_warnings=n_col) for eps, trial in cells]  # fmt: skip
    return rows


def private_rows(task: Task, data: Dataset, cells: list, spec: dict, n_test: int, test, warns: dict) -> list[dict]:
    """The paper-calibrated AdaSSP diagnostic (linear), then AdaSSP (linear) or ObjPert (logistic)."""
    delta, rows = spec["delta"], []
    seed_of = lambda method, eps, trial: derive_seed(spec["seed"], task.dataset, eps, trial, method, task.name)  # noqa: E731
    if task.kind == "linear":
        for eps, trial in cells:
            seed = seed_of("adassp_paper", eps, trial)
            metric, seconds = timed(paper_adassp_mse, task, data, test, eps, delta, seed)
            rows.append(task.row("adassp_paper", eps, trial, delta, len(data), n_test, seed=seed, metric=metric,
                                 seconds=seconds))  # fmt: skip
    method, cls = ("adassp", AdaSSP) if task.kind == "linear" else ("objpert", ObjPert)
    for eps, trial in cells:
        seed = seed_of(method, eps, trial)
        model = cls(eps, delta, task.target, categorical=task.categorical, insecure_seed=seed)
        seconds, n_col = timed_fit(model, data, warns)
        rows.append(task.row(method, eps, trial, delta, len(data), n_test, seed=seed, metric=evaluate(model, task, test),
                             seconds=seconds, collinearity_warnings=n_col))  # fmt: skip
    return rows


def other_rows(task: Task, data: Dataset, spec: dict, n_test: int, test, warns: dict) -> list[dict]:
    """TukeyEM, PMT (public split) and DP-RR / DP-LR (see `figure3_others`)."""
    seed_of = lambda method, eps, trial: derive_seed(spec["seed"], task.dataset, eps, trial, method, task.name)  # noqa: E731
    fits = figure3_others.baseline_fits(task, data, spec["eps"][task.name], spec["trials"], spec["delta"],
                                        task.categorical, seed_of)  # fmt: skip
    rows = []
    for method, eps, trial, seed, model, fit_data, extra in fits:
        seconds, n_col = timed_fit(model, fit_data, warns)
        rows.append(task.row(method, eps, trial, spec["delta"], len(fit_data), n_test, seed=seed,
                             metric=figure3_others.score(model, task, test, evaluate), seconds=seconds,
                             collinearity_warnings=n_col, ptr_passed=getattr(model, "ptr_passed_", None), **extra))  # fmt: skip
    return rows


def baseline_unit(spec: dict) -> dict:
    """Every fit on the private rows of one data set (no AIM release needed)."""
    train, test = load_split(spec["dataset"], N_TRAIN)
    rows, warns = [], {}
    for task in (Task(**t) for t in spec["tasks"]):
        data, cells = task.train(train), grid(spec["eps"][task.name], spec["trials"])
        rows += nonprivate_rows(task, data, cells, spec, len(test), test, warns)
        rows += private_rows(task, data, cells, spec, len(test), test, warns)
        rows += other_rows(task, data, spec, len(test), test, warns)
    return {"rows": rows, "release": None, "warnings": warns}


def run_unit(kind: str, spec: dict) -> dict:
    """A release unit or a baseline unit (the function the worker processes run)."""
    return (release_unit if kind == "release" else baseline_unit)(spec)
