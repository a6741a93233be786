"""Coverage of DD-SSP coefficient intervals over independent AIM releases, and noise-aware posteriors.

Part ``ddssp`` (the acceptance check of issue 16): adult (first 50,000 training rows) restricted to
nine attributes (age, workclass, education-num, marital-status, occupation, relationship, sex,
hours-per-week, income>50K), linear DD-SSP of education-num on the other eight (workclass,
marital-status, occupation, relationship one-hot; the rest scaled to [-1, 1]). For each epsilon and
each of ``--releases`` independent AIM releases (seeded, delta 1e-5, max_model_size ``--mms``),
`DDSSPLinearRegression(interval="measurements")` gives intervals at nominal 50/70/80/90/95% from one
set of ``--boot`` bootstrap replicates. Coverage is counted over all (release, coefficient) pairs
against two estimands:

* ``ols``: the OLS fit on the private training rows (= DD-SSP on the exact marginals), the quantity
  a user wants;
* ``measured``: DD-SSP with exact marginals where a measured clique covers the block and the
  release's inferred marginals elsewhere, the quantity the noise bootstrap targets.

Part ``posterior``: the noise-aware Bayesian GLM (`ddssp.bayes.posterior`, NUTS, needs the ``bayes``
extra) on its own Gaussian SSP release next to DD-SSP on an AIM release and AdaSSP / ObjPert on the
private rows, on the linear and logistic tasks of figure3 restricted to a few numeric features.

Outputs in ``--out`` (default benchmarks/results/bayes): ``ddssp_coverage.csv``, ``ddssp_coverage.png``,
``posterior.csv``, ``summary.md`` sections printed to stdout.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aim import AIM  # noqa: E402
from ddssp import DDSSPLinearRegression  # noqa: E402
from ddssp.bayes.intervals import bootstrap_interval, measured_pair_estimand  # noqa: E402
from marginals import Dataset  # noqa: E402
from marginals.data import load_bundled  # noqa: E402

ATTRS = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship", "sex", "hours-per-week", "income>50K"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship"]
TARGET = "education-num"
LEVELS = (0.5, 0.7, 0.8, 0.9, 0.95)
DELTA = 1e-5
N_TRAIN = 50_000


def adult_subset() -> Dataset:
    """The first N_TRAIN adult training rows over ATTRS."""
    full = load_bundled("adult", "train", limit=N_TRAIN)
    return Dataset(full.to_df()[ATTRS], full.domain.project(ATTRS))


def coverage_rows(eps: float, trial: int, train: Dataset, ols: np.ndarray, args) -> list[dict]:
    """One AIM release, its bootstrap intervals at every level, and both estimands."""
    seed = int(np.random.SeedSequence([args.seed, int(eps * 1e6), trial]).generate_state(1)[0])
    t0 = time.perf_counter()
    release = AIM(eps, DELTA, max_model_size=args.mms, insecure_seed=seed).run(train)
    t1 = time.perf_counter()
    est = DDSSPLinearRegression(TARGET, categorical=CATEGORICAL, interval="measurements", n_boot=args.boot, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(release)
        measured = measured_pair_estimand(DDSSPLinearRegression(TARGET, categorical=CATEGORICAL), release, train)
    t2 = time.perf_counter()
    boot = est.bootstrap_
    rows = []
    for level in LEVELS:
        ci = bootstrap_interval(boot.estimate, boot.replicates, 1 - level, "basic")
        for j, name in enumerate(est.encoded_feature_names_):
            rows.append({
                "epsilon": eps, "trial": trial, "level": level, "feature": name, "estimate": boot.estimate[j],
                "lo": ci[j, 0], "hi": ci[j, 1], "ols": ols[j], "measured": measured[j], "boot_sd": boot.std[j],
                "aim_seconds": t1 - t0, "interval_seconds": t2 - t1, "measurements": len(release.measurements),
            })  # fmt: skip
    return rows


def run_ddssp(args) -> pd.DataFrame:
    train = adult_subset()
    ols = DDSSPLinearRegression(TARGET, categorical=CATEGORICAL).fit(train).coef_
    rows = []
    for eps in args.epsilons:
        for trial in range(args.releases):
            rows += coverage_rows(eps, trial, train, ols, args)
            if trial % 10 == 9:
                print(f"  eps {eps:g}: {trial + 1} releases", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df["covers_ols"] = (df.lo <= df.ols) & (df.ols <= df.hi)
    df["covers_measured"] = (df.lo <= df.measured) & (df.measured <= df.hi)
    df["width"] = df.hi - df.lo
    return df


def coverage_table(df: pd.DataFrame) -> pd.DataFrame:
    """Empirical coverage (both estimands) and median width per epsilon and nominal level."""
    g = df.groupby(["epsilon", "level"])
    out = g.agg(
        coverage_ols=("covers_ols", "mean"), coverage_measured=("covers_measured", "mean"), median_width=("width", "median"),
        mean_abs_error_ols=("estimate", "size"), releases=("trial", "nunique"),
    ).reset_index()
    err = df[df.level == LEVELS[0]].assign(e=lambda d: (d.estimate - d.ols).abs()).groupby("epsilon").e.mean()
    out["mean_abs_error_ols"] = out.epsilon.map(err)
    return out


def plot_coverage(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, col, title in zip(axes, ("coverage_ols", "coverage_measured"), ("vs OLS on the private rows", "vs measured-pair estimand")):
        ax.plot([0.45, 1.0], [0.45, 1.0], "k--", lw=1, label="nominal")
        ax.axhspan(0.85, 0.95, xmin=0, xmax=1, color="0.9", zorder=0)
        for eps, sub in table.groupby("epsilon"):
            ax.plot(sub.level, sub[col], "o-", label=f"eps = {eps:g} ({int(sub.releases.iloc[0])} releases)")
        ax.set_xlabel("nominal coverage")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("empirical coverage (all coefficients)")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("DD-SSP coefficient intervals on AIM releases of adult (education-num ~ 8 attributes)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("ddssp", "posterior", "all"), default="all")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--releases", type=int, default=50)
    parser.add_argument("--boot", type=int, default=100)
    parser.add_argument("--mms", type=float, default=4.0, help="AIM max_model_size (MB)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--bayes-epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--datasets", type=int, default=5, help="synthetic data sets per epsilon (posterior calibration)")
    parser.add_argument("--samples", type=int, default=200, help="NUTS draws per chain (as many warm-up)")
    parser.add_argument("--bayes-trials", type=int, default=1)
    parser.add_argument("--naive", action="store_true", help="also the plug-in posterior that ignores the noise")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bayes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("ddssp", "all"):
        start = time.perf_counter()
        df = run_ddssp(args)
        df.to_csv(args.out / "ddssp_coverage.csv", index=False, float_format="%.6g")
        table = coverage_table(df)
        table.to_csv(args.out / "ddssp_coverage_table.csv", index=False, float_format="%.4f")
        plot_coverage(table, args.out / "ddssp_coverage.png")
        print(f"DD-SSP interval coverage ({time.perf_counter() - start:.0f}s)")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.part in ("posterior", "all"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bayes_posterior_bench import run_posterior  # noqa: PLC0415 (needs the bayes extra)

        run_posterior(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
