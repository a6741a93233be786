"""AIM over a 100,000,000-row Parquet table on a Dask ``LocalCluster``: passes over the rows, time, memory.

The table has the ``w35`` domain of `benchmarks.aim_scale` and is made once, in 1M-row chunks
(one Parquet file each, uint8/uint16 columns), by resampling rows of
``benchmarks.aim_scale.load_table("w35", 0)`` with replacement (seeded numpy Generator). It is
cached under ``benchmarks/cache/`` (git-ignored), never committed.

The run (in a fresh interpreter): a ``distributed.LocalCluster`` of ``--workers`` worker processes
of one thread each, ``DaskDataset.from_parquet`` over the folder, then ``AIM(eps).run`` on it with
the user's defaults (no BLAS pinning). Reported:

- passes over the rows, counted twice: the number of ``dask.compute`` calls that map the
  partitions (``DaskDataset._compute``) and the number of partition-counting tasks the workers
  ran (distributed's task stream) divided by the number of partitions;
- counting time (inside those passes: read, validate, count, reduce), AIM's time on the counts
  (the rest of ``AIM.run``) and the total; CPU seconds of each worker and of the client process
  during the run (on a shared machine, the work done rather than the time waited);
- memory: each worker's peak RSS (psutil, sampled every 0.1 s; and ru_maxrss of the reaped
  worker processes), the client process's peak RSS (client, scheduler, nannies).

``--check`` (for small ``--rows``) also runs AIM on the same rows in memory (`marginals.Dataset`)
and compares the releases measurement by measurement. Timings are reported, never asserted.

    python -m benchmarks.dask_aim                      # 100M rows, eps = 1, 2 workers
    python -m benchmarks.dask_aim --rows 5000000 --check
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import CACHE, ROOT, machine_info, peak_rss_mb, publish_folder, run_json

CHUNK_ROWS = 1_000_000


def build_parquet(rows: int, seed: int, config: str, log) -> tuple[Path, float]:
    """The cached folder of ``rows`` rows (one Parquet file per 1M-row chunk) and the build seconds (0 if cached)."""
    import pandas as pd

    from benchmarks.aim_scale import load_table

    folder = CACHE / f"dask-aim-{config}-n{rows}-s{seed}"
    if (folder / "_done.json").is_file():
        return folder, 0.0
    start = time.perf_counter()
    base = load_table(config, 0)
    log(f"building {rows:,} rows of {config} ({len(base):,} base rows) under {folder} ...")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    rng = np.random.default_rng(seed)
    codes = [base.column(a) for a in base.domain.attrs]
    for i, lo in enumerate(range(0, rows, CHUNK_ROWS)):
        pick = rng.integers(0, len(base), size=min(CHUNK_ROWS, rows - lo))
        pd.DataFrame({a: c[pick] for a, c in zip(base.domain.attrs, codes)}).to_parquet(
            tmp / f"part.{i:04d}.parquet", index=False
        )
    base.domain.save(tmp / "_domain.json")  # "_" files are skipped by Parquet readers
    (tmp / "_done.json").write_text(json.dumps({"rows": rows, "seed": seed, "config": config}))
    publish_folder(tmp, folder)
    return folder, time.perf_counter() - start


def release_digest(release) -> dict:
    """What two releases of the same run must share: cliques, noisy counts, the model's potentials."""
    import hashlib

    h = hashlib.sha256()
    for m in release.measurements:
        h.update(repr(m.clique).encode() + m.noisy_counts.tobytes())
    for c in release.model.cliques:
        h.update(repr(c).encode() + release.model.potentials[c].values.tobytes())
    return {"rounds": len(release.rounds), "measurements": len(release.measurements), "sha256": h.hexdigest()}


# --- one run in a fresh interpreter (``--part``) ---------------------------------------------------------------


def _passes_counter(DaskDataset) -> dict:
    """Wrap `DaskDataset._compute` (one ``dask.compute`` over the partitions): calls and seconds inside."""
    stats = {"passes": 0, "count_s": 0.0}
    inner = DaskDataset._compute

    def counted(self, attrs, axes):
        start = time.perf_counter()
        try:
            return inner(self, attrs, axes)
        finally:
            stats["passes"] += 1
            stats["count_s"] += time.perf_counter() - start

    DaskDataset._compute = counted
    return stats


def _cpu_seconds() -> float:
    """This process's user + system CPU seconds (run on each worker)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def part_dask(folder: Path, eps: float, workers: int) -> dict:
    from distributed import Client, LocalCluster, get_task_stream

    from aim import AIM
    from benchmarks.dask_marginals import WorkerSampler
    from marginals import DaskDataset, Domain

    stats = _passes_counter(DaskDataset)
    domain = Domain.load(folder / "_domain.json")
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    info: dict = {"workers": workers, "cluster_start_s": time.perf_counter() - start}
    sampler = WorkerSampler(list(client.run(os.getpid).values()))
    sampler.start()
    ds = DaskDataset.from_parquet(folder, domain)
    cpu_before = client.run(_cpu_seconds)
    with get_task_stream(client) as stream:
        start, client_cpu = time.perf_counter(), _cpu_seconds()
        release = AIM(eps, insecure_seed=0).run(ds)
        info["total_s"] = time.perf_counter() - start
        info["client_cpu_s"] = _cpu_seconds() - client_cpu
    info["worker_cpu_s"] = [after - cpu_before[w] for w, after in client.run(_cpu_seconds).items()]
    sampler.stop.set()
    sampler.join()
    tasks = [t for t in stream.data if str(t["key"]).find("count_partition") >= 0]
    info.update(stats, partitions=ds.npartitions, rows=len(ds), partition_tasks=len(tasks))
    info["passes_by_tasks"] = len(tasks) / ds.npartitions
    info["aim_on_counts_s"] = info["total_s"] - info["count_s"]
    info["worker_peak_rss_mb"] = sampler.peak_one / 2**20
    info["workers_peak_sum_mb"] = sampler.peak_sum / 2**20
    info["workers_start_sum_mb"] = (sampler.start_sum or 0) / 2**20
    info["release"] = release_digest(release)
    info["model_mb"] = release.model.size_mb
    client.close()
    cluster.close()
    info["client_peak_rss_mb"] = peak_rss_mb()
    info["reaped_worker_peak_rss_mb"] = peak_rss_mb(resource.RUSAGE_CHILDREN)
    return info


def part_memory(folder: Path, eps: float) -> dict:
    import pandas as pd

    from aim import AIM
    from marginals import Dataset, Domain

    domain = Domain.load(folder / "_domain.json")
    ds = Dataset(pd.read_parquet(folder), domain)
    start = time.perf_counter()
    release = AIM(eps, insecure_seed=0).run(ds)
    return {"total_s": time.perf_counter() - start, "release": release_digest(release), "peak_rss_mb": peak_rss_mb()}


def _run_part(kind: str, folder: Path, eps: float, workers: int) -> dict:
    return run_json([sys.executable, "-m", "benchmarks.dask_aim", "--part", kind, "--folder", str(folder),
                     "--eps", str(eps), "--workers", str(workers)], cwd=ROOT)  # fmt: skip


def print_report(r: dict) -> None:
    d, m = r["dask"], r["machine"]
    print(f"AIM eps={r['eps']:g} over {d['rows']:,} rows ({r['config']} domain, {d['partitions']} Parquet files, "
          f"{r['parquet_mb']:.0f} MB; {'built in %.0f s' % r['build_s'] if r['build_s'] else 'cached'})")
    print(f"machine: {m['cpus']} CPUs, load average {m['load_average_1min']:.1f} at start; "
          f"LocalCluster {d['workers']} worker processes x 1 thread (started in {d['cluster_start_s']:.1f} s, not counted)")
    print(f"passes over the rows: {d['passes']} dask.compute over the partitions; "
          f"{d['partition_tasks']} partition tasks = {d['passes_by_tasks']:g} per partition")
    print(f"time: counting {d['count_s']:.1f} s + AIM on the counts {d['aim_on_counts_s']:.1f} s "
          f"= {d['total_s']:.1f} s ({d['release']['rounds']} rounds, model {d['model_mb']:.2f} MB)")
    print(f"CPU: workers {' + '.join('%.0f' % c for c in d['worker_cpu_s'])} s "
          f"({sum(d['worker_cpu_s']) / d['partitions']:.2f} s per partition), client process {d['client_cpu_s']:.0f} s")
    print(f"memory: peak RSS per worker {d['worker_peak_rss_mb']:.0f} MB (sampled; reaped max "
          f"{d['reaped_worker_peak_rss_mb']:.0f} MB), workers' sum {d['workers_peak_sum_mb']:.0f} MB "
          f"(idle {d['workers_start_sum_mb']:.0f} MB); client process {d['client_peak_rss_mb']:.0f} MB")
    if "memory" in r:
        same = r["memory"]["release"] == d["release"]
        print(f"in memory (marginals.Dataset): {r['memory']['total_s']:.1f} s; releases identical: {'yes' if same else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000, help="rows of the resampled table (default 100M)")
    parser.add_argument("--config", default="w35", help="benchmarks.aim_scale configuration to resample (default w35)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling Generator")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (1 thread each)")
    parser.add_argument("--check", action="store_true", help="also run AIM in memory and compare the releases")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--build-only", action="store_true", help="build the cached table and stop")
    parser.add_argument("--part", choices=["dask", "memory"], help=argparse.SUPPRESS)  # internal: one run
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.part:
        run = part_dask(Path(args.folder), args.eps, args.workers) if args.part == "dask" else part_memory(
            Path(args.folder), args.eps)
        print(json.dumps(run))
        return 0
    log = (lambda msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    folder, build_s = build_parquet(args.rows, args.seed, args.config, log)
    if args.build_only:
        return 0
    report = {"config": args.config, "eps": args.eps, "build_s": build_s, "machine": machine_info(),
              "parquet_mb": sum(f.stat().st_size for f in folder.glob("*.parquet")) / 2**20}  # fmt: skip
    log("AIM on the Dask table ...")
    report["dask"] = _run_part("dask", folder, args.eps, args.workers)
    if args.check:
        log("AIM in memory ...")
        report["memory"] = _run_part("memory", folder, args.eps, args.workers)
    print(json.dumps(report) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
