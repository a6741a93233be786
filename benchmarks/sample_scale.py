"""Sampling 1M synthetic rows from the final model of AIM on a 100-attribute table.

The model: AIM at eps = 1 (delta 1e-9, all pairs, ``insecure_seed=0``, default hyperparameters)
on the 100-attribute, 1M-row table of `benchmarks.aim_scale` (``w100`` when that configuration
exists, else its random Bayesian-network generator at 100 x 1M, seed 0). The run takes minutes, so
its release is cached under ``benchmarks/cache/`` (git-ignored) and reused.

Printed: the model (attributes, cliques, MB), the time to sample 1M rows (best and median of
``--repeats`` quiet runs, and once beside `benchmarks.harness.busy_process`), the process's peak
RSS, and the comparison with mbi's published figure (99.5 s + 11.6 s JIT for 1M rows on an
80-attribute census domain, CPU).

Every measurement runs in a fresh interpreter whose imports of the project come from the checkout
given (``--code DIR ...``, default this one: e.g. ``git archive`` of an older commit for a before
figure in the same run); the model is read from the cached release file, so its beliefs are
calibrated once (reported apart: mbi's figure is for sampling alone), then every timed call
samples from the calibrated model. A digest of the rows shows whether two checkouts give the
same rows for the seed.

Usage: python -m benchmarks.sample_scale [--rows 1000000] [--repeats 3] [--code DIR ...] [--no-busy] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

from benchmarks.harness import CACHE, ROOT, busy_process, peak_rss_mb, run_json

MBI_SECONDS, MBI_JIT_SECONDS, MBI_ATTRS = 99.5, 11.6, 80  # mbi's benchmark: 1M rows, 80-attribute census domain


def release_path() -> Path:
    """The cached release: named for the table it was fitted on (``w100``, or the plain generator)."""
    from benchmarks import aim_scale

    return CACHE / ("sample-w100-eps1-s0.npz" if "w100" in aim_scale.CONFIGS else "sample-bn100-eps1-s0.npz")


def load_w100():
    """The 100-attribute, 1M-row table (``w100`` of `benchmarks.aim_scale`, or its generator) as a Dataset."""
    from benchmarks import aim_scale

    if "w100" in aim_scale.CONFIGS:
        return aim_scale.load_table("w100", 0)
    import numpy as np

    from marginals.dataset import Dataset
    from marginals.domain import Domain

    codes, sizes = aim_scale.generate_table(100, 1_000_000, 0)
    domain = Domain(tuple(f"x{j:02d}" for j in range(100)), tuple(sizes))
    return Dataset.from_codes([c.astype(np.uint16) for c in codes], domain)


def build_release(path: Path):
    """AIM eps = 1 on the w100 table (cached at ``path``); returns the `aim.Release`."""
    from aim import AIM, Release, all_k_way

    if path.exists():
        return Release.load(path)
    data = load_w100()
    warnings.simplefilter("ignore")  # a seeded run is a benchmark (InsecureSeedWarning)
    start = time.perf_counter()
    release = AIM(1.0, 1e-9, workload=all_k_way(data.domain, 2), insecure_seed=0).run(data)
    print(f"AIM eps=1 on {len(data.domain.attrs)} attributes x {len(data):,} rows: "
          f"{time.perf_counter() - start:.1f} s, {len(release.model.cliques)} cliques", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    release.save(path)
    return release


def _digest(frame) -> str:
    """A short digest of the rows (values and column order)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256(",".join(frame.columns).encode())
    for name in frame.columns:
        h.update(np.ascontiguousarray(frame[name].to_numpy()).tobytes())
    return h.hexdigest()[:16]


def _cpu_seconds() -> float:
    """CPU time of this process so far, all threads (user + system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_job(job: dict) -> dict:
    """Time the sampling of ``job["rows"]`` rows in this (fresh) interpreter, on the checkout first on its PYTHONPATH."""
    import pgm.sampling
    from aim import Release

    if not pgm.sampling.__file__.startswith(job["code"]):
        raise RuntimeError(f"pgm.sampling came from {pgm.sampling.__file__}, not from {job['code']}")
    warnings.simplefilter("ignore")  # the cached release is seeded (NotPrivateWarning)
    model = Release.load(job["release"]).model
    start = time.perf_counter()
    model.beliefs  # calibration, once per loaded model
    calibration = time.perf_counter() - start
    quiet, cpu, digests = [], [], set()
    for _ in range(job["repeats"]):
        start, start_cpu = time.perf_counter(), _cpu_seconds()
        rows = model.synthetic_data(job["rows"], job["seed"])
        quiet.append(time.perf_counter() - start)
        cpu.append(_cpu_seconds() - start_cpu)
        digests.add(_digest(rows))
        del rows
    busy_seconds = None
    if job["busy"]:
        busy = busy_process()
        try:
            time.sleep(0.5)  # let it start spinning
            start = time.perf_counter()
            model.synthetic_data(job["rows"], job["seed"])
            busy_seconds = time.perf_counter() - start
        finally:
            busy.kill()
            busy.wait()
    return {"attrs": len(model.domain.attrs), "cliques": len(model.cliques), "nodes": len(model.tree.nodes),
            "model_mb": model.size_mb, "calibration": calibration, "quiet": quiet, "cpu": cpu, "busy": busy_seconds,
            "digests": sorted(digests), "peak_rss_mb": peak_rss_mb(), "load": os.getloadavg()[0]}


def in_checkout(job: dict) -> dict:
    """`run_job` in a fresh interpreter importing the project from ``job["code"]`` first (run as a
    script: ``-m`` would put the working directory ahead of it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([job["code"], str(ROOT)]))
    return run_json([sys.executable, __file__, "--job", json.dumps(job)], env=env)


def _report(results: list[dict], codes: list[str], rows: int) -> None:
    first = results[0]
    print(f"model: {first['attrs']} attributes, {first['cliques']} cliques, "
          f"{first['nodes']} junction-tree nodes, {first['model_mb']:.1f} MB")
    print(f"sampling {rows:,} rows: seconds (model calibrated first, once), CPU seconds of the best run (all threads), "
          f"machine load at the end")
    head = (f"{'code':<36}{'calib.':>8}{'best':>8}{'median':>8}{'CPU':>7}{'busy':>8}{'RSS MB':>8}{'rows digest':>18}"
            f"{'load':>6}")
    print(head)
    print("-" * len(head))
    for code, r in zip(codes, results):
        busy = f"{r['busy']:>8.2f}" if r["busy"] is not None else f"{'-':>8}"
        best = min(range(len(r["quiet"])), key=r["quiet"].__getitem__)
        print(f"{code[-35:]:<36}{r['calibration']:>8.2f}{r['quiet'][best]:>8.2f}{statistics.median(r['quiet']):>8.2f}"
              f"{r['cpu'][best]:>7.2f}{busy}{r['peak_rss_mb']:>8.0f}{','.join(r['digests']):>18}{r['load']:>6.1f}")
    best = min(results[-1]["quiet"])
    per_attr = MBI_SECONDS / MBI_ATTRS / (best / first["attrs"])
    print(f"mbi (published, CPU): {MBI_SECONDS} s + {MBI_JIT_SECONDS} s JIT for 1M rows on {MBI_ATTRS} attributes; "
          f"last code above: {MBI_SECONDS / best:.0f}x less time on {first['attrs']} attributes "
          f"({per_attr:.0f}x per attribute)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--release", type=Path, default=None, help="cached release (default: `release_path`, built on first use)")
    parser.add_argument("--code", nargs="+", default=[str(ROOT)], help="project checkout(s) to time (default: this one)")
    parser.add_argument("--no-busy", action="store_true", help="skip the run beside a busy process")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--job", type=json.loads, help=argparse.SUPPRESS)  # internal: one checkout, JSON on stdout
    args = parser.parse_args(argv)
    if args.job:
        print(json.dumps(run_job(args.job)))
        return 0
    args.release = args.release or release_path()
    build_release(args.release)
    results = []
    for code in args.code:
        job = {"code": str(Path(code).resolve()), "release": str(args.release.resolve()), "rows": args.rows,
               "repeats": args.repeats, "seed": args.seed, "busy": not args.no_busy}
        results.append(in_checkout(job))
    if args.json:
        print(json.dumps({"runs": results, "codes": args.code}, indent=1))
    else:
        _report(results, args.code, args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
