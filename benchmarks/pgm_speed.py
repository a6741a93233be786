"""Speed of the `pgm` estimator on adult, and the same fit with the reference mbi 2.0.0.

Workload: all 1-way marginals of adult (train) plus the 2-way marginals of a 14-edge spanning
path and three triangle-closing edges, each measured once with discrete Gaussian noise (sigma =
10, a seeded `marginals.InsecureRandom`). Ours: `pgm.estimate` with its defaults (1000
iterations), then all 120 one- and two-way marginals from the fitted model and 48,842 synthetic rows.

mbi 2.0.0 (JAX) runs in its own virtual environment (created on first use with pip; default
``$XDG_CACHE_HOME/dp-marginals/mbi-2.0.0-venv``, else ``/tmp/dp-marginals-mbi-2.0.0-venv``;
choose with ``--mbi-venv``), on the very same noisy measurements handed over in an .npz file.
Its loss is sum_i 0.5 ||(mu_i - y_i) / sigma_i||^2, the same as ours with the default
inverse-variance weights; this script evaluates that sum itself (`measurement_loss`) on mbi's
final marginals to compare it with mbi's own value.

Timings are reported, never asserted. Usage::

    python -m benchmarks.pgm_speed            # table
    python -m benchmarks.pgm_speed --json     # one JSON object
    python -m benchmarks.pgm_speed --no-mbi   # ours only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import pgm
from marginals import Accountant, InsecureRandom, measure_counts
from benchmarks.data import load_bundled

from .harness import format_targets, one_and_two_way, run_json, target

SYNTH_ROWS = 48_842
TARGET_MARGINALS_S = 0.050
TARGET_SAMPLE_S = 0.5
TARGET_TTQ_RATIO = 5.0
REPEATS = 5  # fresh-model timings: the median of this many (the machine may be shared)

MBI_DRIVER = textwrap.dedent(
    """
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # a disk cache would hide the compile time
    from mbi import Domain, LinearMeasurement, estimation, marginal_loss

    src, out_path, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    z = np.load(src, allow_pickle=False)
    attrs = [str(a) for a in z["attrs"]]
    dom = Domain(attrs, [int(s) for s in z["shape"]])
    cliques = json.loads(str(z["cliques"]))
    sigmas = z["sigmas"]
    meas = [LinearMeasurement(z[f"y{i}"].ravel(), tuple(c), stddev=float(s))
            for i, (c, s) in enumerate(zip(cliques, sigmas))]
    loss_fn = marginal_loss.from_linear_measurements(meas, dom)

    def loss_of(model):
        return float(loss_fn(model.marginals))

    res = {"jax": jax.__version__, "total": float(estimation.minimum_variance_unbiased_total(meas))}
    res["loss_iter0"] = loss_of(estimation.MirrorDescent().estimate(dom, meas, iters=0))

    t = time.perf_counter()
    model = estimation.MirrorDescent().estimate(dom, meas, iters=iters)
    jax.block_until_ready(model.marginals)
    res["first_s"] = time.perf_counter() - t  # includes the JIT compile
    t = time.perf_counter()
    model = estimation.MirrorDescent().estimate(dom, meas, iters=iters)
    jax.block_until_ready(model.marginals)
    res["second_s"] = time.perf_counter() - t
    res["final_loss"] = loss_of(model)

    # Loss curve: the callback receives the marginals at the start of the last step of each
    # 50-step block, i.e. after 50 b - 1 steps.
    curve = []
    estimation.MirrorDescent().estimate(
        dom, meas, iters=iters, callback_fn=lambda mu: curve.append(float(loss_fn(mu))))
    res["curve"] = [[50 * (b + 1) - 1, v] for b, v in enumerate(curve)]

    pot = json.loads(str(z["potential_cliques"]))
    arrays = {f"mu{i}": np.asarray(model.project(tuple(c)).datavector(flatten=False))
              for i, c in enumerate(pot)}
    np.savez(out_path, **arrays)
    print(json.dumps(res))
    """
)


def workload(domain):
    attrs = domain.attrs
    edges = [(attrs[i], attrs[i + 1]) for i in range(len(attrs) - 1)]
    edges += [(attrs[0], attrs[2]), (attrs[5], attrs[7]), (attrs[10], attrs[12])]
    return [(a,) for a in attrs] + edges


def measure(dataset, cliques, sigma, seed):
    """Each clique's marginal with discrete Gaussian noise from one seeded (test-only) stream."""
    source = InsecureRandom(seed, warn=False)  # a benchmark: replayable noise on purpose
    accountant = Accountant(1e9)
    return [measure_counts(dataset.marginal(c), c, sigma, source, accountant) for c in cliques]


def measurement_loss(cliques, mu, measurements) -> float:
    """sum_i 0.5 ||(mu_i - y_i) / sigma_i||^2, with mu_i the measured clique's marginal summed out of
    the marginal ``mu[k]`` of the first clique ``cliques[k]`` that contains it."""
    loss = 0.0
    for m in measurements:
        home = next(k for k, c in enumerate(cliques) if set(m.clique) <= set(c))
        clique = cliques[home]
        table = mu[home].sum(axis=tuple(i for i, a in enumerate(clique) if a not in m.clique))
        present = [a for a in clique if a in m.clique]
        table = np.transpose(table, [present.index(a) for a in m.clique])
        loss += 0.5 * float(np.sum((table - m.noisy_counts) ** 2)) / m.sigma**2
    return loss


def default_mbi_venv() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME")
    if cache:
        return Path(cache) / "dp-marginals" / "mbi-2.0.0-venv"
    return Path(tempfile.gettempdir()) / "dp-marginals-mbi-2.0.0-venv"


def ensure_mbi_venv(path: Path, log) -> Path | None:
    """The venv's python with mbi 2.0.0 installed, or None (with a logged reason)."""
    python = path / "bin" / "python"
    probe = "import importlib.metadata as md, mbi, jax, pandas; assert md.version('mbi') == '2.0.0'"
    check = [str(python), "-c", probe]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    log(f"creating the mbi venv at {path} (pip install mbi==2.0.0 pandas) ...")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=300)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "mbi==2.0.0", "pandas"],
            check=True, capture_output=True, timeout=1800,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        log(f"mbi venv unavailable ({type(exc).__name__}): {detail.decode(errors='replace')[-300:]}")
        return None
    if subprocess.run(check, capture_output=True).returncode != 0:
        log("mbi venv created but `import mbi` fails")
        return None
    return python


def run_ours(domain, measurements, iters):
    """(fitted model, measurements): fit time and loss curve, query and sampling times."""
    res = {}
    stamps = []
    start = time.perf_counter()
    def callback(it, loss):
        stamps.append((it, loss, time.perf_counter()))

    model = pgm.estimate(domain, measurements, iters=iters, callback=callback)
    res["fit_s"] = time.perf_counter() - start
    res["iters"] = model.info["iterations"]
    res["per_iter_ms"] = 1e3 * res["fit_s"] / max(res["iters"], 1)
    history = model.info["history"]
    res["loss_iter0"] = history[0]
    res["curve"] = {k: history[k] for k in (10, 100, 1000) if k < len(history)}
    res["final_loss"] = history[-1]
    res["accepted"] = model.info["accepted"]
    res["total"] = model.total
    res["stamps"] = [(it, loss, t - start) for it, loss, t in stamps]

    subsets = one_and_two_way(domain)
    res["n_marginals"] = len(subsets)
    potentials = [f.values for f in model.potentials.values()]

    def fresh():  # a new model object: no beliefs, no query cache (the tree is reused)
        return pgm.Model(domain, model.cliques, potentials, model.total, tree=model.tree)

    times = []
    for _ in range(REPEATS):
        m = fresh()
        t = time.perf_counter()
        m.marginals(subsets)
        times.append(time.perf_counter() - t)  # calibration + every query
    res["marginals_fresh_first_s"], res["marginals_fresh_s"] = times[0], float(np.median(times))
    t = time.perf_counter()
    m.marginals(subsets)
    res["marginals_cached_s"] = time.perf_counter() - t
    t = time.perf_counter()
    model.marginals(subsets)  # the fitted model: beliefs handed over by the estimator
    res["marginals_fitted_s"] = time.perf_counter() - t

    times = []
    for rep in range(REPEATS):
        m = fresh()
        t = time.perf_counter()
        m.synthetic_data(SYNTH_ROWS, np.random.default_rng(rep))
        times.append(time.perf_counter() - t)
    res["sample_fresh_first_s"], res["sample_fresh_s"] = times[0], float(np.median(times))
    t = time.perf_counter()
    m.synthetic_data(SYNTH_ROWS, np.random.default_rng(REPEATS))
    res["sample_warm_s"] = time.perf_counter() - t
    return model, res


def run_mbi(python: Path, domain, measurements, cliques, iters, log):
    """(mbi's timings and losses, its marginals on our potential cliques), or (None, None) on failure."""
    with tempfile.TemporaryDirectory(prefix="pgm-speed-") as tmp:
        src, out, driver = Path(tmp) / "meas.npz", Path(tmp) / "mu.npz", Path(tmp) / "driver.py"
        arrays = {f"y{i}": m.noisy_counts for i, m in enumerate(measurements)}
        np.savez(
            src,
            attrs=np.array(domain.attrs),
            shape=np.array(domain.shape),
            cliques=json.dumps([list(m.clique) for m in measurements]),
            sigmas=np.array([m.sigma for m in measurements]),
            potential_cliques=json.dumps([list(c) for c in cliques]),
            **arrays,
        )
        driver.write_text(MBI_DRIVER)
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONWARNINGS="ignore")
        try:
            res = run_json([python, driver, src, out, iters], env=env)
        except RuntimeError as exc:
            log(f"mbi driver failed: {exc}"[-2000:])
            return None, None
        with np.load(out) as z:
            mu = [z[f"mu{i}"] for i in range(len(cliques))]
    return res, mu


def fmt(x, unit=""):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.4g}{unit}"
    return f"{x}{unit}"


def compare_mbi(args, domain, measurements, model, ours: dict, log) -> dict | None:
    """mbi 2.0.0 on the same measurements in its own venv, with our evaluation of its final loss."""
    python = ensure_mbi_venv(args.mbi_venv, log)
    if python is None:
        return None
    mbi, mbi_mu = run_mbi(python, domain, measurements, list(model.cliques), args.iters, log)
    if mbi is None:
        return None
    mbi["per_iter_ms"] = 1e3 * mbi["second_s"] / args.iters
    mbi["compile_s"] = mbi["first_s"] - mbi["second_s"]
    mbi["final_loss_by_ours"] = measurement_loss(list(model.cliques), mbi_mu, measurements)
    mbi["loss_rel_diff_final"] = abs(mbi["final_loss_by_ours"] - mbi["final_loss"]) / mbi["final_loss"]
    mbi["loss_rel_diff_iter0"] = abs(ours["loss_iter0"] - mbi["loss_iter0"]) / mbi["loss_iter0"]
    return mbi


def targets(ours: dict, mbi: dict | None) -> list[dict]:
    """Query and sampling times; with mbi: time to mbi's final loss and time per iteration."""
    out = [
        target(f"all {ours['n_marginals']} 1-/2-way marginals, fresh model < 50 ms",
               ours["marginals_fresh_s"] < TARGET_MARGINALS_S, fmt(1e3 * ours["marginals_fresh_s"], " ms")),
        target(f"{SYNTH_ROWS:,} synthetic rows < 0.5 s", ours["sample_fresh_s"] < TARGET_SAMPLE_S,
               fmt(ours["sample_fresh_s"], " s")),
    ]  # fmt: skip
    if mbi is not None:
        reached = next(((it, t) for it, loss, t in ours["stamps"] if loss <= mbi["final_loss"]), None)
        ours["ttq_iter"], ours["ttq_s"] = reached if reached else (None, None)
        for key, label in (("first_s", "with JIT compile"), ("second_s", "without JIT compile")):
            ratio = mbi[key] / ours["ttq_s"] if reached else None
            mbi[f"ttq_ratio_{key[:-2]}"] = ratio
            out.append(target(f"time-to-mbi-quality >= 5x sooner ({label})", bool(ratio and ratio >= TARGET_TTQ_RATIO),
                              fmt(ratio, "x")))  # fmt: skip
        out.append(target("per-iteration time <= mbi's", ours["per_iter_ms"] <= mbi["per_iter_ms"],
                          f"{fmt(ours['per_iter_ms'])} vs {fmt(mbi['per_iter_ms'])} ms"))  # fmt: skip
    del ours["stamps"]
    return out


def print_rows(title: str, rows: list[tuple[str, str]]) -> None:
    """A title and aligned (label, value) lines."""
    print(title)
    width = max(len(r[0]) for r in rows) + 2
    for k, v in rows:
        print(f"  {k:<{width}}{v}")


def ours_rows(model, ours: dict) -> list[tuple[str, str]]:
    rows = [
        ("model", f"{len(model.cliques)} potential cliques, {len(model.tree.nodes)} tree nodes, "
                  f"{model.size_mb:.3f} MiB"),
        ("total (MVU)", fmt(ours["total"])),
        ("fit: iterations (accepted)", f"{ours['iters']} ({ours['accepted']})"),
        ("fit: wall time", fmt(ours["fit_s"], " s")),
        ("fit: time per iteration", fmt(ours["per_iter_ms"], " ms")),
        ("loss at iteration 0", fmt(ours["loss_iter0"])),
    ]  # fmt: skip
    rows += [(f"loss at iteration {k}", fmt(v)) for k, v in ours["curve"].items()]
    n = ours["n_marginals"]
    return rows + [
        (f"{n} marginals, fresh model (incl. calibration; median of {REPEATS})", fmt(1e3 * ours["marginals_fresh_s"], " ms")),
        ("  first of those", fmt(1e3 * ours["marginals_fresh_first_s"], " ms")),
        (f"{n} marginals, fitted model (calibrated)", fmt(1e3 * ours["marginals_fitted_s"], " ms")),
        (f"{n} marginals, cached", fmt(1e3 * ours["marginals_cached_s"], " ms")),
        (f"sample {SYNTH_ROWS:,} rows, fresh model (median of {REPEATS})", fmt(ours["sample_fresh_s"], " s")),
        ("  first of those", fmt(ours["sample_fresh_first_s"], " s")),
        (f"sample {SYNTH_ROWS:,} rows, same model again", fmt(ours["sample_warm_s"], " s")),
    ]  # fmt: skip


def mbi_rows(mbi: dict, ours: dict, iters: int) -> list[tuple[str, str]]:
    curve = dict((it, v) for it, v in mbi["curve"])
    return [
        ("jax", mbi["jax"]),
        ("total (MVU)", fmt(mbi["total"])),
        ("loss at iteration 0", fmt(mbi["loss_iter0"])),
        ("  relative difference to ours at iteration 0", f"{mbi['loss_rel_diff_iter0']:.1e}"),
        ("loss after 49/99/999 steps (callback)", " / ".join(fmt(curve.get(k)) for k in (49, 99, 999))),
        (f"final loss after {iters} steps", fmt(mbi["final_loss"])),
        ("  the loss evaluated here on mbi's final marginals", fmt(mbi["final_loss_by_ours"])),
        ("  relative difference", f"{mbi['loss_rel_diff_final']:.1e}"),
        (f"{iters} steps incl. JIT compile", fmt(mbi["first_s"], " s")),
        (f"{iters} steps without compile", fmt(mbi["second_s"], " s")),
        ("compile time (first - second)", fmt(mbi["compile_s"], " s")),
        ("time per iteration", fmt(mbi["per_iter_ms"], " ms")),
        ("ours: first iteration at mbi's final loss", fmt(ours["ttq_iter"])),
        ("ours: time to mbi's final loss", fmt(ours["ttq_s"], " s")),
        ("ratio mbi(incl. compile) / ours", fmt(mbi["ttq_ratio_first"], "x")),
        ("ratio mbi(no compile) / ours", fmt(mbi["ttq_ratio_second"], "x")),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--sigma", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-mbi", action="store_true", help="skip the mbi comparison")
    ap.add_argument("--mbi-venv", type=Path, default=default_mbi_venv(), help="virtual environment for mbi 2.0.0")
    args = ap.parse_args(argv)
    notes: list[str] = []

    def log(msg):
        notes.append(msg)
        print(msg, file=sys.stderr)

    try:
        dataset = load_bundled("adult")
    except FileNotFoundError as exc:
        print(f"pgm_speed: the adult data set is not available ({exc})", file=sys.stderr)
        return 1
    domain = dataset.domain
    measurements = measure(dataset, workload(domain), args.sigma, args.seed)
    model, ours = run_ours(domain, measurements, args.iters)
    mbi = None if args.no_mbi else compare_mbi(args, domain, measurements, model, ours, log)
    if args.no_mbi:
        log("mbi comparison skipped (--no-mbi)")
    measured = targets(ours, mbi)
    if args.json:
        print(json.dumps({"ours": ours, "mbi": mbi, "targets": measured, "notes": notes}, default=float))
        return 0
    print_rows("ours (pgm)", ours_rows(model, ours))
    if mbi is not None:
        print_rows("mbi 2.0.0", mbi_rows(mbi, ours, args.iters))
    print(format_targets(measured))
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
