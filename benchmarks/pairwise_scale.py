"""All pairwise marginals of 1M rows x 80 attributes: time against mbi's published 51.7 s.

mbi's benchmarks report 51.7 s (CPU) for all pairwise marginals of 1M rows on an 80-attribute
census domain. Here: the first 80 attributes of ``benchmarks.aim_scale.load_table("w100", 0)``
when that configuration exists, else a generated census-like table (seeded, cached under
``benchmarks/cache/``, git-ignored): 1M rows, domain sizes like a census extract (one attribute of
180 levels, two of about 100, eight of 20-30, the rest 2-15), each attribute a noisy function of
an earlier one so that the tables are far from uniform.

The 3,160 tables are counted by ``Dataset.marginals`` (one call, the user's defaults: all cores,
no BLAS pinning) in a fresh interpreter per checkout (``--code DIR ...`` adds other checkouts,
e.g. ``git archive`` of an older commit, for before/after in one run), ``--repeat`` times each;
best and median wall seconds (and CPU seconds, all threads) are reported with the load average, and every checkout's tables are compared
byte for byte (sha256 of all tables). Timings are reported, never asserted.

    python -m benchmarks.pairwise_scale [--code /tmp/before] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import CACHE, ROOT, machine_info, run_json

MBI_SECONDS = 51.7
ROWS, ATTRS = 1_000_000, 80


def census_like_sizes(rng: np.random.Generator, attrs: int) -> list[int]:
    """Domain sizes drawn like a census extract: 180, two ~100, eight 20-30, the rest 2-15 (shuffled)."""
    sizes = [180, int(rng.integers(95, 106)), int(rng.integers(95, 106))]
    sizes += [int(s) for s in rng.integers(20, 31, 8)] + [int(s) for s in rng.integers(2, 16, attrs - 11)]
    return [int(s) for s in rng.permutation(sizes)]


def generate(rows: int, attrs: int, seed: int) -> tuple[np.ndarray, list[int]]:
    """Codes (attrs x rows, uint8) of a chain of noisy functions: each attribute follows an earlier one."""
    rng = np.random.default_rng(seed)
    sizes = census_like_sizes(rng, attrs)
    codes = np.empty((attrs, rows), dtype=np.uint8)
    codes[0] = rng.integers(0, sizes[0], rows)
    for j in range(1, attrs):
        parent = codes[int(rng.integers(0, j))].astype(np.int64)
        noise = rng.random(rows) < rng.uniform(0.1, 0.6)  # this share of rows is independent of the parent
        follow = (parent * int(rng.integers(1, 8)) + rng.integers(0, 2, rows)) % sizes[j]
        codes[j] = np.where(noise, rng.integers(0, sizes[j], rows), follow)
    return codes, sizes


def table_path(seed: int) -> Path:
    return CACHE / f"pairwise-a{ATTRS}-n{ROWS}-s{seed}.npz"


def prepare(seed: int) -> tuple[Path, str]:
    """The cached table (w100's first 80 attributes if that configuration exists, else generated) and its source."""
    from benchmarks import aim_scale

    path = table_path(seed)
    source = "w100 (first 80 attributes)" if "w100" in aim_scale.CONFIGS else "generated census-like"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        if "w100" in aim_scale.CONFIGS:
            ds = aim_scale.load_table("w100", seed)
            attrs = ds.domain.attrs[:ATTRS]
            codes, sizes = np.stack([ds.column(a) for a in attrs]), [ds.domain[a] for a in attrs]
        else:
            codes, sizes = generate(ROWS, ATTRS, seed)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, codes=codes, sizes=np.array(sizes), source=np.array(source))
        os.replace(tmp, path)
    with np.load(path) as z:
        return path, str(z["source"])


def part(path: Path, repeat: int) -> dict:
    """In a fresh interpreter: load the table, count all pairs ``repeat`` times; seconds and a digest."""
    import itertools

    from marginals import Dataset, Domain

    with np.load(path) as z:
        codes, sizes = z["codes"], [int(s) for s in z["sizes"]]
    domain = Domain(tuple(f"x{j:02d}" for j in range(len(sizes))), tuple(sizes))
    ds = Dataset.from_codes(list(codes), domain)
    pairs = list(itertools.combinations(domain.attrs, 2))
    seconds, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        tables = ds.marginals(pairs)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    digest = hashlib.sha256()
    for t in tables:
        digest.update(str(t.dtype).encode() + str(t.shape).encode() + t.tobytes())
    return {"seconds": seconds, "cpu_seconds": cpu, "tables": len(tables), "rows": len(ds), "cells": int(sum(t.size for t in tables)),
            "sha256": digest.hexdigest(), "load_average_1min": os.getloadavg()[0]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", nargs="*", default=[], help="other checkouts to time on the same table")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # internal: the table's path
    args = parser.parse_args(argv)
    if args.part:
        print(json.dumps(part(Path(args.part), args.repeat)))
        return 0
    path, source = prepare(args.seed)
    report = {"machine": machine_info(), "source": source, "mbi_seconds": MBI_SECONDS, "runs": {}}
    for code in [str(ROOT)] + [str(Path(c).resolve()) for c in args.code]:
        env = {**os.environ, "PYTHONPATH": code}
        # this file run as a script: the other checkout need not have it, only its own marginals
        run = run_json([sys.executable, __file__, "--part", str(path), "--repeat", str(args.repeat)], env=env, cwd=code)
        report["runs"][code] = run
    if args.json:
        print(json.dumps(report))
        return 0
    m = report["machine"]
    print(f"all pairwise marginals, {ROWS:,} rows x {ATTRS} attributes ({source}); {m['cpus']} CPUs, "
          f"load average {m['load_average_1min']:.1f} at start; best / median of {args.repeat}")
    digests = {r["sha256"] for r in report["runs"].values()}
    for code, r in report["runs"].items():
        best, median = min(r["seconds"]), statistics.median(r["seconds"])
        print(f"  {code}: {r['tables']} tables, {r['cells']:,} cells: best {best:.2f} s, median {median:.2f} s "
              f"(mbi 51.7 s: {MBI_SECONDS / best:.0f}x; CPU best {min(r['cpu_seconds']):.2f} s), "
              f"load {r['load_average_1min']:.1f} at end")
    print(f"tables identical across checkouts: {'yes' if len(digests) == 1 else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
