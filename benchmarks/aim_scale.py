"""AIM on wide tables: time, rounds, model size, peak RSS, workload error and where the time goes.

The wide configurations are census-like tables generated from a seed by `benchmarks.census_like`:
groups of 3-6 strongly dependent attributes (a ~180-level detailed code and its near-functional
coarse code, money amounts with a large zero mass that move together, two ~100-level attributes
that follow each other, plus attributes depending on them), weaker links between the groups through
hidden group types, and per 35 attributes one ~180-level, two ~100-level, eight 20-30-level and
the rest 2-15-level attributes, like a census extract. ``w20`` (20 attributes, 500k rows), ``w35``
(35, 170k, the shape of the real extract), ``w50`` (50, 200k) and ``w100`` (100, 1M) use the
all-pairs workload (AIM's default: pairs of at most 10,000 cells); ``w20-3way`` all triples of at
most 10,000 cells. ``bn35`` (35 attributes, 200k rows) is the earlier, much easier generator, kept
so older numbers stay comparable: a random sparse Bayesian network (0-2 parents per attribute,
domains log-uniform in [2, 200], Dirichlet conditional tables). ``adult``, ``adult-3way``,
``acs-employment`` and ``acs-income-lin`` run the bundled tables. Generated tables are cached as
``.npz`` under ``benchmarks/cache/`` (git-ignored; census-like and Bayesian-network tables under
different names) and never committed.

Every run (each ``--eps`` x ``--seeds`` x ``--repeat`` x checkout) is a fresh interpreter (its own
peak RSS) with the user's default BLAS threads, started with ``PYTHONPATH`` = the checkout to run;
``--busy`` keeps one busy process beside every run. The time shares come from wrapping, in that
process, the public functions that ``aim.mechanism`` calls by module name: the size filter
(``filter_candidates``), the candidate scoring (``Model.marginals``, and ``score_candidates`` when
present) and the estimation (``estimate``); a part the checkout lacks is reported as 0%.

``--code DIR ...`` runs other checkouts of the project (e.g. ``git archive`` of an older commit,
with or without its own ``benchmarks/``) on the same tables, interleaved job by job; with two or
more, a ratio line per configuration and epsilon compares each checkout with the first (median
time, mean workload error). The table and the JSON of every run are written to
``benchmarks/results/aim_scale/<label>.txt`` and ``.json``.

Usage: python -m benchmarks.aim_scale [--configs w35 w100 adult] [--eps 1 10] [--seeds 0] [--repeat 3]
       [--code DIR ...] [--busy] [--label NAME] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.harness import CACHE, RESULTS, ROOT, busy_process, machine_info, peak_rss_mb, run_json, write_json, write_text

OUT = RESULTS / "aim_scale"
CONFIGS = {
    "w20": {"attrs": 20, "rows": 500_000, "k": 2},
    "w35": {"attrs": 35, "rows": 170_000, "k": 2},
    "w50": {"attrs": 50, "rows": 200_000, "k": 2},
    "w100": {"attrs": 100, "rows": 1_000_000, "k": 2},
    "w20-3way": {"attrs": 20, "rows": 500_000, "k": 3},
    "bn35": {"attrs": 35, "rows": 200_000, "k": 2, "generator": "bn"},  # the earlier generator
    "adult": {"bundled": "adult", "k": 2},  # the bundled adult table, all pairs / all triples
    "adult-3way": {"bundled": "adult", "k": 3},
    "acs-employment": {"bundled": "acs-employment", "k": 2},
    "acs-income-lin": {"bundled": "acs-income-lin", "k": 2},
}
DEFAULT_CONFIGS = ["adult", "acs-employment", "acs-income-lin", "w35"]


def generate_table(attrs: int, rows: int, seed: int):
    """Codes (attrs x rows, uint16) and domain sizes of the seeded census-like table (`benchmarks.census_like`)."""
    from benchmarks.census_like import generate

    return generate(attrs, rows, seed)


def generate_bn_table(attrs: int, rows: int, seed: int):
    """Codes (attrs x rows, int64) and domain sizes of a random sparse Bayesian network sample (``bn35``)."""
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


def table_path(name: str, seed: int) -> Path:
    """The cache file of a generated configuration (the generator is part of the name)."""
    spec = CONFIGS[name]
    prefix = "bn" if spec.get("generator") == "bn" else "census1"  # bump census1 when the generator changes
    return CACHE / f"{prefix}-a{spec['attrs']}-n{spec['rows']}-s{seed}.npz"


def load_table(name: str, seed: int):
    """The cached table of configuration ``name`` (generated on first use) as a marginals.Dataset."""
    import numpy as np

    from marginals.dataset import Dataset
    from marginals.domain import Domain

    spec = CONFIGS[name]
    if "bundled" in spec:
        from benchmarks.data import load_bundled

        return load_bundled(spec["bundled"])
    path = table_path(name, seed)
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        generator = generate_bn_table if spec.get("generator") == "bn" else generate_table
        codes, sizes = generator(spec["attrs"], spec["rows"], seed)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
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


class _StampedLog:
    """A text stream writing each line to a file after the seconds since ``start`` and the peak RSS
    (how far a long run got, even if it is stopped)."""

    def __init__(self, path: str, start: float):
        self.file, self.start = open(path, "a", buffering=1), start

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.file.write(f"{time.perf_counter() - self.start:8.1f} s {peak_rss_mb():7.0f} MB  {line}\n")
        return len(text)

    def flush(self) -> None:
        self.file.flush()

    def isatty(self) -> bool:
        return False


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
    if job.get("progress_log"):  # AIM's own per-round lines, stamped (a benchmark may show times)
        sys.stderr = _StampedLog(job["progress_log"], start)
    warnings.simplefilter("ignore")  # seeded runs are benchmarks by definition (InsecureSeedWarning)
    # older checkouts (--code) name the test-only seed `seed` in AIM's signature
    seed_arg = "seed" if "seed" in inspect.signature(AIM).parameters else "insecure_seed"
    release = AIM(job["epsilon"], 1e-9, workload=workload, max_model_size=job["max_model_size"],
                  **{seed_arg: job["seed"]}, **({"progress": True} if job.get("progress_log") else {})).run(data)  # fmt: skip
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
            print(f"  done {res['config']} eps={res['epsilon']:g} seed={res['seed']} code={res['code_index']}: "
                  f"{res['seconds']:.1f} s, {res['rounds']} rounds, {res['model_size_mb']:.1f} MB", file=sys.stderr)


def format_runs(results: list[dict]) -> list[str]:
    """One line per run: table, size, rounds, model MB, peak RSS, error and time shares."""
    head = (f"{'code':>4} {'table':<15}{'attrs':>6}{'rows':>10}{'cand':>6}{'eps':>5}{'seed':>5}{'seconds':>9}{'rounds':>7}"
            f"{'model MB':>9}{'RSS MB':>8}{'error':>8}{'select':>8}{'filter':>8}{'estim':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        sh = r["shares"]
        lines.append(
            f"{r['code_index']:>4} {r['config']:<15}{r['attrs']:>6}{r['rows']:>10,}{r['candidates']:>6}{r['epsilon']:>5g}"
            f"{r['seed']:>5}{r['seconds']:>9.1f}{r['rounds']:>7}{r['model_size_mb']:>9.2f}{r['peak_rss_mb']:>8.0f}"
            f"{r['error_model']:>8.4f}{100 * sh.get('selection', 0):>7.0f}%{100 * sh.get('filter', 0):>7.0f}%"
            f"{100 * sh.get('estimation', 0):>7.0f}%")  # fmt: skip
    return lines


def format_summary(results: list[dict], codes: int) -> list[str]:
    """Per configuration, epsilon and checkout: best and median time, mean rounds, model MB and error;
    with several checkouts, each one's median time and mean error as a ratio to the first's."""
    import statistics

    lines = []
    for config, eps in dict.fromkeys((r["config"], r["epsilon"]) for r in results):
        per_code = {}
        for k in range(codes):
            runs = [r for r in results if (r["config"], r["epsilon"], r["code_index"]) == (config, eps, k)]
            if runs:
                seconds = [r["seconds"] for r in runs]
                per_code[k] = (statistics.median(seconds), statistics.fmean(r["error_model"] for r in runs))
                lines.append(f"  {config} eps={eps:g} code {k}: {len(runs)} runs, best {min(seconds):.1f} s, median "
                             f"{per_code[k][0]:.1f} s, rounds {statistics.fmean(r['rounds'] for r in runs):.0f}, model "
                             f"{statistics.fmean(r['model_size_mb'] for r in runs):.1f} MB, error {per_code[k][1]:.4f}")
        for k in sorted(per_code)[1:] if 0 in per_code else []:
            (t0, e0), (t1, e1) = per_code[0], per_code[k]
            lines.append(f"  ratio {config} eps={eps:g} code {k} / code 0: time x{t1 / t0:.2f} ({t0:.1f} s -> {t1:.1f} s), "
                         f"error x{e1 / e0:.3f} ({e0:.4f} -> {e1:.4f})")
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS, choices=list(CONFIGS))
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="AIM seeds")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every (table, eps, seed, checkout)")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the generated tables")
    parser.add_argument("--max-model-size", type=float, default=80.0)
    parser.add_argument("--code", nargs="+", default=[str(ROOT)],
                        help="project checkout(s) to run (default: this one); several are interleaved job by job")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="DP_MARGINALS_THREADS for every run (default: the environment's, else all usable cores)")
    parser.add_argument("--busy", action="store_true", help="run one busy process (a spinning core) beside every run")
    parser.add_argument("--progress-log", default=None,
                        help="append AIM's per-round lines of every run, with elapsed seconds and peak RSS, to this file")
    parser.add_argument("--label", default="latest", help="results file name under benchmarks/results/aim_scale/")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--job", type=json.loads, help=argparse.SUPPRESS)  # internal: one run, JSON on stdout
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
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
         "code": str(Path(code).resolve()), "code_arg": code, "code_index": k,
         "progress_log": args.progress_log and str(Path(args.progress_log).resolve())}
        for c in args.configs for e in args.eps for s in args.seeds for _ in range(args.repeat)
        for k, code in enumerate(args.code)
    ]  # fmt: skip
    results = []
    busy = busy_process() if args.busy else None
    started = machine_info()
    try:
        _run_all(jobs, args.jobs, results)
    finally:
        if busy is not None:
            busy.kill()
    lines = [f"AIM on {', '.join(args.configs)} (delta 1e-9, max_model_size {args.max_model_size:g} MB, "
             f"{'one busy process beside every run' if args.busy else 'no busy process'}, default BLAS threads)"]
    lines += [f"  code {k}: {code}" for k, code in enumerate(args.code)]
    lines.append(f"  load average (1 min) at the start {started['load_average_1min']:.2f}, at the end "
                 f"{machine_info()['load_average_1min']:.2f}; {started['cpus']} cpus")
    lines.append(f"  belief-propagation threads per run: {sorted({r.get('threads', 1) for r in results})}")
    lines += format_runs(results) + ["summary:"] + format_summary(results, len(args.code))
    report = {"args": {k: v for k, v in vars(args).items() if k != "job"}, "machine": started, "runs": results}
    write_json(OUT / f"{args.label}.json", report)
    write_text(OUT / f"{args.label}.txt", "\n".join(lines) + "\n")
    print(json.dumps(report, indent=1) if args.json else "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
