"""Coverage of DD-SSP coefficient intervals over independent AIM releases, and noise-aware posteriors.

Part ``ddssp`` (the acceptance check of issue 16): adult (all 47,842 training rows) over four
attributes, linear DD-SSP of education-num on sex, income>50K and relationship (one-hot, 5
columns; 7 coefficients). AIM (delta 1e-5, exact discrete Gaussian noise, seeded) gets the workload
of all 3-way marginals of these attributes, so that it measures every pair Z^T Z needs in most
releases (the share where it does is reported: the intervals do not cover the bias of pairs it never
measured). For each epsilon, ``--releases`` independent releases; on each,
`DDSSPLinearRegression(interval="mechanism", n_boot=--boot)` (AIM rerun on rows drawn from the
released model) and, for comparison, ``interval="measurements"`` with as many replicates. From each
set of error replicates: intervals of every kind at nominal 50/70/80/90/95%, and whether they cover
the OLS fit on the private rows (DD-SSP on their exact marginals). Coverage is pooled over all
(release, coefficient) pairs; its standard error treats releases as independent clusters.

Part ``posterior``: the noise-aware Bayesian GLM (`bayes_posterior_bench.py`, needs the bayes extra).

Outputs in ``--out`` (default benchmarks/results/bayes): ``ddssp_coverage.csv.gz`` (one row per
release, coefficient, method, kind and level), ``ddssp_coverage_table.csv``, ``ddssp_coverage.png``;
the tables are printed.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

from .harness import single_threaded

single_threaded()  # before numpy is imported

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from aim import AIM  # noqa: E402
from ddssp import DDSSPLinearRegression  # noqa: E402
from ddssp.bayes.intervals import KINDS, bootstrap_coefficients  # noqa: E402
from ddssp.statistics import uncovered_pairs  # noqa: E402
from marginals import Dataset  # noqa: E402
from benchmarks.data import load_bundled  # noqa: E402
from marginals.files import AtomicOutputs, write_text_atomic  # noqa: E402
from marginals.randomness import InsecureSeedWarning  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

ATTRS = ["education-num", "sex", "income>50K", "relationship"]
CATEGORICAL = ["relationship"]
TARGET = "education-num"
LEVELS = (0.5, 0.7, 0.8, 0.9, 0.95)
DELTA = 1e-5
METHODS = ("mechanism", "measurements")


def adult_subset() -> Dataset:
    """The adult training rows over ATTRS."""
    full = load_bundled("adult", "train")
    return Dataset(full.to_df()[ATTRS], full.domain.project(ATTRS))


def release_rows(eps: float, trial: int, train: Dataset, ols: np.ndarray, args) -> list[dict]:
    """One AIM release, both bootstraps, and every interval kind and level against the OLS."""
    seed = int(np.random.SeedSequence([args.seed, int(round(eps * 1e6)), trial]).generate_state(1)[0])
    t0 = time.perf_counter()
    workload = list(itertools.combinations(train.domain.attrs, 3))
    release = AIM(eps, DELTA, workload=workload, insecure_seed=seed).run(train)
    pairs = list(itertools.combinations(train.domain.attrs, 2))
    all_measured = not uncovered_pairs(pairs, [m.clique for m in release.measurements])
    est = DDSSPLinearRegression(TARGET, categorical=CATEGORICAL)
    rows = []
    for method in METHODS:
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            boot = bootstrap_coefficients(est, release, n_boot=args.boot, random_state=seed, method=method)
        seconds = time.perf_counter() - t1
        for kind, level in itertools.product(KINDS, LEVELS):
            ci = boot.interval(1 - level, kind)
            for j in range(len(ols)):
                rows.append({
                    "epsilon": eps, "trial": trial, "method": method, "kind": kind, "level": level, "coef": j,
                    "estimate": boot.estimate[j], "lo": ci[j, 0], "hi": ci[j, 1], "ols": ols[j],
                    "boot_sd": boot.std[j], "boot_bias": boot.bias[j], "all_pairs_measured": all_measured,
                    "measurements": len(release.measurements), "aim_seconds": t1 - t0 if method == METHODS[0] else np.nan,
                    "interval_seconds": seconds,
                })  # fmt: skip
    return rows


def run_ddssp(args) -> pd.DataFrame:
    """Every release of every epsilon, one row per interval (see ``release_rows``)."""
    warnings.filterwarnings("ignore", category=InsecureSeedWarning)  # seeded releases: benchmarks only
    train = adult_subset()
    ols = DDSSPLinearRegression(TARGET, categorical=CATEGORICAL).fit(train).coef_
    rows = []
    for eps in args.epsilons:
        for trial in range(args.releases):
            rows += release_rows(eps, trial, train, ols, args)
            if trial % 10 == 9:
                print(f"  eps {eps:g}: {trial + 1} releases", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df["covers"] = (df.lo <= df.ols) & (df.ols <= df.hi)
    df["width"] = df.hi - df.lo
    return df


def _cluster_se(sub: pd.DataFrame) -> float:
    """Standard error of the pooled coverage with releases as independent clusters."""
    per = sub.groupby("trial").covers.mean()
    return float(per.std(ddof=1) / np.sqrt(len(per))) if len(per) > 1 else float("nan")


def coverage_table(df: pd.DataFrame) -> pd.DataFrame:
    """Coverage (all releases, and releases that measured every pair), its SE and the median width."""
    rows = []
    for (eps, method, kind, level), sub in df.groupby(["epsilon", "method", "kind", "level"]):
        full = sub[sub.all_pairs_measured]
        rows.append({
            "epsilon": eps, "method": method, "kind": kind, "level": level, "coverage": sub.covers.mean(),
            "coverage_se": _cluster_se(sub), "coverage_all_pairs_measured": full.covers.mean() if len(full) else np.nan,
            "median_width": sub.width.median(), "releases": sub.trial.nunique(),
            "share_all_pairs_measured": sub.groupby("trial").all_pairs_measured.first().mean(),
            "mean_abs_error": (sub.estimate - sub.ols).abs().mean(),
            "median_interval_seconds": sub.groupby("trial").interval_seconds.first().median(),
        })  # fmt: skip
    return pd.DataFrame(rows)


def plot_coverage(table: pd.DataFrame, path: Path) -> None:
    """Coverage against nominal per epsilon (PNG written to ``path``, which may be a staged name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epsilons = sorted(table.epsilon.unique())
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5 * len(epsilons), 4.3), sharey=True, squeeze=False)
    styles = {("mechanism", "bias_aware"): "o-", ("mechanism", "basic"): "s--", ("measurements", "bias_aware"): "^:"}
    for ax, eps in zip(axes[0], epsilons):
        ax.plot([0.45, 1.0], [0.45, 1.0], "k--", lw=1, label="nominal")
        ax.fill_between([0.45, 1.0], [0.40, 0.95], [0.50, 1.05], color="0.9", zorder=0, label="nominal +- 5 points")
        for (method, kind), style in styles.items():
            sub = table[(table.epsilon == eps) & (table.method == method) & (table.kind == kind)].sort_values("level")
            ax.errorbar(sub.level, sub.coverage, yerr=2 * sub.coverage_se, fmt=style, capsize=2, label=f"{method}, {kind}")
        releases = int(table[table.epsilon == eps].releases.iloc[0])
        ax.set_title(f"eps = {eps:g} ({releases} releases)")
        ax.set_xlabel("nominal coverage")
        ax.set_xlim(0.45, 1.0)
        ax.set_ylim(0.3, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("empirical coverage of the private-rows OLS")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("DD-SSP intervals on AIM releases of adult (education-num ~ sex + income + relationship; +-2 SE)")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("ddssp", "posterior", "all"), default="all")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--releases", type=int, default=50)
    parser.add_argument("--boot", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1616)
    parser.add_argument("--bayes-epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--datasets", type=int, default=5, help="synthetic data sets per epsilon (posterior calibration)")
    parser.add_argument("--samples", type=int, default=200, help="NUTS draws per chain (as many warm-up)")
    parser.add_argument("--bayes-trials", type=int, default=3, help="trials of the accuracy comparison (0: calibration only)")
    parser.add_argument("--naive", action="store_true", help="also the plug-in posterior that ignores the noise")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bayes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("ddssp", "all"):
        start = time.perf_counter()
        df = run_ddssp(args)
        table = coverage_table(df)
        with AtomicOutputs() as out:
            df.to_csv(out.stage(args.out / "ddssp_coverage.csv.gz"), index=False, float_format="%.6g", compression="gzip")
            write_text_atomic(out.stage(args.out / "ddssp_coverage_table.csv"), table.to_csv(index=False, float_format="%.4f"))
            plot_coverage(table, out.stage(args.out / "ddssp_coverage.png"))
        print(f"DD-SSP interval coverage ({time.perf_counter() - start:.0f}s)")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.part in ("posterior", "all"):
        from .bayes_posterior_bench import run_posterior  # noqa: PLC0415 (needs the bayes extra)

        run_posterior(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
