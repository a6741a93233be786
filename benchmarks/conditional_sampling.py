"""Conditional sampling (`pgm.conditional`) on seeded AIM releases: time and accuracy.

    python -m benchmarks.conditional_sampling                 # adult and acs-employment, eps 1
    python -m benchmarks.conditional_sampling --rows 200000 --given-rows 20000 --repeat 1

Per data set, the release of AIM at eps 1 (delta 1e-9, default hyperparameters, ``insecure_seed=0``;
cached under ``benchmarks/cache/``, git-ignored) on the bundled train table, and:

- **dict evidence** (`DICT_EVIDENCE`, codes): the time to condition (one belief propagation per
  evidence attribute) and to sample ``--rows`` rows from the conditioned model, next to
  unconditional sampling of as many rows; accuracy: the total variation distance between every
  1- and 2-way marginal of the sampled rows and the conditioned model's exact one, and, for scale,
  the expected TV of an i.i.d. sample of that size (sum over cells of sqrt(2 p (1 - p) / (pi n)) / 2);
  the conditioned model's 1-way marginals are also checked against a second exact route (the
  unconditioned model's marginal over the attribute and the evidence, masked and renormalised);
- **DataFrame evidence**: ``--given-rows`` rows sampled from the model, every other column (in
  domain order, starting with the second) blanked and imputed; the time of each algorithm (the
  pinned elimination order, the per-row one of `pgm.row_evidence`, and the automatic choice),
  the distinct evidence rows, and the TV of the completed rows' 1- and 2-way marginals against the
  model's exact ones (given rows drawn from the model and completed from its conditional follow
  the model's joint). Then the same with 5% of the given cells blanked too (many patterns), and
  with only every third column given (automatic choice, one run).

Every timed call starts from a fresh copy of the model (calibrated beliefs shared, no cached
queries): best of ``--repeat``. Results: ``benchmarks/results/conditional_sampling/`` (results.json,
summary.md).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from benchmarks.harness import CACHE, ROOT, machine_info, write_json, write_text

OUT = ROOT / "benchmarks" / "results" / "conditional_sampling"
DICT_EVIDENCE = {
    "adult": {"sex": 0, "age": list(range(10, 16)), "income>50K": 1},
    "acs-employment": {"SEX": 1, "AGEP": list(range(30, 41)), "ESR": 1},
}


def load_release(name: str):
    """The cached seeded AIM release at eps 1 of a bundled table (built when absent)."""
    from aim import AIM, Release
    from benchmarks.data import load_bundled

    path = CACHE / f"conditional-{name}-eps1-s0.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded: not private (a benchmark)
        if path.is_file():
            return Release.load(path)
        release = AIM(1.0, 1e-9, insecure_seed=0).run(load_bundled(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    release.save(path)
    return release


def fresh(model):
    """A copy of ``model`` sharing its calibrated beliefs but no cached query."""
    from pgm import Model

    return Model(model.domain, model.cliques, [f.values for f in model.potentials.values()], model.total,
                 tree=model.tree, beliefs=model.beliefs)


def best_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def tv_table(rows: pd.DataFrame, model, subsets: list[tuple[str, ...]]) -> dict:
    """TV of the rows' marginals against the model's exact ones, and the i.i.d. expectation."""
    exact = model.marginals(subsets)
    n = len(rows)
    out = {}
    for k in (1, 2):
        tvs, iid = [], []
        for attrs, table in zip(subsets, exact):
            if len(attrs) != k:
                continue
            p = table.ravel() / table.sum()
            shape = table.shape
            flat = np.ravel_multi_index(tuple(rows[a].to_numpy(np.int64) for a in attrs), shape)
            q = np.bincount(flat, minlength=p.size) / n
            tvs.append(0.5 * np.abs(q - p).sum())
            iid.append(0.5 * np.sqrt(2 * p * (1 - p) / (math.pi * n)).sum())
        out[f"{k}-way"] = {"marginals": len(tvs), "mean_tv": float(np.mean(tvs)), "max_tv": float(np.max(tvs)),
                           "iid_mean_tv": float(np.mean(iid))}
    return out


def subsets_of(domain) -> list[tuple[str, ...]]:
    return [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))


def dict_part(release, evidence: dict, rows: int, repeat: int) -> dict:
    from pgm.conditional import code_weights, condition

    model = release.model
    weights = code_weights(model.domain, evidence)
    t_plain, _ = best_time(lambda: fresh(model).synthetic_data(rows, 0), repeat)
    t_cond, (conditioned, prob) = best_time(lambda: condition(fresh(model), weights), repeat)
    t_sample, sample = best_time(lambda: fresh(conditioned).synthetic_data(rows, 0), repeat)
    check = 0.0
    for a in model.domain.attrs:  # a second exact route to the conditional 1-way marginals
        attrs = tuple(dict.fromkeys((a,) + tuple(evidence)))
        joint = model.project(attrs).values
        for axis, b in enumerate(attrs):
            if b in weights:
                joint = joint * weights[b].reshape([-1 if i == axis else 1 for i in range(len(attrs))])
        route = joint.sum(axis=tuple(range(1, len(attrs)))) / joint.sum()
        check = max(check, float(np.abs(route - conditioned.project((a,)).values / conditioned.total).max()))
    return {"evidence": {k: (v if isinstance(v, int) else [min(v), max(v)]) for k, v in evidence.items()},
            "p_evidence": prob, "rows": rows, "seconds_unconditional": t_plain, "seconds_condition": t_cond,
            "seconds_sample": t_sample, "seconds_total": t_cond + t_sample,
            "second_route_max_abs_diff": check,
            "evidence_respected": bool(all(np.isin(sample[a], np.flatnonzero(w)).all() for a, w in weights.items())),
            "accuracy": tv_table(sample, conditioned, subsets_of(model.domain))}


def frame_part(release, given_rows: int, repeat: int, scatter: float, step: int = 2) -> dict:
    from pgm.conditional import impute
    from pgm.row_evidence import unique_rows

    model = release.model
    domain = model.domain
    truth = model.synthetic_data(given_rows, 1)
    given = truth.astype(float)
    blank = [a for k, a in enumerate(domain.attrs) if k % step]  # every step-th column given, from the first
    given[blank] = np.nan
    if scatter:
        given = given.mask(np.random.default_rng(2).random(given.shape) < scatter)
    known = given.notna().to_numpy()
    kept = [a for a in domain.attrs if a not in blank]
    distinct = len(unique_rows([truth[a].to_numpy(np.int64) for a in kept], [domain[a] for a in kept])[0])
    out = {"given_rows": given_rows, "given_columns": kept, "imputed_columns": blank, "scatter": scatter, "step": step,
           "patterns": len(unique_rows(list(known.T), [2] * known.shape[1])[0]), "distinct_evidence": distinct}
    methods = ("auto",) if scatter or step != 2 else ("auto", "pinned", "rows")
    for method in methods:
        seconds, rows = best_time(lambda: impute(fresh(model), given, 0, method=method), repeat)
        out[f"seconds_{method}"] = seconds
        if method == "auto":
            cells = given.notna()
            out["given_cells_kept"] = bool((rows[cells] == given[cells]).sum().sum() == cells.sum().sum())
            out["accuracy"] = tv_table(rows, model, subsets_of(domain))
    return out


def run(names: Sequence[str], rows: int, given_rows: int, repeat: int) -> dict:
    result = {"machine": machine_info(), "rows": rows, "given_rows": given_rows, "repeat": repeat, "data": {}}
    for name in names:
        release = load_release(name)
        release.model.beliefs
        print(f"{name}: {release.model}", flush=True)
        entry = {"model": repr(release.model), "dict": dict_part(release, DICT_EVIDENCE[name], rows, repeat)}
        print(f"  dict done: {entry['dict']['seconds_total']:.2f} s", flush=True)
        entry["frame"] = frame_part(release, given_rows, repeat, 0.0)
        print(f"  frame done: {entry['frame']['seconds_auto']:.2f} s", flush=True)
        entry["frame_scattered"] = frame_part(release, given_rows, 1, 0.05)
        entry["frame_third"] = frame_part(release, given_rows, 1, 0.0, step=3)
        result["data"][name] = entry
    return result


def _acc(acc: dict) -> str:
    one, two = acc["1-way"], acc["2-way"]
    return (f"{one['mean_tv']:.4f} / {one['max_tv']:.4f} (iid {one['iid_mean_tv']:.4f}) | "
            f"{two['mean_tv']:.4f} / {two['max_tv']:.4f} (iid {two['iid_mean_tv']:.4f})")


def report(result: dict) -> str:
    m = result["machine"]
    lines = ["# Conditional sampling: time and accuracy", "",
             f"Seeded AIM releases at eps 1 (delta 1e-9, default hyperparameters, insecure_seed=0) on the bundled "
             f"train tables; best of {result['repeat']} runs, each on a fresh copy of the model (beliefs calibrated, "
             f"no cached query); {m['cpus']} CPUs shared (1-min load {m['load_average_1min']:.1f} at the end). "
             "TV: mean / max over the 1-way | 2-way marginals, against the exact model; iid: the expected mean TV of "
             "an i.i.d. sample of as many rows.", "",
             f"## Dict evidence, {result['rows']:,} rows", "",
             "| data | evidence (codes) | p(evidence) | condition s | sample s | unconditional s | TV 1-way \\| 2-way "
             "| second route max diff |", "|---|---|---|---|---|---|---|---|"]
    for name, entry in result["data"].items():
        d = entry["dict"]
        lines.append(f"| {name} | {d['evidence']} | {d['p_evidence']:.4g} | {d['seconds_condition']:.3f} | "
                     f"{d['seconds_sample']:.2f} | {d['seconds_unconditional']:.2f} | {_acc(d['accuracy'])} | "
                     f"{d['second_route_max_abs_diff']:.1e} |")
    lines += ["", f"## DataFrame evidence, {result['given_rows']:,} given rows, columns blanked and imputed", "",
              "| data | blanked | patterns | distinct evidence | auto s | pinned s | per-row s | given kept | "
              "TV 1-way \\| 2-way |", "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in result["data"].items():
        for key in ("frame", "frame_scattered", "frame_third"):
            if key not in entry:
                continue
            f = entry[key]
            what = ("half the columns" if f.get("step", 2) == 2 else "two thirds of the columns") + (
                f" + {f['scatter']:.0%} of the cells" if f["scatter"] else "")
            pinned, rows = (f"{f[k]:.2f}" if k in f else "-" for k in ("seconds_pinned", "seconds_rows"))
            lines.append(f"| {name} | {what} | {f['patterns']} | {f['distinct_evidence']:,} | {f['seconds_auto']:.2f} | "
                         f"{pinned} | {rows} | {f['given_cells_kept']} | {_acc(f['accuracy'])} |")
    lines += ["", "Reading: the conditioned model's 1-way marginals agree with a second exact route to ~1e-15; "
              "the sampled rows' 1-way TV is ~0 under dict evidence because the sampler's systematic sampling "
              "gives every category floor or ceil of its expected count, and their 2-way TV is below an i.i.d. "
              "sample's. Imputed tables follow the model's joint (the given rows were drawn from it). The "
              "automatic choice takes the per-row algorithm on adult (the pinned order's tables hold 30M cells) "
              "and the pinned order on acs-employment (1M cells); with scattered blanks each pattern of given "
              "columns is its own group, so the time grows with the patterns. The slowest case measured: "
              "acs-employment with every third column given (6 of 17): the pinned tables hold 80M cells and the "
              "per-row algorithm touches 19k distinct evidence rows x 6,205 tree cells (it is chosen)."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", nargs="+", default=list(DICT_EVIDENCE), help="bundled tables (default: both)")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows per dict-evidence sample (default 1M)")
    p.add_argument("--given-rows", type=int, default=100_000, help="given rows to impute (default 100k)")
    p.add_argument("--repeat", type=int, default=3, help="timings: best of this many (default 3)")
    p.add_argument("--out", type=Path, default=OUT, help=f"results folder (default {OUT})")
    args = p.parse_args(argv)
    result = run(args.data, args.rows, args.given_rows, args.repeat)
    text = report(result)
    print(text)
    write_json(args.out / "results.json", result)
    write_text(args.out / "summary.md", text)


if __name__ == "__main__":
    main()
