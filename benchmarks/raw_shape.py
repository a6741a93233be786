"""Does the raw path keep the data's shape? `aim.synthesize` on the real UCI Adult file (adult-raw,
all 15 columns, the spec inferred under DP with its defaults), measured against the real rows.

    python -m benchmarks.raw_shape                       # eps 0.5, 1, 4; 30 runs each (issue 24's grid)
    python -m benchmarks.raw_shape --eps 1 --runs 3      # a quick look

Per run it records, from the release's spec and its synthetic rows (default row count, the noisy
total): which numeric columns collapsed to one bin; the 1st / 99th percentile and the max of age,
hours-per-week and capital-gain; the 1-way and 2-way total-variation distance between synthetic
and real rows on a fixed public grid (numeric columns binned on hand-set edges, categories as
they are, missing as its own value); how many real rows the spec cannot encode (dropped); how
often the synthetic education and education-num agree (they are one bijection in the real data);
and the share of synthetic education-num values outside the real range 1..16. Runs use insecure
seeds 0..runs-1 (a benchmark: reproducible, not private). Writes ``<out>/runs.json`` and
``<out>/summary.md`` (default ``benchmarks/results/raw_shape/<name>``); ``--combine`` joins the
``runs.json`` of parallel invocations (e.g. one per epsilon) into one summary.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .data import load_adult_raw
from .harness import RESULTS, write_json, write_text

#: the public grid the distances are measured on (hand-set from adult.names' ranges, not from rows).
GRID = {
    "age": [17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 80, 91],
    "fnlwgt": [0, 50e3, 100e3, 150e3, 200e3, 250e3, 300e3, 400e3, 600e3, 1.5e6],
    "education-num": list(np.arange(0.5, 17.5, 1.0)),
    "capital-gain": [0, 0.5, 1000, 3000, 5000, 10000, 20000, 100000],
    "capital-loss": [0, 0.5, 1000, 1500, 2000, 2500, 5000],
    "hours-per-week": [0, 10, 20, 30, 35, 40, 41, 45, 50, 60, 80, 100],
}
TAILS = ("age", "hours-per-week", "capital-gain")


def public_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Each column as a label on the public grid: numeric bins (ends open), categories as text, missing."""
    out = {}
    for col in df.columns:
        if col in GRID:
            values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
            edges = np.asarray(GRID[col], dtype=float)
            idx = np.clip(np.digitize(values, edges[1:-1]), 0, len(edges) - 2).astype(object)
            idx[np.isnan(values)] = "missing"
            out[col] = pd.Series(idx, index=df.index).astype(str)
        else:
            out[col] = df[col].astype(object).where(df[col].notna(), "missing").astype(str)
    return pd.DataFrame(out)


def tv(real: pd.DataFrame, synth: pd.DataFrame, cols: list[str]) -> float:
    """Total-variation distance between the two tables' joint distributions over ``cols``."""
    p = real.groupby(cols).size() / len(real)
    q = synth.groupby(cols).size() / max(len(synth), 1)
    return float(0.5 * p.sub(q, fill_value=0.0).abs().sum())


def one_run(raw: pd.DataFrame, cells: pd.DataFrame, eps: float, seed: int) -> dict:
    """One seeded `aim.synthesize` run and its shape measurements."""
    from aim import synthesize
    from marginals.spec.discretize import Discretizer

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release, synth = synthesize(raw, eps, 1e-9, insecure_seed=seed, sample_seed=seed)
    seconds = time.perf_counter() - start
    spec = release.spec["columns"]
    numeric = [c for c, s in spec.items() if s.get("type") == "numeric"]
    kept = len(Discretizer.from_spec(release.spec).transform(raw, extra="drop"))
    syn_cells = public_cells(synth[raw.columns])
    edu_map = raw.dropna(subset=["education", "education-num"]).groupby("education")["education-num"].first()
    edu = synth.dropna(subset=["education", "education-num"])
    agree = float((edu["education"].map(edu_map) == pd.to_numeric(edu["education-num"])).mean()) if len(edu) else float("nan")
    edu_num = pd.to_numeric(synth["education-num"], errors="coerce").dropna()
    tails = {}
    for col in TAILS:
        v = pd.to_numeric(synth[col], errors="coerce").dropna()
        tails[col] = [float(np.percentile(v, 1)), float(np.percentile(v, 99)), float(v.max())] if len(v) else [None] * 3
    cols = list(raw.columns)
    return {
        "eps": eps, "seed": seed, "seconds": seconds, "synthetic_rows": len(synth),
        "collapsed": [c for c in numeric if len(spec[c].get("edges", [])) <= 2],
        "categories": {c: len(s["categories"]) for c, s in spec.items() if "categories" in s},
        "dropped_rows": len(raw) - kept,
        "tails": tails,
        "tv1": float(np.mean([tv(cells, syn_cells, [c]) for c in cols])),
        "tv1_by_column": {c: tv(cells, syn_cells, [c]) for c in cols},
        "tv2": float(np.mean([tv(cells, syn_cells, list(p)) for p in itertools.combinations(cols, 2)])),
        "education_agreement": agree,
        "education_num_outside_1_16": float(((edu_num < 1) | (edu_num > 16)).mean()) if len(edu_num) else 0.0,
    }


def real_tails(raw: pd.DataFrame) -> dict:
    return {c: [float(np.percentile(raw[c].dropna(), 1)), float(np.percentile(raw[c].dropna(), 99)),
                float(raw[c].max())] for c in TAILS}


def summarize(runs: list[dict], raw: pd.DataFrame) -> str:
    """The markdown summary: one block per epsilon."""
    lines = [f"# Raw-path shape on adult-raw ({len(raw):,} rows, 15 columns): {len(runs)} runs", "",
             "real tails (p1 / p99 / max): " + "; ".join(f"{c} {a:g} / {b:g} / {m:g}" for c, (a, b, m) in real_tails(raw).items()), ""]
    for eps in sorted({r["eps"] for r in runs}):
        rs = [r for r in runs if r["eps"] == eps]
        collapsed = pd.Series([c for r in rs for c in r["collapsed"]]).value_counts().to_dict()
        lines += [f"## eps = {eps:g} ({len(rs)} runs)", "",
                  "| measure | mean | min | max |", "|---|---|---|---|"]
        for key in ("tv1", "tv2", "dropped_rows", "synthetic_rows", "education_agreement", "education_num_outside_1_16", "seconds"):
            v = np.array([r[key] for r in rs], dtype=float)
            lines.append(f"| {key} | {np.nanmean(v):.4g} | {np.nanmin(v):.4g} | {np.nanmax(v):.4g} |")
        for col in TAILS:
            v = np.array([r["tails"][col] for r in rs], dtype=float)
            lines.append(f"| {col} p1 / p99 / max (median) | {' / '.join(f'{x:g}' for x in np.nanmedian(v, axis=0))} | | |")
        lines += ["", "collapsed numeric columns (runs): " + (", ".join(f"{c} {n}" for c, n in collapsed.items()) or "none"), ""]
        by_col = [r["tv1_by_column"] for r in rs if "tv1_by_column" in r]
        if by_col:
            means = pd.DataFrame(by_col).mean()
            lines += ["1-way TV by column (mean): " + ", ".join(f"{c} {v:.3f}" for c, v in means.items()), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--name", default="current", help="results folder name (e.g. before / after)")
    p.add_argument("--out", type=Path)
    p.add_argument("--combine", type=Path, nargs="+", metavar="RUNS_JSON",
                   help="write one summary from the runs.json files of parallel invocations (runs nothing)")
    args = p.parse_args(argv)
    out = args.out or RESULTS / "raw_shape" / args.name
    raw = load_adult_raw()
    if args.combine:
        runs = [r for path in args.combine for r in json.loads(path.read_text())]
        write_json(out / "runs.json", runs)
        write_text(out / "summary.md", summarize(runs, raw))
        print(summarize(runs, raw))
        return 0
    cells = public_cells(raw)
    runs = []
    for eps in args.eps:
        for seed in range(args.runs):
            runs.append(one_run(raw, cells, eps, seed))
            print(f"eps {eps:g} run {seed}: tv1 {runs[-1]['tv1']:.4f} tv2 {runs[-1]['tv2']:.4f} "
                  f"collapsed {runs[-1]['collapsed']} dropped {runs[-1]['dropped_rows']}", flush=True)
    write_json(out / "runs.json", runs)
    text = summarize(runs, raw)
    write_text(out / "summary.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
