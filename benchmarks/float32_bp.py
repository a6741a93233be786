"""Float32 belief propagation: is its error below the noise, and what would it save?

    python -m benchmarks.float32_bp                      # adult eps 1 and 10, acs-employment eps 1
    python -m benchmarks.float32_bp --models adult:1 --no-busy

For the final model of seeded AIM runs (all 2-way marginals, delta 1e-9, ``insecure_seed=0``;
releases cached under ``benchmarks/cache/float32_bp/``, git-ignored) the model's potentials are
propagated by one plain implementation (`plain_belief_propagation`: the two-pass algorithm of
`pgm.reference`, on raw numpy arrays of one dtype, in log space with per-slice max shifts) in
float64, in float32, and in float32 with float64 accumulators for its sums (`VARIANTS`). Per model
it reports the absolute difference of every measured clique's marginal (counts) between float32
and float64 and against the engine (`Model.marginals`, float64), next to the noise scale sigma of
the measurements on that clique, and the time of one propagation per variant (best and median of
``--repeat``, quiet and beside one busy process), with the engine's for scale.

It also times the elementwise kernels the engine's large nodes run (broadcast product into a
buffer, exp, axis sums by einsum and by ndarray.sum, the sums also with float64 accumulators) on
a 6.6M-cell table in both dtypes, and measures the float32 accumulation error of long sums
(einsum and ndarray.sum) against float64. Results: ``benchmarks/results/float32_bp/`` (NAME.json,
NAME.md; ``summary.md`` reads them). The engine is not changed here: these numbers decide whether
it should get a float32 mode.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.harness import CACHE, RESULTS, busy_process, machine_info, write_json, write_text

MODELS = (("adult", 1.0), ("adult", 10.0), ("acs-employment", 1.0))
OUT = RESULTS / "float32_bp"
#: float32's error is "below the noise" when every measured clique's max error is under this share of sigma.
BELOW_NOISE = 0.01
#: the kernel table: attributes by increasing size, as the engine lays out a large node (6,566,400 cells).
KERNEL_SHAPE = (6, 16, 24, 30, 95)
#: the label suffix of a float32 sum with a float64 accumulator.
WIDE = ", float64 accumulator"
#: the propagations compared: name -> (cell dtype, accumulator of the sums; None: the cell dtype).
VARIANTS = {"float64": (np.float64, None), "float32": (np.float32, None), "float32_acc64": (np.float32, np.float64)}


# -- the plain propagation ------------------------------------------------------------------------


def _log_sum_out(table: np.ndarray, axes: tuple[int, ...], accumulator) -> np.ndarray:
    """log(sum(exp(table))) over ``axes`` (kept as size 1), shifted by each slice's own max; the
    sums accumulate in ``accumulator``, the result is in the table's dtype."""
    if not axes:
        return table
    peak = table.max(axis=axes, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0).astype(table.dtype)
    with np.errstate(divide="ignore"):
        sums = np.exp(table - peak).sum(axis=axes, keepdims=True, dtype=accumulator)
        return np.log(sums).astype(table.dtype) + peak


def plain_belief_propagation(tree, cliques: Sequence[Sequence[str]], log_potentials: Sequence[np.ndarray],
                             total: float, dtype=np.float64, accumulator=None) -> list[np.ndarray]:  # fmt: skip
    """Node counts (axes in node order, ``dtype`` throughout; sums accumulate in ``accumulator``,
    default ``dtype``) of the model with ``log_potentials`` on ``cliques``: the two-pass algorithm
    of `pgm.reference.belief_propagation` on raw arrays."""
    dtype = np.dtype(dtype).type
    accumulator = dtype if accumulator is None else np.dtype(accumulator).type
    sizes = dict(zip(tree.domain.attrs, tree.domain.shape))
    nodes = tree.nodes

    def spread(attrs: Sequence[str], onto: Sequence[str]) -> tuple[int, ...]:
        return tuple(sizes[a] if a in attrs else 1 for a in onto)

    node_logs = [np.zeros([sizes[a] for a in node], dtype=dtype) for node in nodes]
    for clique, values in zip(cliques, log_potentials):
        host = tree.containing(clique)[0]
        in_order = [a for a in nodes[host] if a in clique]  # nodes and their subsets: domain order
        table = np.transpose(values, [list(clique).index(a) for a in in_order]).astype(dtype)
        node_logs[host] += table.reshape(spread(clique, nodes[host]))
    inbox: list[dict[int, np.ndarray]] = [{} for _ in nodes]  # inbox[i][j]: j's message, shaped onto i

    def gathered(i: int, skip: int | None = None) -> np.ndarray:
        table = node_logs[i]
        for sender, message in inbox[i].items():
            if sender != skip:
                table = table + message
        return table

    def send(sender: int, receiver: int) -> None:
        shared = set(nodes[sender]) & set(nodes[receiver])
        axes = tuple(k for k, a in enumerate(nodes[sender]) if a not in shared)
        message = _log_sum_out(gathered(sender, skip=receiver), axes, accumulator)
        inbox[receiver][sender] = message.reshape(spread(shared, nodes[receiver]))

    for child, parent in tree.collect:
        send(child, parent)
    for parent, child in tree.distribute:
        send(parent, child)
    beliefs = []
    for i in range(len(nodes)):
        table = gathered(i)
        table = np.exp(table - table.max())
        beliefs.append(table * dtype(total / table.sum(dtype=accumulator)))
    return beliefs


def clique_marginals(tree, beliefs: Sequence[np.ndarray], cliques: Sequence[Sequence[str]],
                     accumulator=None) -> list[np.ndarray]:  # fmt: skip
    """Each clique's marginal (axes in clique order; summed in ``accumulator``, default the beliefs'
    dtype, and returned in the beliefs' dtype) from its smallest containing node."""
    out = []
    for clique in cliques:
        host = min(tree.containing(clique), key=lambda i: (beliefs[i].size, i))
        node = tree.nodes[host]
        summed = tuple(k for k, a in enumerate(node) if a not in clique)
        table = beliefs[host].sum(axis=summed, dtype=accumulator).astype(beliefs[host].dtype)
        kept = [a for a in node if a in clique]
        out.append(np.transpose(table, [kept.index(a) for a in clique]))
    return out


# -- releases and their errors --------------------------------------------------------------------


def seeded_release(name: str, epsilon: float, cache: Path = CACHE / "float32_bp"):
    """The seeded AIM release of the bundled table ``name`` at ``epsilon`` (cached; not private)."""
    from aim import AIM, Release, all_k_way
    from benchmarks.data import load_bundled

    path = cache / f"{name}-eps{epsilon:g}-seed0.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded: NotPrivateWarning
        if path.is_file():
            return Release.load(path), True
        data = load_bundled(name)
        release = AIM(epsilon, 1e-9, workload=all_k_way(data.domain, 2), insecure_seed=0).run(data)
    cache.mkdir(parents=True, exist_ok=True)
    release.save(path)
    return release, False


def _clique_sigmas(measurements) -> dict[tuple[str, ...], float]:
    """Per measured clique, the smallest sigma of its measurements (the most exact one: the strictest test)."""
    sigmas: dict[tuple[str, ...], float] = {}
    for m in measurements:
        sigmas[m.clique] = min(m.sigma, sigmas.get(m.clique, math.inf))
    return sigmas


def compare(tables: Sequence[np.ndarray], against: Sequence[np.ndarray], sigmas: Sequence[float],
            cliques: Sequence[Sequence[str]] | None = None) -> dict:  # fmt: skip
    """Max and mean absolute difference over every cell of every clique, and the largest per-clique
    max difference as a share of that clique's sigma (with that clique, if ``cliques`` are given)."""
    diffs = [np.abs(np.asarray(t, np.float64) - np.asarray(a, np.float64)) for t, a in zip(tables, against)]
    cells = np.concatenate([d.ravel() for d in diffs])
    ratios = [float(d.max()) / s for d, s in zip(diffs, sigmas)]
    worst = int(np.argmax(ratios))
    out = {"max_abs": float(cells.max()), "mean_abs": float(cells.mean()), "max_over_sigma": ratios[worst],
           "mean_over_sigma": float(np.mean([float(d.mean()) / s for d, s in zip(diffs, sigmas)]))}
    if cliques is not None:
        out.update(worst_clique=list(cliques[worst]), worst_sigma=float(sigmas[worst]),
                   worst_max_abs=float(diffs[worst].max()), worst_max_count=float(np.max(against[worst])))
    return out


def model_errors(release) -> dict:
    """Node count, cells, and the float32-vs-float64 and plain-vs-engine errors on the measured cliques."""
    model = release.model
    sigma_of = _clique_sigmas(release.measurements)
    measured = list(sigma_of)
    sigmas = [sigma_of[c] for c in measured]
    potentials = [f.values for f in model.potentials.values()]
    marginals = {}
    for variant, (dtype, accumulator) in VARIANTS.items():
        beliefs = plain_belief_propagation(model.tree, model.cliques, potentials, model.total, dtype, accumulator)
        marginals[variant] = clique_marginals(model.tree, beliefs, measured, accumulator)
    engine = model.marginals(measured)
    f32, f64 = marginals["float32"], marginals["float64"]
    return {
        "nodes": len(model.tree.nodes), "cells": int(model.tree.size_cells), "model_mb": round(model.size_mb, 3),
        "measured_cliques": len(measured), "rounds": len(release.rounds), "total": model.total,
        "sigma_min": min(sigmas), "sigma_median": float(np.median(sigmas)), "sigma_max": max(sigmas),
        "float32_vs_float64": compare(f32, f64, sigmas, measured),
        "float32_acc64_vs_float64": compare(marginals["float32_acc64"], f64, sigmas, measured),
        "float32_vs_engine": compare(f32, engine, sigmas),
        "float64_vs_engine": compare(f64, engine, sigmas),
    }  # fmt: skip


# -- timing ---------------------------------------------------------------------------------------


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The fastest and the median of ``repeat`` calls of ``fn()``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def propagation_times(release, repeat: int) -> dict:
    """Seconds of one plain propagation per variant (`VARIANTS`; potentials cast beforehand), and of
    one engine propagation (`TreeEngine.propagate`, float64, for scale), best of ``repeat``."""
    from pgm.inference import TreeEngine

    model, out = release.model, {}
    tree, cliques, total = model.tree, model.cliques, model.total
    for variant, (dtype, accumulator) in VARIANTS.items():
        cast = [f.values.astype(dtype) for f in model.potentials.values()]
        out[f"plain_{variant}_s"], out[f"plain_{variant}_median_s"] = best_of(
            lambda: plain_belief_propagation(tree, cliques, cast, total, dtype, accumulator), repeat)
    engine = TreeEngine(model.tree, model.cliques)
    potentials = [f.values for f in model.potentials.values()]
    out["engine_float64_s"], out["engine_float64_median_s"] = best_of(lambda: engine.propagate(potentials, model.total).beliefs(), repeat)
    out["speedup"] = out["plain_float64_s"] / out["plain_float32_s"]
    out["speedup_acc64"] = out["plain_float64_s"] / out["plain_float32_acc64_s"]
    return out


def _kernels(dtype, rng: np.random.Generator) -> dict[str, Callable[[], object]]:
    """The engine's large-node passes on a `KERNEL_SHAPE` table of ``dtype``."""
    n = len(KERNEL_SHAPE)

    def factor(axes: Sequence[int]) -> np.ndarray:
        shape = [KERNEL_SHAPE[k] if k in axes else 1 for k in range(n)]
        return np.exp(rng.normal(size=shape)).astype(dtype)

    factors = [factor((0, 1, 3)), factor((2, 3, 4)), factor((1, 4))]
    buffer = np.empty(KERNEL_SHAPE, dtype)
    np.multiply(factors[0], factors[1], out=buffer)
    table = buffer.copy()
    logs = np.log(table)

    def product() -> None:  # broadcast product of three factors into the node buffer
        np.multiply(factors[0], factors[1], out=buffer)
        np.multiply(buffer, factors[2], out=buffer)

    work = {"product into buffer": product, "exp in place": lambda: np.exp(logs, out=buffer)}
    letters = "abcde"
    for label, kept in (("keep leading (0,1)", (0, 1)), ("keep trailing (3,4)", (3, 4)), ("keep middle (2,3)", (2, 3))):
        summed = tuple(k for k in range(n) if k not in kept)
        spec = f"{letters}->{''.join(letters[k] for k in kept)}"
        work[f"einsum {label}"] = lambda spec=spec: np.einsum(spec, table)
        work[f"ndarray.sum {label}"] = lambda summed=summed: table.sum(axis=summed)
        if dtype == np.float32:  # float32 cells, float64 sums: the cure for long-sum rounding, at what cost?
            work[f"einsum {label}{WIDE}"] = lambda spec=spec: np.einsum(spec, table, dtype=np.float64)
            work[f"ndarray.sum {label}{WIDE}"] = lambda summed=summed: table.sum(axis=summed, dtype=np.float64)
    return work


def kernel_times(repeat: int) -> list[dict]:
    """Seconds (best and median of ``repeat``) of each large-node kernel in float64 and float32, and the
    speed-up of the best times."""
    rows: dict[str, dict] = {}
    for dtype in (np.float64, np.float32):
        for label, fn in _kernels(dtype, np.random.default_rng(0)).items():
            row = rows.setdefault(label, {"kernel": label})
            row[f"{np.dtype(dtype).name}_s"], row[f"{np.dtype(dtype).name}_median_s"] = best_of(fn, repeat)
    for label, row in rows.items():  # a float64-accumulator row is compared with its all-float64 kernel
        row["speedup"] = rows[label.removesuffix(WIDE)]["float64_s"] / row["float32_s"]
    return list(rows.values())


def accumulation_errors(cells: int = 1 << 22) -> list[dict]:
    """Relative error of float32 sums of ``cells`` positive values against the float64 sum of the same
    values: whole-table and long-axis sums, by einsum and by ndarray.sum."""
    rng = np.random.default_rng(1)
    values = np.exp(rng.normal(size=cells)).astype(np.float32)
    wide, tall = values.reshape(4, -1), values.reshape(-1, 4)  # long contiguous rows / a long strided axis
    cases = [
        ("einsum, all cells", lambda v: np.einsum("i->", v), values, lambda v: np.sum(v, dtype=np.float64)),
        ("ndarray.sum, all cells", lambda v: v.sum(), values, lambda v: np.sum(v, dtype=np.float64)),
        ("einsum, 4 rows of 1M (ij->i)", lambda v: np.einsum("ij->i", v), wide, lambda v: v.sum(axis=1, dtype=np.float64)),
        ("ndarray.sum, 4 rows of 1M (axis 1)", lambda v: v.sum(axis=1), wide, lambda v: v.sum(axis=1, dtype=np.float64)),
        ("einsum, 1M rows of 4 (ij->j)", lambda v: np.einsum("ij->j", v), tall, lambda v: v.sum(axis=0, dtype=np.float64)),
        ("ndarray.sum, 1M rows of 4 (axis 0)", lambda v: v.sum(axis=0), tall, lambda v: v.sum(axis=0, dtype=np.float64)),
    ]  # fmt: skip
    rows = []
    for label, fn, table, exact in cases:
        got, want = np.asarray(fn(table), np.float64), np.asarray(exact(table))
        rows.append({"sum": label, "cells": cells, "relative_error": float(np.max(np.abs(got - want) / want))})
    return rows


# -- the run, its table and files -----------------------------------------------------------------


def _timed_everything(releases: dict, repeat: int) -> tuple[dict, list[dict]]:
    """Propagation times per model and kernel times, in this machine state."""
    return {key: propagation_times(r, repeat) for key, r in releases.items()}, kernel_times(repeat)


def run(models: Sequence[tuple[str, float]], repeat: int, busy: bool) -> dict:
    """Errors, times (quiet and, if ``busy``, beside one busy process) and accumulation errors."""
    load_at_start = os.getloadavg()[0]
    releases, rows = {}, []
    for name, epsilon in models:
        key = f"{name} eps {epsilon:g}"
        releases[key], cached = seeded_release(name, epsilon)
        rows.append({"model": key, "release_cached": cached, **model_errors(releases[key])})
    quiet, loaded = _timed_everything(releases, repeat), ({}, None)
    if busy:
        process = busy_process()
        try:
            time.sleep(0.5)
            loaded = _timed_everything(releases, repeat)
        finally:
            process.kill()
            process.wait()
    for row in rows:
        row["quiet"], row["busy"] = quiet[0][row["model"]], loaded[0].get(row["model"])
        for variant in ("float32", "float32_acc64"):
            row[f"{variant}_below_noise"] = row[f"{variant}_vs_float64"]["max_over_sigma"] < BELOW_NOISE
    return {"machine": machine_info(), "load_at_start": load_at_start, "repeat": repeat,
            "below_noise_threshold": BELOW_NOISE, "models": rows, "kernel_shape": list(KERNEL_SHAPE),
            "kernels_quiet": quiet[1], "kernels_busy": loaded[1], "accumulation": accumulation_errors()}  # fmt: skip


def _error_lines(result: dict) -> list[str]:
    lines = ["| model | nodes | cells | sigma min / median | f32 vs f64 max (mean) | max err / sigma | worst clique "
             "(sigma, max count) | f32 vs engine max / sigma | f64 vs engine max / sigma | below noise | "
             "f32 + f64 sums: max (err / sigma) | below noise |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---|"]  # fmt: skip
    for r in result["models"]:
        e, w = r["float32_vs_float64"], r["float32_acc64_vs_float64"]
        lines.append(
            f"| {r['model']} | {r['nodes']} | {r['cells']:,} | {r['sigma_min']:.1f} / {r['sigma_median']:.1f} | "
            f"{e['max_abs']:.2e} ({e['mean_abs']:.1e}) | {e['max_over_sigma']:.1e} | "
            f"{','.join(e['worst_clique'])} ({e['worst_sigma']:.1f}, {e['worst_max_count']:.0f}) | "
            f"{r['float32_vs_engine']['max_over_sigma']:.1e} | {r['float64_vs_engine']['max_over_sigma']:.1e} | "
            f"{'yes' if r['float32_below_noise'] else 'NO'} | {w['max_abs']:.2e} ({w['max_over_sigma']:.1e}) | "
            f"{'yes' if r['float32_acc64_below_noise'] else 'NO'} |"
        )
    return lines


def _time_lines(result: dict) -> list[str]:
    lines = ["| model | state | plain f64 ms | plain f32 ms | speed-up | plain f32 + f64 sums ms | speed-up | "
             "engine f64 ms |", "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in result["models"]:
        for state in ("quiet", "busy"):
            t = r[state]
            if t is not None:
                ms = {k: f"{t[k + '_s'] * 1e3:.1f} ({t[k + '_median_s'] * 1e3:.1f})" for k in
                      ("plain_float64", "plain_float32", "plain_float32_acc64", "engine_float64")}  # fmt: skip
                lines.append(f"| {r['model']} | {state} | {ms['plain_float64']} | {ms['plain_float32']} | "
                             f"{t['speedup']:.2f}x | {ms['plain_float32_acc64']} | {t['speedup_acc64']:.2f}x | "
                             f"{ms['engine_float64']} |")  # fmt: skip
    return lines


def _kernel_lines(result: dict) -> list[str]:
    cells = math.prod(result["kernel_shape"])
    lines = [f"| kernel ({cells:,} cells) | state | f64 ms | f32 ms | speed-up |", "|---|---|---:|---:|---:|"]
    for state in ("quiet", "busy"):
        for k in result[f"kernels_{state}"] or []:
            f64 = f"{k['float64_s'] * 1e3:.1f} ({k['float64_median_s'] * 1e3:.1f})" if "float64_s" in k else "-"
            f32 = f"{k['float32_s'] * 1e3:.1f} ({k['float32_median_s'] * 1e3:.1f})"
            lines.append(f"| {k['kernel']} | {state} | {f64} | {f32} | {k['speedup']:.2f}x |")
    lines += ["", "| float32 sum of 4M cells | relative error vs float64 |", "|---|---:|"]
    lines += [f"| {a['sum']} | {a['relative_error']:.1e} |" for a in result["accumulation"]]
    return lines


def report(result: dict) -> str:
    """The markdown tables: errors against sigma, propagation times, kernel times, accumulation errors."""
    m = result["machine"]
    head = [f"times: best (median) of {result['repeat']}, speed-ups of the best; {m['cpus']} CPUs, 1-min load "
            f"{result['load_at_start']:.1f} at the start, {m['load_average_1min']:.1f} at the end; "
            f"numpy {m['numpy']}; below noise: max |f32 - f64| < {result['below_noise_threshold']:.0%} of sigma "
            "on every measured clique (sigma: the smallest of the clique's measurements)", ""]  # fmt: skip
    return "\n".join(head + _error_lines(result) + [""] + _time_lines(result) + [""] + _kernel_lines(result)) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=[f"{n}:{e:g}" for n, e in MODELS],
                   help="name:epsilon of bundled tables (default: adult:1 adult:10 acs-employment:1)")  # fmt: skip
    p.add_argument("--repeat", type=int, default=5, help="timings: best of this many (default 5)")
    p.add_argument("--no-busy", action="store_true", help="skip the timings beside a busy process")
    p.add_argument("--out", type=Path, default=OUT, help=f"results folder (default {OUT})")
    p.add_argument("--name", default="float32_bp", help="file names: NAME.json and NAME.md (default float32_bp)")
    args = p.parse_args(argv)
    models = [(m.rsplit(":", 1)[0], float(m.rsplit(":", 1)[1])) for m in args.models]
    result = run(models, args.repeat, not args.no_busy)
    text = report(result)
    print(text)
    write_json(args.out / f"{args.name}.json", result)
    write_text(args.out / f"{args.name}.md", text)


if __name__ == "__main__":
    main()
