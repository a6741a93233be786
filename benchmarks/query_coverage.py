"""Coverage of `Release.query`'s error bars: how often count +- 1.645 se (nominal 90%) holds the
count of the private rows, over many seeded AIM releases (issue 28, item 4).

For each data set (adult: all 47,842 training rows; acs-employment: its first 50,000 = all 49,000)
and epsilon, ``--releases`` AIM releases (delta 1e-9, ``max_model_size`` 80, exact discrete
Gaussian noise, seeded: benchmarks only). On each release:

- measured: every 2-way clique AIM measured; ``se`` from the measurement noise (`pgm.measured`:
  the exact SE of the GLS estimate the model's marginal approximates);
- inferred: up to ``--inferred`` pairs of a fixed list (`INFERRED`) that no measurement of this
  release holds; ``se`` from the parametric bootstrap of the fit (`aim.query.bootstrap_marginals`,
  ``--boot`` refits shared by the release's inferred pairs, as `Release.query` runs it per pair).

Every cell of every query is one row: its true count, the model's count, se, z = (count - truth) /
se and whether the 90% interval covers the truth. Coverage is pooled over cells; its standard
error treats releases as independent clusters. "Width vs error": the median se against the RMS
of count - truth, the sd of z and its robust version median |z| / 0.6745 (both 1 when se is the
error's spread; a few cells with a tiny bootstrap se inflate the plain sd). Cells are also split by the
true count in units of se (near-empty cells, where the model's non-negativity binds, apart).

Outputs in ``--out`` (default benchmarks/results/query_coverage): ``cells_<data>_eps<eps>.csv.gz``
(one per run: data, epsilon and kinds; large, not committed: the seeded runs regenerate them),
``queries.csv.gz`` (one row per release and query: cells, coverage, median se, RMS error), ``coverage.csv`` / ``coverage.txt`` (all runs found there), ``coverage_by_size.csv``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
import warnings
from pathlib import Path

from .harness import single_threaded

single_threaded()  # before numpy is imported

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from aim import AIM  # noqa: E402
from aim.query import bootstrap_marginals  # noqa: E402
from benchmarks.data import load_bundled  # noqa: E402
from marginals.files import AtomicOutputs, write_bytes_atomic, write_text_atomic  # noqa: E402
from pgm.measured import is_measured  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DELTA = 1e-9
LIMIT = 50_000
Z90 = 1.6448536269514722
#: pairs AIM rarely measures on each data set, the inferred queries' pool (fixed in advance).
INFERRED = {
    "adult": [("age", "sex"), ("education-num", "sex"), ("age", "hours-per-week"), ("education-num", "hours-per-week"),
              ("workclass", "education-num"), ("race", "hours-per-week")],
    "acs-employment": [("AGEP", "SCHL"), ("AGEP", "RELP"), ("SCHL", "DIS"), ("CIT", "ESR"), ("RAC1P", "DIS"),
                       ("MIG", "ESR")],
}
SIZE_BINS = [-np.inf, 0.5, 2.0, 5.0, 20.0, np.inf]
SIZE_LABELS = ["<0.5 se", "0.5-2 se", "2-5 se", "5-20 se", ">20 se"]


def _cells(kind: str, pair: tuple, truth: np.ndarray, count: np.ndarray, se: np.ndarray, **keys) -> pd.DataFrame:
    return pd.DataFrame({**keys, "kind": kind, "pair": ",".join(pair), "cell": np.arange(truth.size),
                         "truth": truth.ravel(), "count": count.ravel(), "se": se.ravel()})


def release_cells(data, name: str, eps: float, trial: int, args) -> pd.DataFrame:
    """One release: its measured 2-way cliques and up to ``args.inferred`` inferred pairs, one row per cell."""
    seed = int(np.random.SeedSequence([args.seed, int(round(eps * 1e6)), trial]).generate_state(1)[0])
    t0 = time.perf_counter()
    release = AIM(eps, DELTA, max_model_size=80, insecure_seed=seed).run(data)
    aim_seconds = time.perf_counter() - t0
    keys = {"data": name, "epsilon": eps, "trial": trial}
    measured = sorted({tuple(m.clique) for m in release.measurements if len(m.clique) == 2})
    measured = measured if "measured" in args.kinds else []
    inferred = [p for p in INFERRED[name] if not is_measured(release.measurements, p)][: args.inferred]
    inferred = inferred if "inferred" in args.kinds and args.boot else []
    truths = dict(zip(measured + inferred, data.marginals(measured + inferred)))
    parts = []
    for pair in measured:
        q = release.query(list(pair))
        parts.append(_cells("measured", pair, truths[pair], q["count"].to_numpy(), q["se"].to_numpy(), **keys))
    t1 = time.perf_counter()
    if inferred:
        boots = bootstrap_marginals(release, inferred, args.boot, random_state=seed)
        for pair, (tables, _), count in zip(inferred, boots, release.marginals(inferred)):
            parts.append(_cells("inferred", pair, truths[pair], count, tables.std(axis=0, ddof=1), **keys))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    out["aim_seconds"], out["boot_seconds"] = aim_seconds, time.perf_counter() - t1
    return out


def run(args, name: str, eps: float) -> pd.DataFrame:
    data = load_bundled(name, "train", limit=LIMIT)
    parts = []
    for trial in range(args.releases):
        parts.append(release_cells(data, name, eps, trial, args))
        if trial % 10 == 9:
            print(f"  {name} eps {eps:g}: {trial + 1} releases", file=sys.stderr, flush=True)
    return pd.concat(parts, ignore_index=True)


def _with_z(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["error"] = df["count"] - df["truth"]
    df["z"] = df.error / df.se
    df["covers"] = df.error.abs() <= Z90 * df.se
    df["size"] = pd.cut(df.truth / df.se, SIZE_BINS, labels=SIZE_LABELS)
    return df


def _summary(sub: pd.DataFrame) -> dict:
    per = sub.groupby("trial").covers.mean()
    return {"coverage": sub.covers.mean(), "coverage_se": per.std(ddof=1) / np.sqrt(len(per)) if len(per) > 1 else np.nan,
            "median_se": sub.se.median(), "rms_error": float(np.sqrt((sub.error**2).mean())),
            "rms_se": float(np.sqrt((sub.se**2).mean())), "sd_z": sub.z.std(), "robust_sd_z": float(sub.z.abs().median() / 0.6744897501960817),
            "mean_z": sub.z.mean(),
            "cells": len(sub), "queries": sub.groupby(["trial", "pair"]).ngroups, "releases": sub.trial.nunique()}


def tables(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(coverage per data set, epsilon and kind; the same split by the true count in se units)."""
    df = _with_z(df)
    main = [{"data": d, "epsilon": e, "kind": k, **_summary(s)} for (d, e, k), s in df.groupby(["data", "epsilon", "kind"])]
    by_size = [{"data": d, "epsilon": e, "kind": k, "true_count": z, **_summary(s)}
               for (d, e, k, z), s in df.groupby(["data", "epsilon", "kind", "size"], observed=True)]
    return pd.DataFrame(main), pd.DataFrame(by_size)


def _text(table: pd.DataFrame) -> str:
    return table.to_string(index=False, float_format=lambda v: f"{v:.3f}")


def write_tables(out: Path) -> None:
    files = sorted(out.glob("cells_*.csv.gz"))
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    main, by_size = tables(df)
    per_query = _with_z(df).groupby(["data", "epsilon", "kind", "trial", "pair"]).agg(
        cells=("covers", "size"), coverage=("covers", "mean"), se=("se", "median"),
        rms_error=("error", lambda e: float(np.sqrt((e**2).mean())))).reset_index()
    with AtomicOutputs() as staged:
        write_text_atomic(staged.stage(out / "coverage.csv"), main.to_csv(index=False, float_format="%.4f"))
        write_text_atomic(staged.stage(out / "coverage_by_size.csv"), by_size.to_csv(index=False, float_format="%.4f"))
        write_bytes_atomic(staged.stage(out / "queries.csv.gz"),
                           gzip.compress(per_query.to_csv(index=False, float_format="%.4g").encode(), mtime=0))
        write_text_atomic(staged.stage(out / "coverage.txt"), _text(main) + "\n\n" + _text(by_size) + "\n")
    print(_text(main) + "\n\n" + _text(by_size))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["adult", "acs-employment"], choices=sorted(INFERRED))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--releases", type=int, default=50)
    parser.add_argument("--kinds", nargs="+", default=["measured", "inferred"], choices=["measured", "inferred"],
                        help="which queries (separate runs write separate cells files)")
    parser.add_argument("--boot", type=int, default=10, help="bootstrap refits per release")
    parser.add_argument("--inferred", type=int, default=2, help="inferred pairs per release")
    parser.add_argument("--seed", type=int, default=2828)
    parser.add_argument("--tables-only", action="store_true", help="only rebuild the tables from the cells files")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "query_coverage")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore")  # seeded releases (benchmarks only) warn that they are not private
    for name in [] if args.tables_only else args.datasets:
        for eps in args.epsilons:
            start = time.perf_counter()
            df = run(args, name, eps)
            path = args.out / f"cells_{name}_eps{eps:g}_{'_'.join(sorted(args.kinds))}.csv.gz"
            write_bytes_atomic(path, gzip.compress(df.to_csv(index=False, float_format="%.6g").encode()))
            print(f"{name} eps {eps:g}: {args.releases} releases in {time.perf_counter() - start:.0f}s", file=sys.stderr)
    write_tables(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
