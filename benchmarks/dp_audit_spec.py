"""The raw-path audit of `benchmarks.dp_audit`: DP spec inference on neighbouring CSV files.

``synth --data raw.csv`` without a spec reads the file (`marginals.dataset.read_csv_file`, as the
CLI does) and infers the spec under DP (`marginals.spec.infer.infer_spec`). Its privacy argument
needs every cell's category key to depend on that cell alone: then D and D + one row share the
keys of their shared rows, and only noisy counts tell them apart.

Neighbours (issue 23's reproduction): D has `ROWS` rows, ``flag`` in {true, false} and ``rating``
in {"4.50", "3.50", "2.50"}; D' adds the row ("maybe", "unrated"), which breaks a type inferred
across rows. Both are written to disk and read back the way the CLI reads them; the public
`SCHEMA` leaves flag's type to the inference and declares rating categorical. The statistic:
one reference run on D (before the audit runs, same mechanism) releases a set K of
(column, category) keys; T = how many of K a run releases. For a correct mechanism the counts
behind the keys of K are the same on D and D', so T has the same distribution on both sides
(the added row's own values are new keys, released with probability <= delta): the audit can
pass only if the keys are spelled the same on both sides.

Claim: the ledger's (cdp_eps(rho spent, delta / 2), delta / 2) plus delta / 2 reserved for the
thresholded category histograms (as `aim.raw.synthesize` splits it): (eps, delta)-DP in total.

Broken control: the behaviour before the fix, reproduced here. The file is read with pandas'
default type inference (``pd.read_csv(path)``: flag and rating parse as booleans and floats on
D, as text on D') and every key goes through `old_series_keys` (``str`` of the pandas-parsed
value), patched in for `marginals.spec.columns.series_keys` wherever it is bound (`old_keying`).
D then releases 'True'/'False' and '2.5'/'3.5'/'4.5', D' 'true'/'false' and '2.50'/...: T
differs deterministically, and the bound is as large as the number of runs allows.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from marginals import Accountant, cdp_eps, cdp_rho
from marginals.dataset import read_csv_file
from marginals.randomness import RandomSource
from marginals.spec.infer import SpecInferenceWarning, infer_spec

from benchmarks.dp_audit_stats import audit_samples

ROWS = 2000
FLAGS = ("true", "false")
RATINGS = ("4.50", "3.50", "2.50")
ADVERSARIAL_ROW = ("maybe", "unrated")
#: the public schema (as ``--schema``): flag's type is inferred, rating is declared categorical
SCHEMA = {"columns": {"flag": {}, "rating": {"type": "categorical"}}}
#: modules whose ``series_keys`` binding `old_keying` replaces (when it is the spec_columns function)
PATCHED_PACKAGES = ("marginals", "aim", "ddssp")


def write_neighbours(folder: Path, rows: int = ROWS) -> tuple[Path, Path]:
    """CSV files D (``rows`` rows of flag, rating) and D' (D plus `ADVERSARIAL_ROW`) in ``folder``."""
    lines = ["flag,rating"] + [f"{FLAGS[i % 2]},{RATINGS[i % 3]}" for i in range(rows)]
    base, plus = Path(folder) / "d.csv", Path(folder) / "d_plus_one.csv"
    base.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plus.write_text("\n".join(lines + [",".join(ADVERSARIAL_ROW)]) + "\n", encoding="utf-8")
    return base, plus


def old_series_keys(s: pd.Series) -> np.ndarray:
    """The keying before the fix: ``str`` of each pandas-parsed value, stripped (a bool column
    keys as 'True', a float column as '4.5'; the same text parsed as strings keys as itself)."""
    return np.array([str(v).strip() for v in s.to_numpy(dtype=object)], dtype=object)


@contextmanager
def old_keying() -> Iterator[None]:
    """`old_series_keys` in place of `marginals.spec.columns.series_keys`, in that module and in
    every loaded module of `PATCHED_PACKAGES` that imported it by name; restored on exit."""
    import marginals.spec.columns as spec_columns

    original = spec_columns.series_keys
    bound = [mod for name, mod in list(sys.modules.items())
             if name.split(".")[0] in PATCHED_PACKAGES and getattr(mod, "series_keys", None) is original]
    for mod in bound:
        mod.series_keys = old_series_keys
    try:
        yield
    finally:
        for mod in bound:
            mod.series_keys = original


def released_keys(table: pd.DataFrame, rho: float, threshold_delta: float, source: RandomSource) -> tuple[set, float]:
    """((column, category) pairs of one DP spec inference on ``table``, rho it charged)."""
    ledger = Accountant(rho)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecInferenceWarning)
        spec = infer_spec(table, ledger, rho, threshold_delta, schema=SCHEMA, rng=source).to_spec()
    keys = {(name, str(k)) for name, col in spec["columns"].items() for k in col.get("categories", ())}
    return keys, ledger.spent


def _read(path: Path, broken: bool) -> pd.DataFrame:
    if broken:
        return pd.read_csv(path)  # pandas' type inference across all rows (the old path)
    return read_csv_file(path, text=True, skipinitialspace=True)  # as `ddssp.cli.synth.synth_raw` reads --data


def audit_spec_inference(runs: int, broken: bool, source: RandomSource, confidence: float,
                         epsilon: float = 1.0, delta: float = 1e-6) -> dict:
    """The raw-path row: T = reference keys released, on D and D' read from disk (module docstring)."""
    rho, threshold_delta = cdp_rho(epsilon, delta / 2), delta / 2
    keying = old_keying() if broken else nullcontext()
    with tempfile.TemporaryDirectory() as folder, keying:
        tables = [_read(path, broken) for path in write_neighbours(Path(folder))]
        reference, spent = released_keys(tables[0], rho, threshold_delta, source)
        stats = []
        for table in tables:
            counts = np.empty(runs)
            for i in range(runs):
                keys, spent = released_keys(table, rho, threshold_delta, source)
                counts[i] = len(keys & reference)
            stats.append(counts)
    result = audit_samples(stats[0], stats[1], delta, confidence)
    return {**result, "eps_claim": cdp_eps(spent, delta / 2), "delta": delta,
            "params": {"epsilon": epsilon, "rho": spent, "threshold_delta": threshold_delta, "rows": ROWS,
                       "reference_keys": sorted(reference), "mean_T": [float(s.mean()) for s in stats]}}

