"""All 1-way and 2-way marginals of a 50,000,000-row Parquet table: numpy in memory vs Dask.

The table has adult's domain and is made by resampling adult's train rows with a seeded numpy
Generator, written once as uint8 Parquet files (one per partition) under
``$XDG_CACHE_HOME/dp-marginals/`` (else ``~/.cache/dp-marginals/``), never in the repository.
Then the 120 tables (15 one-way + 105 two-way) are computed by:

- numpy: ``pd.read_parquet`` + ``Dataset`` (load time, reported apart), then ``Dataset.marginals``;
- dask: ``DaskDataset.from_parquet`` on a ``distributed.LocalCluster`` of 2 single-threaded worker
  processes. The first ``marginals`` call validates every column and counts in one pass (what
  AIM does); a second call counts only (validation done, only the needed columns are read).

Each backend runs in its own fresh Python process. Memory: numpy = that process's peak RSS
(ru_maxrss); dask = the client process's peak RSS (client + scheduler + nannies live there),
the largest single worker's peak RSS (ru_maxrss of the reaped worker processes,
RUSAGE_CHILDREN), and the peak of the workers' summed RSS sampled every 0.1 s with psutil.
All tables are compared cell by cell. Timings are reported, never asserted (shared machine).

    .venv/bin/python -m benchmarks.dask_marginals              # a table
    .venv/bin/python -m benchmarks.dask_marginals --json       # one JSON object
    .venv/bin/python -m benchmarks.dask_marginals --rows 5000000 --partitions 10
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from marginals import DaskDataset, Dataset, Domain
from benchmarks.data import data_dir

from .harness import ROOT, adult_or_demo, data_source_name, machine_info, one_and_two_way, peak_rss_mb, publish_folder, run_json


def cache_dir() -> Path:
    """Where the generated Parquet tables live (outside the repository)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dp-marginals"


# --- the data ------------------------------------------------------------------------------------------------


def build_parquet(rows: int, partitions: int, seed: int, log) -> tuple[Path, Domain, float]:
    """The cached table's folder (built on first use: rows resampled from adult, seeded), its domain, build seconds."""
    base = adult_or_demo()
    name = f"{'adult' if data_dir() is not None else 'demo'}-resampled-{rows}-p{partitions}-seed{seed}"
    folder = cache_dir() / name
    if (folder / "_done.json").is_file():
        return folder, base.domain, 0.0
    log(f"building {rows:,} rows in {partitions} Parquet files under {folder} ...")
    start = time.perf_counter()
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=name + ".", dir=folder.parent))
    rng = np.random.default_rng(seed)
    codes = [base.column(a) for a in base.domain.attrs]
    bounds = np.linspace(0, rows, partitions + 1).astype(np.int64)
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        pick = rng.integers(0, len(base), size=int(hi - lo))
        part = pd.DataFrame({a: c[pick].astype(np.uint8) for a, c in zip(base.domain.attrs, codes)})
        part.to_parquet(tmp / f"part.{i:04d}.parquet", index=False)
    base.domain.save(tmp / "_domain.json")  # "_" files are skipped by Parquet readers
    (tmp / "_done.json").write_text(json.dumps({"rows": rows, "partitions": partitions, "seed": seed}))
    publish_folder(tmp, folder)
    return folder, base.domain, time.perf_counter() - start


# --- the two backends (each runs in its own process: ``--part numpy|dask``) --------------------------------------


def part_numpy(folder: Path, domain: Domain) -> tuple[dict, list[np.ndarray]]:
    start = time.perf_counter()
    df = pd.read_parquet(folder)
    read_s = time.perf_counter() - start
    ds = Dataset(df, domain)
    del df
    load_s = time.perf_counter() - start
    cliques = one_and_two_way(domain)
    start = time.perf_counter()
    tables = ds.marginals(cliques)
    info = {"backend": "numpy", "rows": len(ds), "partitions": 1, "tables": len(tables),
            "read_s": read_s, "load_s": load_s, "marginals_s": time.perf_counter() - start,
            "peak_rss_mb": peak_rss_mb()}
    return info, tables


class WorkerSampler(threading.Thread):
    """Samples the summed RSS of the worker processes every ``every`` seconds (psutil, if installed)."""

    def __init__(self, pids: list[int], every: float = 0.1) -> None:
        super().__init__(daemon=True)
        import psutil

        self.procs = [psutil.Process(p) for p in pids]
        self.every, self.peak_sum, self.peak_one, self.start_sum = every, 0, 0, None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rss = [p.memory_info().rss for p in self.procs]
            except Exception:  # a worker went away: keep what was seen
                return
            if self.start_sum is None:
                self.start_sum = sum(rss)
            self.peak_sum, self.peak_one = max(self.peak_sum, sum(rss)), max(self.peak_one, max(rss))
            self.stop.wait(self.every)


def part_dask(folder: Path, domain: Domain, workers: int) -> tuple[dict, list[np.ndarray]]:
    from distributed import Client, LocalCluster

    info: dict = {"backend": "dask", "workers": workers}
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    info["cluster_start_s"] = time.perf_counter() - start
    sampler = None
    try:
        sampler = WorkerSampler(list(client.run(os.getpid).values()))
        sampler.start()
    except ImportError:
        pass
    cliques = one_and_two_way(domain)
    ds = DaskDataset.from_parquet(folder, domain)
    start = time.perf_counter()
    tables = ds.marginals(cliques)  # validation + row count + all 120 tables in one pass
    info["marginals_s"] = time.perf_counter() - start
    start = time.perf_counter()
    again = ds.marginals(cliques)  # validated: counting only
    info["marginals_again_s"] = time.perf_counter() - start
    info["again_equal"] = all(np.array_equal(a, b) for a, b in zip(tables, again))
    info.update(rows=len(ds), partitions=ds.npartitions, tables=len(tables))
    if sampler is not None:
        sampler.stop.set()
        sampler.join()
        info["workers_peak_sum_mb"] = sampler.peak_sum / 2**20
        info["workers_start_sum_mb"] = (sampler.start_sum or 0) / 2**20
    client.close()
    cluster.close()
    info["peak_rss_mb"] = peak_rss_mb()  # the client process: client, scheduler and nannies
    info["worker_peak_rss_mb"] = peak_rss_mb(resource.RUSAGE_CHILDREN)  # largest reaped worker
    return info, tables


def run_part(kind: str, folder: Path, workers: int) -> dict:
    """Run one backend in a fresh interpreter; returns its info plus its tables."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tables.npz"
        info = run_json([sys.executable, "-m", "benchmarks.dask_marginals", "--part", kind, "--folder", folder,
                         "--workers", workers, "--out", out], cwd=ROOT)  # fmt: skip
        with np.load(out) as z:
            info["result"] = [z[f"t{i}"] for i in range(len(z.files))]
    return info


def _part_main(args) -> int:
    folder = Path(args.folder)
    domain = Domain.load(folder / "_domain.json")
    info, tables = part_numpy(folder, domain) if args.part == "numpy" else part_dask(folder, domain, args.workers)
    np.savez(args.out, **{f"t{i}": t for i, t in enumerate(tables)})
    print(json.dumps(info))
    return 0


# --- the driver -------------------------------------------------------------------------------------------------


def benchmark(rows: int, partitions: int, seed: int, workers: int, log) -> dict:
    folder, domain, build_s = build_parquet(rows, partitions, seed, log)
    report: dict = {
        "machine": machine_info(),
        "data_source": data_source_name(),
        "rows": rows, "files": partitions, "seed": seed, "folder": str(folder), "build_s": build_s,
        "parquet_mb": sum(f.stat().st_size for f in folder.glob("*.parquet")) / 2**20,
    }
    import dask

    report["machine"]["dask"] = dask.__version__
    log("numpy in memory ...")
    numpy_part = run_part("numpy", folder, workers)
    log(f"dask, LocalCluster with {workers} workers ...")
    dask_part = run_part("dask", folder, workers)
    ours, theirs = numpy_part.pop("result"), dask_part.pop("result")
    equal = sum(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(ours, theirs))
    report.update(numpy=numpy_part, dask=dask_part, equal_tables=int(equal),
                  exact=equal == len(ours) == len(theirs) and dask_part["again_equal"])
    return report


def print_table(r: dict) -> None:
    m, n, d = r["machine"], r["numpy"], r["dask"]
    print(f"dask marginals: {n['tables']} tables (all 1-way and 2-way) of {r['rows']:,} rows with adult's domain "
          f"(data: {r['data_source']}, seed {r['seed']})")
    print(f"machine: {m['cpus']} CPUs, load average {m['load_average_1min']:.1f}; Python {m['python']}, "
          f"numpy {m['numpy']}, pandas {m['pandas']}, dask {m['dask']}")
    built = f"built in {r['build_s']:.1f} s" if r["build_s"] else "cached"
    print(f"data: {r['files']} uint8 Parquet files, {r['parquet_mb']:.0f} MB on disk ({built}): {r['folder']}")
    head = f"{'backend':<40}{'partitions':>11}{'load s':>8}{'marginals s':>13}{'peak RSS':>10}{'workers peak RSS':>30}"
    print(head)
    print("-" * len(head))
    print(f"{'numpy (Dataset, in memory)':<40}{n['partitions']:>11}{n['load_s']:>8.2f}{n['marginals_s']:>13.2f}"
          f"{n['peak_rss_mb']:>7.0f} MB{'-':>30}")
    workers = f"max one {d['worker_peak_rss_mb']:.0f} MB"
    if "workers_peak_sum_mb" in d:
        workers = f"sum {d['workers_peak_sum_mb']:.0f} MB, " + workers
    print(f"{'dask, 1st call: validate + count':<40}{d['partitions']:>11}{'-':>8}{d['marginals_s']:>13.2f}"
          f"{d['peak_rss_mb']:>7.0f} MB{workers:>30}")
    print(f"{'dask, 2nd call: count only':<40}{d['partitions']:>11}{'-':>8}{d['marginals_again_s']:>13.2f}{'(peaks: both calls)':>40}")
    if "workers_start_sum_mb" in d:
        print(f"dask memory: peak RSS = the client process (client, scheduler, nannies); workers idle at start: "
              f"sum {d['workers_start_sum_mb']:.0f} MB")
    print(f"numpy load = read_parquet {n['read_s']:.2f} s + Dataset validation; dask cluster start {d['cluster_start_s']:.2f} s "
          f"(not included); dask reads the Parquet files inside each pass")
    print(f"tables identical (numpy vs dask, cell by cell, dtype int64): "
          f"{'yes' if r['exact'] else 'NO'} ({r['equal_tables']}/{n['tables']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000_000, help="rows of the resampled table (default 50,000,000)")
    parser.add_argument("--partitions", type=int, default=50, help="Parquet files = Dask partitions (default 50)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling Generator")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (1 thread each)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--part", choices=["numpy", "dask"], help=argparse.SUPPRESS)  # internal: one backend
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.part:
        return _part_main(args)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if not args.json else (lambda msg: None)
    report = benchmark(args.rows, args.partitions, args.seed, args.workers, log)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
