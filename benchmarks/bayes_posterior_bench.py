"""Part ``posterior`` of bayes_coverage.py: calibration of the noise-aware posterior and its accuracy.

1. Calibration on synthetic data (Paper A's setting): N = 1000, d = 3, theta = [-0.9, -0.5, 0.3],
   a random positive-definite Sigma per data set, x ~ N(0, Sigma) clipped to ||x|| <= 1, logistic
   labels; Gaussian SSP at each epsilon (delta 1e-5); the share of the 3 coefficients inside the
   central 50/70/80/90/95% credible intervals, for the noise-aware posterior and for the naive
   plug-in that ignores the release noise (noise_aware=False).
2. Accuracy on the figure3 tasks of adult restricted to four numeric features (scaled to [-1, 1],
   divided by 2 so that ||x|| <= 1): linear education-num ~ age, sex, hours-per-week, income>50K and
   logistic income>50K ~ age, education-num, sex, hours-per-week. Methods at each epsilon: the
   posterior mean from its own Gaussian SSP release, DD-SSP on an AIM release of the same five
   attributes, AdaSSP (linear) / ObjPert (logistic) on the private rows, and public OLS / logistic.
   Metric: test MSE or AUC on the bundled test rows.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from aim import AIM
from ddssp import AdaSSP, DDSSPLinearRegression, DDSSPLogisticRegression, ObjPert, build_encoding, mean_squared_error, roc_auc
from ddssp.solvers import fit_encoded
from ddssp.bayes.posterior import NoiseAwareGLM
from ddssp.bayes.release import clip_rows, gaussian_ssp
from marginals import Dataset
from benchmarks.data import load_bundled
from marginals.files import AtomicOutputs, write_text_atomic
from marginals.randomness import InsecureRandom

from .harness import in_fresh_processes

LEVELS = (0.5, 0.7, 0.8, 0.9, 0.95)
THETA = np.array([-0.9, -0.5, 0.3])
TASKS = {
    "linear": ("education-num", ["age", "sex", "hours-per-week", "income>50K"]),
    "logistic": ("income>50K", ["age", "education-num", "sex", "hours-per-week"]),
}
ATTRS = ["age", "education-num", "sex", "hours-per-week", "income>50K"]
SCALE = 0.5  # sqrt(4) features in [-1, 1]: dividing by 2 bounds ||x|| by 1 using public information only


def synthetic(seed: int, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3, 3))
    S = A @ A.T + 0.3 * np.eye(3)
    S *= 0.25 / np.trace(S) * 3  # average variance 0.25
    X = clip_rows(rng.multivariate_normal(np.zeros(3), S, size=n), 1.0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ THETA)), 1.0, -1.0)
    return X, y


def calibration_rows(job: tuple[float, int, int, bool]) -> list[dict]:
    """One synthetic data set of the calibration: (eps, rep, draws, naive) -> a row per level and coefficient."""
    eps, rep, samples, naive = job
    X, y = synthetic(1000 + rep)
    stats = gaussian_ssp(X, y, "logistic", eps, 1e-5, insecure_seed=InsecureRandom(rep, warn=False))
    rows = []
    for aware in (True, False) if naive else (True,):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = NoiseAwareGLM(num_samples=samples, noise_aware=aware, random_state=rep).fit(stats)
        for level in LEVELS:
            ci = post.conf_int(1 - level)
            for j in range(3):
                rows.append({"epsilon": eps, "rep": rep, "noise_aware": aware, "level": level, "coef": j,
                             "covered": bool(ci[j, 0] <= THETA[j] <= ci[j, 1]), "width": ci[j, 1] - ci[j, 0],
                             "mean": post.coef_[j], "max_rhat": float(np.nanmax(post.rhat_))})  # fmt: skip
    return rows


def calibration(args) -> pd.DataFrame:
    """Every data set of every epsilon, each in a fresh process: JAX's compiled code for one NUTS fit
    after another accumulates memory maps in a long-lived process (about 30 fits reached the kernel's
    limit of 65,530 and crashed the run)."""
    jobs = [(eps, rep, args.samples, args.naive) for eps in args.bayes_epsilons for rep in range(args.datasets)]
    rows = []
    for k, part in enumerate(in_fresh_processes(calibration_rows, jobs), 1):
        rows += part
        if k % args.datasets == 0:
            print(f"  calibration eps {jobs[k - 1][0]:g} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def _task_fits(kind: str, train: Dataset, release, eps: float, seed: int, args) -> dict[str, np.ndarray]:
    """Coefficients of every method on one task (features on the encoding's [-1, 1] scale)."""
    target, feats = TASKS[kind]
    enc = build_encoding(train.domain.project(feats + [target]), target, kind, categorical=[])
    X, y = enc.encode(train.to_df())
    fits = {}
    stats = gaussian_ssp(X * SCALE, y, kind, eps, 1e-5, insecure_seed=InsecureRandom(seed, warn=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            post = NoiseAwareGLM(num_samples=args.samples, random_state=seed).fit(stats)
            fits["bayes_posterior_mean"] = post.coef_ * SCALE  # theta on x * SCALE is theta * SCALE on x
            fits["bayes_max_rhat"] = np.array([np.nanmax(post.rhat_)])
        except RuntimeError as exc:  # NUTS found no valid start: reported, not hidden
            print(f"  {kind} eps {eps:g}: NUTS failed: {exc}", file=sys.stderr, flush=True)
        sub = release.without([a for a in ATTRS if a not in feats + [target]])
        model = DDSSPLinearRegression if kind == "linear" else DDSSPLogisticRegression
        fits["ddssp"] = model(target, categorical=[]).fit(sub).coef_
        baseline = AdaSSP if kind == "linear" else ObjPert
        fits[baseline.__name__.lower()] = baseline(eps, 1e-5, target, categorical=[], insecure_seed=seed).fit(train.project(feats + [target])).coef_
    fits["public"] = fit_encoded(enc, train.to_df(), kind)
    return fits


def accuracy(args) -> pd.DataFrame:
    """Posterior mean vs DD-SSP vs AdaSSP / ObjPert vs public: coefficients and test metric per trial."""
    full = load_bundled("adult", "train", limit=50_000)
    train = Dataset(full.to_df()[ATTRS], full.domain.project(ATTRS))
    test = load_bundled("adult", "test").to_df()
    rows = []
    for eps in args.bayes_epsilons:
        for trial in range(args.bayes_trials):
            seed = 7000 + 100 * trial + int(eps * 100)
            release = AIM(eps, 1e-5, insecure_seed=seed).run(train)
            for kind, (target, feats) in TASKS.items():
                enc = build_encoding(train.domain.project(feats + [target]), target, kind, categorical=[])
                Xt, yt = enc.encode(test)
                fits = _task_fits(kind, train, release, eps, seed, args)
                rhat = float(fits.pop("bayes_max_rhat", [np.nan])[0])
                for method, theta in fits.items():
                    value = mean_squared_error(yt, Xt @ theta) if kind == "linear" else roc_auc((yt > 0).astype(int), Xt @ theta)
                    rows.append({"task": kind, "epsilon": eps, "trial": trial, "method": method,
                                 "metric": "mse" if kind == "linear" else "auc", "value": value,
                                 **{f"coef_{f}": v for f, v in zip(feats, theta)},
                                 "max_rhat": rhat if method.startswith("bayes") else np.nan})  # fmt: skip
        print(f"  accuracy eps {eps:g} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def plot_calibration(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot([0.45, 1.0], [0.45, 1.0], "k--", lw=1, label="nominal")
    for (eps, aware), sub in table.groupby(["epsilon", "noise_aware"]):
        ax.plot(sub.level, sub.coverage, "o-" if aware else "x:", label=f"eps {eps:g}, {'noise-aware' if aware else 'naive plug-in'}")
    ax.set_xlabel("nominal credible level")
    ax.set_ylabel("empirical coverage of theta")
    ax.set_title("Noise-aware logistic posterior (N=1000, d=3)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")


def run_posterior(args) -> None:
    start = time.perf_counter()
    cal = calibration(args)
    table = cal.groupby(["epsilon", "noise_aware", "level"]).agg(coverage=("covered", "mean"), median_width=("width", "median"), max_rhat=("max_rhat", "max")).reset_index()
    with AtomicOutputs() as out:
        write_text_atomic(out.stage(args.out / "posterior_calibration.csv"), cal.to_csv(index=False, float_format="%.6g"))
        write_text_atomic(out.stage(args.out / "posterior_calibration_table.csv"), table.to_csv(index=False, float_format="%.4f"))
        plot_calibration(table, out.stage(args.out / "posterior_calibration.png"))
    print(f"noise-aware posterior calibration ({time.perf_counter() - start:.0f}s)")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.bayes_trials < 1:  # calibration only: keep the accuracy results on disk
        return
    start = time.perf_counter()
    acc = accuracy(args)
    write_text_atomic(args.out / "posterior_accuracy.csv", acc.to_csv(index=False, float_format="%.6g"))
    summary = acc.groupby(["task", "method", "epsilon"]).value.mean().unstack("epsilon")
    print(f"posterior mean vs DD-SSP vs AdaSSP/ObjPert ({time.perf_counter() - start:.0f}s; mean over {args.bayes_trials} trials)")
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))
    coefs = acc.groupby(["task", "epsilon", "method"])[[c for c in acc.columns if c.startswith("coef_")]].mean()
    print("mean coefficients (encoding scale)")
    print(coefs.to_string(float_format=lambda v: f"{v:+.3f}", na_rep=""))
