"""What the benchmarks share: data, seeds, epsilon x trial grids, timing, fresh processes,
memory and machine facts, result rows and files, plots, and printed targets.

Only the standard library is imported at module level (numpy, pandas and matplotlib inside the
functions that need them), so a script can call `single_threaded` before numpy loads. Nothing
here interprets a result: scripts print tables and comparisons computed from the numbers.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import io
import itertools
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import time
import traceback
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CACHE = ROOT / "benchmarks" / "cache"  # git-ignored: generated tables, cached releases

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS")  # fmt: skip


# -- processes and threads ------------------------------------------------------------------------


def single_threaded() -> None:
    """One BLAS/OpenMP thread per process unless the environment says otherwise (call before numpy
    is imported; spawned workers and subprocesses inherit it)."""
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")


#: the busy loop: spins until killed, or until the process that started it is gone (a benchmark
#: stopped midway must not leave a core spinning under every later measurement)
BUSY_LOOP = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""


def busy_process() -> subprocess.Popen:
    """Start one process that keeps a core busy (pure-Python loop) until killed or orphaned: the
    'busy server' a user's run shares the machine with."""
    return subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(os.getpid())])


def guarded_call(fn: Callable, args: tuple) -> tuple[Any, str | None, float]:
    """(fn(*args), None, seconds), or (None, traceback, seconds) when it raises."""
    start = time.perf_counter()
    try:
        return fn(*args), None, time.perf_counter() - start
    except Exception:
        return None, traceback.format_exc(), time.perf_counter() - start


def run_parallel(fn: Callable, units: Sequence[tuple], jobs: int, on_done: Callable) -> None:
    """``fn(*unit)`` for every unit, here (jobs == 1) or in ``jobs`` spawned worker processes;
    ``on_done(unit, result, error, seconds)`` as each finishes (error: a traceback or None)."""
    if jobs == 1:
        for unit in units:
            on_done(unit, *guarded_call(fn, unit))
        return
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(guarded_call, fn, unit): unit for unit in units}
        for future in cf.as_completed(futures):
            try:
                result, error, seconds = future.result()
            except Exception:  # the worker process itself died
                result, error, seconds = None, traceback.format_exc(), 0.0
            on_done(futures[future], result, error, seconds)


def in_fresh_process(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` in a new spawned process (its peak RSS is then its own); returns the result."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def in_fresh_processes(fn: Callable, jobs: Iterable, processes: int = 1) -> Iterator:
    """``fn(job)`` for every job, in order, each in a new spawned process (so its peak RSS is its own)."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes=max(1, processes), maxtasksperchild=1) as pool:
        yield from pool.imap(fn, jobs)


def run_json(command: Sequence[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run ``command`` (a fresh interpreter) and return the JSON object on the last line of its stdout."""
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command[:4]))} ... failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- memory, machine, timing ----------------------------------------------------------------------


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident memory in MiB: this process's own high-water mark (Linux: VmHWM; ru_maxrss
    would also carry the peak of the process that forked it, e.g. a benchmark driver holding a
    large table, across exec), else ru_maxrss (KiB on Linux, bytes on macOS)."""
    if who == resource.RUSAGE_SELF:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
    rss = resource.getrusage(who).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def machine_info() -> dict:
    """CPUs, 1-minute load average and library versions (timings depend on them)."""
    import numpy as np
    import pandas as pd

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpus": os.cpu_count(), "load_average_1min": load, "python": platform.python_version(),
            "numpy": np.__version__, "pandas": pd.__version__}  # fmt: skip


def timed(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(fn(*args, **kwargs), wall seconds)."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def repeat_timed(fn: Callable, repeat: int) -> tuple[list[float], Any]:
    """Wall seconds of ``repeat`` calls of ``fn()`` and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        result, seconds = timed(fn)
        times.append(seconds)
    return times, result


# -- data, seeds, grids ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def load_split(dataset: str, n_train: int | None = None):
    """(train: the first ``n_train`` rows of the bundled ``train.csv`` as a Dataset, test: the
    bundled ``test.csv`` as a DataFrame of codes)."""
    from benchmarks.data import load_bundled

    return load_bundled(dataset, "train", limit=n_train), load_bundled(dataset, "test").to_df()


def adult_or_demo():
    """The bundled adult train table, or the generated demo table when the data folder is absent."""
    from marginals.datasets import demo_dataset
    from benchmarks.data import data_dir, load_bundled

    return load_bundled("adult") if data_dir() is not None else demo_dataset()


def data_source_name() -> str:
    """Which table `adult_or_demo` returns."""
    from benchmarks.data import data_dir

    return "adult" if data_dir() is not None else "demo (bundled data absent)"


def one_and_two_way(domain) -> list[tuple[str, ...]]:
    """Every 1-way then every 2-way attribute set of ``domain``, in domain order."""
    return [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))


def name_key(name: str) -> int:
    """A stable 32-bit integer for a string (the first 4 bytes of its SHA-256; no Python hash())."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "little")


def seed_from(entropy: Sequence[int]) -> int:
    """A 32-bit seed from a list of integers via numpy's SeedSequence (reproducible, test-only)."""
    import numpy as np

    return int(np.random.SeedSequence([int(e) for e in entropy]).generate_state(1, np.uint32)[0])


def grid(epsilons: Iterable[float], trials: int) -> list[tuple[float, int]]:
    """Every (epsilon, trial) cell, epsilon-major."""
    return [(eps, trial) for eps in epsilons for trial in range(trials)]


# -- result tables and files ----------------------------------------------------------------------


def results_frame(rows: list[dict], columns: Sequence[str], integer: Sequence[str] = (),
                  boolean: Sequence[str] = (), sort: Sequence[str] = ()):  # fmt: skip
    """The rows as a DataFrame with exactly ``columns``: nullable integer / boolean columns (blanks
    where a row has no value), sorted by ``sort`` (blanks first)."""
    import pandas as pd

    df = pd.DataFrame(rows).reindex(columns=list(columns))
    for col in integer:
        df[col] = df[col].astype("Int64")
    for col in boolean:
        df[col] = df[col].astype("boolean")
    if len(df) and sort:
        df = df.sort_values(list(sort), na_position="first")
    return df


def mean_se(df, keys: Sequence[str], value: str = "metric"):
    """Mean, sample standard deviation, count and standard error (std / sqrt(n); NaN for n = 1)
    of ``value`` per group of ``keys``."""
    import numpy as np

    out = df.groupby(list(keys), sort=True)[value].agg(
        mean="mean", std=lambda s: s.std(ddof=1) if len(s) > 1 else np.nan, n="count"
    ).reset_index()
    out["se"] = out["std"] / np.sqrt(out["n"])
    return out


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` atomically (temporary file, then rename); returns the path."""
    from marginals.files import write_text_atomic

    write_text_atomic(path, text)
    return Path(path)


def publish_folder(tmp: Path, folder: Path) -> None:
    """Move a fully built ``tmp`` folder to ``folder`` (one rename); drop it if a concurrent build got there first."""
    if folder.exists():
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    else:
        tmp.rename(folder)


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically (non-JSON values as strings)."""
    return write_text(path, json.dumps(obj, indent=1, default=str))


def write_csv(df, path: Path) -> Path:
    """Write a DataFrame as CSV without its index, atomically."""
    return write_text(path, df.to_csv(index=False))


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (matplotlib is only needed for plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Save a matplotlib figure as PNG atomically and close it; returns the path."""
    from marginals.files import write_bytes_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    pyplot().close(fig)
    write_bytes_atomic(path, buffer.getvalue())
    return Path(path)


# -- printed output -------------------------------------------------------------------------------


def target(label: str, met: bool, value: str = "") -> dict:
    """One measured target: its statement, whether the measurement meets it, the measured value."""
    return {"target": label, "met": bool(met), "value": value}


def format_targets(targets: Sequence[dict]) -> str:
    """``targets:`` then one ``[met]`` / ``[MISSED]`` line per target."""
    lines = ["targets:"]
    for t in targets:
        lines.append(f"  [{'met' if t['met'] else 'MISSED'}] {t['target']}" + (f": {t['value']}" if t["value"] else ""))
    return "\n".join(lines)
