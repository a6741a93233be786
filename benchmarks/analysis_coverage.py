"""Coverage of DD-SSP intervals on releases made for their regression (`AIM(...).run(rows, analysis=est)`,
`aim.analysis`, `ddssp.newton`): issue 27 item 2 on every feature of acs-income-lin and acs-employment.

Per (task, epsilon): R seeded releases (targets=[target], analysis=the task's DD-SSP estimator, the
default analysis share, delta 1e-5, max_model_size 80, the first 50,000 training rows, the paper's
categorical presets). On each: the refined fit and its 90% intervals, and the same release's model fit
without the analysis (``analysis="ignore"``: what DD-SSP gives on a release that spent (1 - share) of
the budget). Estimand: the private rows' fit with the refinement's light penalty (`ddssp.newton.PENALTY`;
linear: ridge 1 on 50,000 rows; logistic: the penalised MLE, finite where the rows separate a level).

Reported per cell: coverage of the estimand pooled over (release, coefficient); the median over
coefficients of the mean interval width against the release-to-release spread (2 x 1.645 sd); the
median |mean error| / sd; the median absolute error of the intervals' centre (the unbiased refined
estimate) and of the unrefined fit; and the test metric (MSE on the encoded target / AUC) of the
unbiased estimate, of ``coef_`` (the last measured point: what predictions use) and of the unrefined
fit, mean +- sd over releases.

    python -m benchmarks.analysis_coverage --tasks acs-income-lin/linear --eps 0.5 1 4 --releases 50
    python -m benchmarks.analysis_coverage --summarize
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .coefficient_spread import DELTA, N_TRAIN, _task, markdown
from .figure3_fits import evaluate
from .harness import RESULTS, load_split, seed_from, write_csv, write_text

TASK_KEYS = ("acs-income-lin/linear", "acs-employment/logistic")
MAX_MODEL_SIZE = 80.0


def _estimator(task, **params):
    from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    cls = DDSSPLinearRegression if task.kind == "linear" else DDSSPLogisticRegression
    return cls(task.target, categorical=task.categorical, **params)


def _theta(model) -> np.ndarray:
    coef = np.asarray(model.coef_, dtype=float).ravel()
    return np.concatenate([[model.intercept_], coef]) if model.encoding_.intercept else coef


def estimand(task, data) -> np.ndarray:
    """The refined fit's estimand on the private rows (intercept first when present)."""
    from ddssp.newton import penalised_fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoding = _estimator(task).fit(data).encoding_
    return penalised_fit(data, encoding, task.kind)


def one_release(task, data, test, eps: float, r: int, seed: int) -> dict:
    """The refined and unrefined fits of one release."""
    from aim import AIM

    start = time.perf_counter()
    aim_seed = seed_from([seed, int(eps * 1000), r, len(task.target)])
    release = AIM(eps, DELTA, max_model_size=MAX_MODEL_SIZE, targets=[task.target], insecure_seed=aim_seed).run(
        data, analysis=_estimator(task))
    seconds = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refined = _estimator(task).fit(release)
        plain = _estimator(task, analysis="ignore", **({} if task.kind == "linear" else {"objective": "expected",
                                                                                          "random_state": r})).fit(release)  # fmt: skip
    lower_upper = refined.analysis_.interval(0.1)
    metric_point = evaluate(refined, task, test)  # coef_: the last measured point
    unbiased = refined.analysis_.theta
    refined._set_solution(unbiased, refined.encoding_)
    return {"theta": unbiased, "plain": _theta(plain), "lower": lower_upper[:, 0], "upper": lower_upper[:, 1],
            "metric": evaluate(refined, task, test), "metric_point": metric_point,
            "metric_plain": evaluate(plain, task, test), "seconds": seconds,
            "rounds": len(release.rounds), "model_mb": release.model.size_mb,
            "spent_over_budget": release.ledger.spent / release.ledger.rho}  # fmt: skip


def run_cell(key: str, eps: float, releases: int, seed: int, out: Path) -> Path:
    """R releases of one (task, eps); one CSV row per (release, coefficient) in out/parts."""
    task = _task(key)
    train, test = load_split(task.dataset, N_TRAIN)
    data = task.train(train)
    theta0 = estimand(task, data)
    rows = []
    for r in range(releases):
        got = one_release(task, data, test, eps, r, seed)
        for j, t0 in enumerate(theta0):
            rows.append({"task": key, "epsilon": eps, "release": r, "coef": j, "estimand": t0, "refined": got["theta"][j],
                         "plain": got["plain"][j], "lower": got["lower"][j], "upper": got["upper"][j],
                         "metric": got["metric"], "metric_point": got["metric_point"], "metric_plain": got["metric_plain"],
                         "seconds": got["seconds"],
                         "rounds": got["rounds"], "model_mb": got["model_mb"],
                         "spent_over_budget": got["spent_over_budget"]})  # fmt: skip
        covered = np.mean((got["lower"] <= theta0) & (theta0 <= got["upper"]))
        print(f"{key} eps={eps:g} release {r + 1}/{releases}: covered {covered:.3f}, {got['seconds']:.1f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        path = write_csv(pd.DataFrame(rows), out / "parts" / (key.replace("/", "_") + f"_eps{eps:g}.csv"))  # so far
    return path


def cell_summary(df: pd.DataFrame) -> dict:
    """The summary of one (task, eps) part (see the module docstring)."""
    by = df.groupby("coef")
    sd = by["refined"].std(ddof=1)
    width = (df["upper"] - df["lower"]).groupby(df["coef"]).mean()
    bias = (by["refined"].mean() - by["estimand"].first()).abs()
    per_release = df.groupby("release").first()
    return {
        "releases": df["release"].nunique(), "p": df["coef"].nunique(),
        "coverage_90": float(((df["lower"] <= df["estimand"]) & (df["estimand"] <= df["upper"])).mean()),
        "width_over_spread": float(np.median(width / (2 * 1.645 * sd))),
        "median_bias_over_sd": float(np.median(bias / sd)),
        "medabs_refined": float(np.median(np.abs(df["refined"] - df["estimand"]))),
        "medabs_unrefined": float(np.median(np.abs(df["plain"] - df["estimand"]))),
        "metric_unbiased": f"{per_release['metric'].mean():.4f} ± {per_release['metric'].std(ddof=1):.4f}",
        "metric_coef": f"{per_release['metric_point'].mean():.4f} ± {per_release['metric_point'].std(ddof=1):.4f}",
        "metric_unrefined": f"{per_release['metric_plain'].mean():.4f} ± {per_release['metric_plain'].std(ddof=1):.4f}",
        "aim_seconds_median": float(per_release["seconds"].median()),
        "max_spent_over_budget": float(per_release["spent_over_budget"].max()),
    }  # fmt: skip


def summarize(out: Path) -> str:
    """summary.md from every part in out/parts (the results: one CSV per task and epsilon)."""
    parts = sorted((out / "parts").glob("*.csv"))
    df = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
    rows = [{"task": task, "epsilon": eps, **cell_summary(cell)} for (task, eps), cell in df.groupby(["task", "epsilon"])]
    table = markdown(pd.DataFrame(rows))
    write_text(out / "summary.md", "# Coverage of refined DD-SSP intervals (releases made with `analysis=`)\n\n"
               "Nominal 90%; estimand: the private rows' lightly penalised fit; see `benchmarks/analysis_coverage.py`.\n\n"
               f"{table}\n")  # fmt: skip
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_KEYS))
    parser.add_argument("--eps", nargs="+", type=float, default=[0.5, 1.0, 4.0])
    parser.add_argument("--releases", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2711)
    parser.add_argument("--out", type=Path, default=RESULTS / "analysis_coverage")
    parser.add_argument("--summarize", action="store_true", help="only combine the parts already written")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*(seeded|insecure).*")
    if not args.summarize:
        for key in args.tasks:
            for eps in args.eps:
                run_cell(key, eps, args.releases, args.seed, args.out)
    print(summarize(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
