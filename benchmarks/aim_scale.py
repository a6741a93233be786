"""AIM on wide tables: time, rounds, model size, peak RSS, workload error and where the time goes.

Tables are generated from a seed by sampling a random sparse Bayesian network (each attribute has
0-2 parents among the earlier ones, domain sizes log-uniform in [2, 200], conditional tables drawn
from a Dirichlet with small concentration, so the data has real pairwise and higher structure).
They are cached as ``.npz`` under ``benchmarks/cache/`` (git-ignored) and never committed.

Configurations (``--configs``): ``w20`` (20 attributes, 500k rows), ``w35`` (35, 200k), ``w50``
(50, 200k), each with the all-pairs workload, and ``w20-3way`` (20 attributes, all triples with at
most 10,000 cells); each at every ``--eps``. Every run is a fresh interpreter (its own peak RSS)
started with ``PYTHONPATH`` = the checkout to run. The time shares come from wrapping, in that
process, the public functions that ``aim.mechanism`` calls by module name: the size filter
(``filter_candidates``), the candidate scoring (``Model.marginals``, and ``score_candidates`` when
present) and the estimation (``estimate``); a part the checkout lacks is reported as 0%.

``--code DIR ...`` runs other checkouts of the project (e.g. ``git archive`` of an older commit) on
the same tables, for before/after ratios in one run.

``adult`` and ``adult-3way`` run the bundled adult table through the same harness.

Usage: python -m benchmarks.aim_scale [--configs w35 w50 adult] [--eps 1 10] [--seeds 0] [--code DIR ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.harness import CACHE, ROOT, busy_process, peak_rss_mb, run_json

CONFIGS = {
    "w20": {"attrs": 20, "rows": 500_000, "k": 2},
    "w35": {"attrs": 35, "rows": 200_000, "k": 2},
    "w50": {"attrs": 50, "rows": 200_000, "k": 2},
    "w20-3way": {"attrs": 20, "rows": 500_000, "k": 3},
    "adult": {"bundled": "adult", "k": 2},  # the bundled adult table, all pairs / all triples
    "adult-3way": {"bundled": "adult", "k": 3},
    "acs-employment": {"bundled": "acs-employment", "k": 2},
    "acs-income-lin": {"bundled": "acs-income-lin", "k": 2},
}


def generate_table(attrs: int, rows: int, seed: int):
    """Codes (attrs x rows, uint8/uint16) and domain sizes of a random sparse Bayesian network sample."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(2), np.log(200), attrs)).round().astype(int).clip(2, 200)
    codes = np.zeros((attrs, rows), dtype=np.int64)
    for j in range(attrs):
        k = int(rng.integers(0, 3)) if j > 0 else 0
        parents = sorted(rng.choice(j, size=min(k, j), replace=False)) if j > 0 else []
        # parent configurations are hashed into at most 64 "types" so conditional tables stay small
        config = np.zeros(rows, dtype=np.int64)
        for p in parents:
            config = config * int(sizes[p]) + codes[p]
        types = int(min(64, np.prod([sizes[p] for p in parents]) if parents else 1))
        mixer = rng.permutation(max(types, 1) * 997) % max(types, 1)
        config = mixer[config % mixer.size] if parents else config
        concentration = rng.uniform(0.05, 0.5)
        cpt = rng.dirichlet(np.full(int(sizes[j]), concentration), size=types)
        cdf = np.cumsum(cpt, axis=1)
        cdf[:, -1] = 1.0
        flat = (cdf + np.arange(types)[:, None]).ravel()  # type t's cdf shifted by t: one searchsorted
        draw = np.searchsorted(flat, config + rng.random(rows), side="right")
        codes[j] = np.minimum(draw - config * int(sizes[j]), sizes[j] - 1)
    return codes, [int(s) for s in sizes]


def load_table(name: str, seed: int):
    """The cached table of configuration ``name`` (generated on first use) as a marginals.Dataset."""
    import numpy as np

    from marginals.dataset import Dataset
    from marginals.domain import Domain

    spec = CONFIGS[name]
    if "bundled" in spec:
        from benchmarks.data import load_bundled

        return load_bundled(spec["bundled"])
    path = CACHE / f"bn-a{spec['attrs']}-n{spec['rows']}-s{seed}.npz"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        codes, sizes = generate_table(spec["attrs"], spec["rows"], seed)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, codes=codes.astype(np.uint16), sizes=np.array(sizes))
        os.replace(tmp, path)
    stored = np.load(path)
    domain = Domain(tuple(f"x{j:02d}" for j in range(spec["attrs"])), tuple(int(s) for s in stored["sizes"]))
    return Dataset.from_codes(list(stored["codes"]), domain)


class _Timer:
    """Wall time spent inside wrapped callables, per part (re-entrant calls counted once)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.active = 0

    def wrap(self, part: str, func):
        def wrapped(*args, **kwargs):
            if self.active:
                return func(*args, **kwargs)
            self.active += 1
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.active -= 1
                self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - start

        return wrapped


def instrument(timer: _Timer) -> None:
    """Wrap the functions AIM calls through module attributes, in the checkout being run."""
    import aim.mechanism as mech
    import pgm.model

    pgm.model.Model.marginals = timer.wrap("selection", pgm.model.Model.marginals)
    for name, part in (("filter_candidates", "filter"), ("score_candidates", "selection"), ("estimate", "estimation")):
        if hasattr(mech, name):
            setattr(mech, name, timer.wrap(part, getattr(mech, name)))


def run_one(job: dict) -> dict:
    """One AIM run in this (fresh) interpreter, on the checkout first on its PYTHONPATH."""
    import inspect
    import warnings

    from aim import AIM, all_k_way, workload_error

    data = load_table(job["config"], job["data_seed"])
    workload = all_k_way(data.domain, CONFIGS[job["config"]]["k"])
    timer = _Timer()
    instrument(timer)
    start = time.perf_counter()
    warnings.simplefilter("ignore")  # seeded runs are benchmarks by definition (InsecureSeedWarning)
    # older checkouts (--code) name the test-only seed `seed` in AIM's signature
    seed_arg = "seed" if "seed" in inspect.signature(AIM).parameters else "insecure_seed"
    release = AIM(job["epsilon"], 1e-9, workload=workload, max_model_size=job["max_model_size"],
                  **{seed_arg: job["seed"]}).run(data)  # fmt: skip
    seconds = time.perf_counter() - start
    shares = {part: s / seconds for part, s in timer.seconds.items()}  # before the error's own model queries
    return {
        **job,
        "attrs": len(data.domain),
        "rows": len(data),
        "candidates": release.rounds[0]["candidates"] if release.rounds else 0,
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
        "rounds": len(release.rounds),
        "model_size_mb": release.model.size_mb,
        "error_model": workload_error(data, release.model, all_k_way(data.domain, 2)),
        "cliques": [r["clique"] for r in release.rounds],
        "shares": shares,
        "threads": _pgm_threads(),
    }


def _pgm_threads() -> int:
    """Threads the checkout's belief propagation uses for large tables (1 before `pgm.kernels.threads`)."""
    import pgm.inference

    threads = getattr(pgm.inference, "threads", None)  # the checkout's own, not an installed copy
    return 1 if threads is None else threads.thread_count()


def in_checkout(job: dict) -> dict:
    """`run_one` in a fresh interpreter whose imports of the project come from ``job["code"]`` first
    (this benchmark package from the repository this file belongs to)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([job["code"], str(ROOT)]))
    return run_json([sys.executable, __file__, "--job", json.dumps(job)], env=env)


def _run_all(jobs: list[dict], workers: int, results: list[dict]) -> None:
    """Run ``jobs`` (each in its own interpreter, ``workers`` at a time), appending to ``results``."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # each thread waits on one interpreter
        for res in pool.map(in_checkout, jobs):
            results.append(res)
            print(f"  done {res['config']} eps={res['epsilon']:g} seed={res['seed']}: {res['seconds']:.1f} s", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["w20", "w35", "w50", "w20-3way"], choices=list(CONFIGS))
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="AIM seeds")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the generated tables")
    parser.add_argument("--max-model-size", type=float, default=80.0)
    parser.add_argument("--code", nargs="+", default=[str(ROOT)],
                        help="project checkout(s) to run (default: this one); several are interleaved job by job")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="DP_MARGINALS_THREADS for every run (default: the environment's, else all usable cores)")
    parser.add_argument("--busy", action="store_true", help="run one busy process (a spinning core) beside every run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--job", type=json.loads, help=argparse.SUPPRESS)  # internal: one run, JSON on stdout
    args = parser.parse_args(argv)
    if args.job:
        print(json.dumps(run_one(args.job)))
        return 0
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be >= 1")
        os.environ["DP_MARGINALS_THREADS"] = str(args.threads)  # inherited by every run's interpreter
    for name in args.configs:  # generate (and cache) the tables once, before the timed runs
        load_table(name, args.data_seed)
    jobs = [
        {"config": c, "epsilon": e, "seed": s, "data_seed": args.data_seed, "max_model_size": args.max_model_size,
         "code": str(Path(code).resolve()), "code_arg": code}
        for c in args.configs for e in args.eps for s in args.seeds for code in args.code
    ]
    results = []
    busy = busy_process() if args.busy else None
    try:
        _run_all(jobs, args.jobs, results)
    finally:
        if busy is not None:
            busy.kill()
    if args.json:
        print(json.dumps({"runs": results}, indent=1))
        return 0
    print(f"AIM on generated Bayesian-network tables (delta 1e-9, max_model_size {args.max_model_size:g} MB)")
    for k, code in enumerate(args.code):
        print(f"  code {k}: {code}")
    print(f"  belief-propagation threads per run: {sorted({r.get('threads', 1) for r in results})}")
    head = (f"{'code':>4} {'table':<10}{'attrs':>6}{'rows':>9}{'cand':>6}{'eps':>5}{'seed':>5}{'seconds':>9}{'rounds':>7}"
            f"{'model MB':>9}{'RSS MB':>8}{'error':>8}{'select':>8}{'filter':>8}{'estim':>8}")
    print(head)
    print("-" * len(head))
    for r in results:
        sh = r["shares"]
        print(f"{args.code.index(r['code_arg']) if r.get('code_arg') in args.code else 0:>4} {r['config']:<10}{r['attrs']:>6}{r['rows']:>9,}{r['candidates']:>6}{r['epsilon']:>5g}{r['seed']:>5}"
              f"{r['seconds']:>9.1f}{r['rounds']:>7}{r['model_size_mb']:>9.2f}{r['peak_rss_mb']:>8.0f}"
              f"{r['error_model']:>8.4f}{100 * sh.get('selection', 0):>7.0f}%{100 * sh.get('filter', 0):>7.0f}%"
              f"{100 * sh.get('estimation', 0):>7.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
