"""Speed of all 1-way and 2-way marginals (120 tables on adult): ours against pandas.

Two data sets: adult (train split of the bundled data) and a large table with adult's domain
made by resampling adult's rows with a seeded numpy Generator (10,000,000 rows by default).
Each measurement runs in its own fresh process (multiprocessing, 'spawn'), so every part
reports its own peak resident memory (ru_maxrss) and no part inherits another's memory.

    .venv/bin/python -m benchmarks.marginals_speed            # a table
    .venv/bin/python -m benchmarks.marginals_speed --json     # one JSON object
    .venv/bin/python -m benchmarks.marginals_speed --rows 1000000 --pandas categorical

pandas is timed two ways, one ``groupby(...).size()`` per clique each time:
- ``groupby``: on the integer code columns, ``sort=False`` (the plain way);
- ``categorical``: on categorical columns with ``observed=False``, which counts through the
  category codes and was the fastest pandas approach we found (sorting, crosstab and
  ``value_counts`` were all slower); converting the columns is timed separately as its build.
Our tables are checked cell by cell against every pandas result. Timings are reported,
never asserted: on a shared machine they vary with the load (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from marginals import Dataset, Domain

from .harness import (
    adult_or_demo,
    data_source_name,
    format_targets,
    in_fresh_process,
    machine_info,
    one_and_two_way,
    peak_rss_mb,
    repeat_timed,
    target,
)

TARGET_ADULT_S = 0.2
TARGET_BIG_S = 10.0
TARGET_SPEEDUP = 10.0
TARGET_RSS_MB = 2048.0
#: a pandas run slower than this is not repeated
PANDAS_REPEAT_BELOW_S = 5.0


# --- helpers run inside the worker processes ---------------------------------------------------


def _resampled_codes(rows: int, seed: int) -> tuple[Domain, list[np.ndarray], float]:
    """Adult's code columns resampled to ``rows`` rows (seeded), and the time it took."""
    base = adult_or_demo()
    start = time.perf_counter()
    pick = np.random.default_rng(seed).integers(0, len(base), size=rows)
    codes = [base.column(a)[pick] for a in base.domain.attrs]
    return base.domain, codes, time.perf_counter() - start


def run_ours(kind: str, rows: int, seed: int, repeat: int) -> dict:
    """Our tables: build the Dataset, then time ``Dataset.marginals`` on all 1- and 2-way cliques."""
    info: dict = {"part": f"ours/{kind}", "base_rss_mb": peak_rss_mb()}
    if kind == "adult":
        start = time.perf_counter()
        ds = adult_or_demo()
        info["build_s"] = time.perf_counter() - start
        info["build_detail"] = "read CSV + validate"
    else:
        domain, codes, resample_s = _resampled_codes(rows, seed)
        start = time.perf_counter()
        ds = Dataset.from_codes(codes, domain)
        validate_s = time.perf_counter() - start
        del codes
        info["build_s"] = resample_s + validate_s
        info["build_detail"] = f"resample {resample_s:.2f} s + Dataset validation {validate_s:.2f} s"
    cliques = one_and_two_way(ds.domain)
    times, tables = repeat_timed(lambda: ds.marginals(cliques), repeat)
    info.update(rows=len(ds), tables=len(cliques), times_s=times, best_s=min(times), peak_rss_mb=peak_rss_mb())
    info["result"] = tables
    return info


def _dense(series: pd.Series, attrs: tuple[str, ...], domain: Domain) -> np.ndarray:
    """A pandas count Series (index = codes) as a dense int64 table over ``attrs``."""
    flat = series.reset_index(name="_n")
    out = np.zeros([domain[a] for a in attrs], dtype=np.int64)
    where = tuple(flat[a].to_numpy(dtype=np.int64) for a in attrs)
    out[where] = flat["_n"].to_numpy(dtype=np.int64)
    return out


def run_pandas(kind: str, method: str, rows: int, seed: int, repeat: int) -> dict:
    """pandas tables: one ``groupby(list(clique)).size()`` per clique."""
    info: dict = {"part": f"pandas-{method}/{kind}", "base_rss_mb": peak_rss_mb()}
    if kind == "adult":
        base = adult_or_demo()
        domain, df = base.domain, base.to_df()
        del base
    else:
        domain, codes, _ = _resampled_codes(rows, seed)
        df = pd.DataFrame(dict(zip(domain.attrs, codes)))
        del codes
    start = time.perf_counter()
    if method == "categorical":
        df = df.astype({a: pd.CategoricalDtype(range(m)) for a, m in zip(domain.attrs, domain.shape)})
        count = lambda cl: df.groupby(list(cl), observed=False).size()  # noqa: E731
        info["build_detail"] = "convert columns to categorical"
    else:
        count = lambda cl: df.groupby(list(cl), sort=False).size()  # noqa: E731
        info["build_detail"] = "-"
    info["build_s"] = time.perf_counter() - start
    cliques = one_and_two_way(domain)
    run = lambda: [count(cl) for cl in cliques]  # noqa: E731
    times, series = repeat_timed(run, 1)
    if times[0] < PANDAS_REPEAT_BELOW_S and repeat > 1:
        more, series = repeat_timed(run, repeat - 1)
        times += more
    info.update(rows=len(df), tables=len(cliques), times_s=times, best_s=min(times), peak_rss_mb=peak_rss_mb())
    info["result"] = [_dense(s, cl, domain) for s, cl in zip(series, cliques)]
    return info


# --- the driver -------------------------------------------------------------------------------------


def exactness(ours: list[np.ndarray], theirs: list[np.ndarray]) -> dict:
    equal = sum(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(ours, theirs))
    return {"equal_tables": int(equal), "tables": len(ours), "exact": equal == len(ours) == len(theirs)}


def benchmark(rows: int, seed: int, repeat: int, methods: list[str], log) -> dict:
    report: dict = {"machine": machine_info(), "data_source": data_source_name(), "seed": seed, "parts": []}
    for kind in ("adult", "resampled"):
        log(f"timing ours on {kind} ...")
        ours = in_fresh_process(run_ours, kind, rows, seed, repeat)
        tables = ours.pop("result")
        ours.update(data=kind, method="ours", ratio=1.0, exact=None)
        report["parts"].append(ours)
        for method in methods:
            log(f"timing pandas ({method}) on {kind} ...")
            theirs = in_fresh_process(run_pandas, kind, method, rows, seed, repeat)
            check = exactness(tables, theirs.pop("result"))
            theirs.update(data=kind, method=f"pandas {method}", ratio=theirs["best_s"] / ours["best_s"], **check)
            report["parts"].append(theirs)
    report["targets"] = targets(report["parts"])
    return report


def targets(parts: list[dict]) -> list[dict]:
    """The measured targets: time on adult and on the big table, speed-up over pandas, memory, exactness."""
    def part(data, method):
        return next((p for p in parts if p["data"] == data and p["method"] == method), None)

    small, big = part("adult", "ours"), part("resampled", "ours")
    out = [
        target(f"{small['rows']:,} rows: {small['tables']} tables < {TARGET_ADULT_S} s", small["best_s"] < TARGET_ADULT_S,
               f"{small['best_s']:.4f} s"),
        target(f"{big['rows']:,} rows: {big['tables']} tables < {TARGET_BIG_S:g} s", big["best_s"] < TARGET_BIG_S,
               f"{big['best_s']:.3f} s"),
    ]  # fmt: skip
    pandas_big = [p for p in parts if p["data"] == "resampled" and p["method"] != "ours"]
    if pandas_big:
        fastest = min(pandas_big, key=lambda p: p["best_s"])
        out.append(target(f"{big['rows']:,} rows: >= {TARGET_SPEEDUP:g}x faster than the fastest pandas "
                          f"({fastest['method']})", fastest["ratio"] >= TARGET_SPEEDUP, f"{fastest['ratio']:.1f}x"))  # fmt: skip
    peak = max(p["peak_rss_mb"] for p in parts if p["method"] == "ours")
    out.append(target(f"peak memory of our processes < {TARGET_RSS_MB / 1024:g} GB", peak < TARGET_RSS_MB, f"{peak:.0f} MB"))
    exact = all(p["exact"] for p in parts if p["exact"] is not None)
    out.append(target("our tables equal pandas' cell by cell", exact, "all" if exact else "NO"))
    return out


def print_table(report: dict) -> None:
    m = report["machine"]
    print(f"marginals speed: all 1-way and 2-way marginals, ours vs pandas (data: {report['data_source']}, seed {report['seed']})")
    print(f"machine: {m['cpus']} CPUs, load average {m['load_average_1min']:.1f}; "
          f"Python {m['python']}, numpy {m['numpy']}, pandas {m['pandas']}")
    head = f"{'data':<10}{'rows':>12}  {'method':<20}{'tables':>7}{'best s':>10}{'runs':>5}{'x ours':>8}{'exact':>7}{'build s':>9}{'peak RSS (after imports)':>26}"
    print(head)
    print("-" * len(head))
    for p in report["parts"]:
        exact = "-" if p["exact"] is None else ("yes" if p["exact"] else f"NO {p['equal_tables']}/{p['tables']}")
        print(f"{p['data']:<10}{p['rows']:>12,}  {p['method']:<20}{p['tables']:>7}{p['best_s']:>10.4f}{len(p['times_s']):>5}"
              f"{p['ratio']:>8.1f}{exact:>7}{p['build_s']:>9.2f}{p['peak_rss_mb']:>11.0f} MB ({p['base_rss_mb']:.0f} MB)")
    print("build: " + "; ".join(f"{p['data']} {p['method']}: {p['build_detail']}" for p in report["parts"] if p["build_detail"] != "-"))
    print(format_targets(report["targets"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the resampled table (default 10,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling Generator")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of ours (best is reported); pandas too when quick")
    parser.add_argument("--pandas", choices=["both", "groupby", "categorical", "none"], default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    methods = {"both": ["groupby", "categorical"], "none": []}.get(args.pandas, [args.pandas])
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if not args.json else (lambda msg: None)
    report = benchmark(args.rows, args.seed, args.repeat, methods, log)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
