"""Fingerprints of seeded releases: a behaviour-preserving change must leave them bit for bit.

    python -m benchmarks.fingerprints --out fp.json            # adult eps 1 and 10, raw adult, Figure-3 quick
    python -m benchmarks.fingerprints --compare base.json fp.json

Each entry hashes every published number of one seeded run: the measured cliques, noisy counts and
noise scales, the ledger's charges, the fitted model's potentials, a seeded synthetic sample, and
(for the raw run) the inferred spec; the Figure-3 quick run hashes its results table without the
timing columns. Seeded runs are not private: this is a regression check, not a release.

Floating-point results depend on the numeric stack (library versions, the BLAS build and the CPU
features numpy dispatches to), so each file records that ``environment``: fingerprints compare
only between runs on the same one (`tests/test_benchmarks_fingerprints.py` skips elsewhere).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: the fingerprints recorded before the issue-26 redesign (by 7e4be27 on the team's machine).
RECORD = ROOT / "benchmarks" / "results" / "redesign" / "fingerprints.json"
TIMING = ("seconds", "release_seconds", "release_file")


def _digest(parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str(part.dtype).encode() + str(part.shape).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()


def release_parts(release) -> dict:
    """Hashes of one release's published numbers, by kind."""
    meas = [p for m in release.measurements
            for p in (list(m.clique), np.asarray(m.noisy_counts, dtype=np.float64), float(m.sigma))]
    charges = [(c.label, c.mechanism, float(c.rho)) for c in release.ledger.charges]
    model = release.model
    pots = [p for c in model.cliques for p in (list(c), np.asarray(model.potentials[c].values))]
    synth = release.synthetic_codes(2000, rng=0) if hasattr(release, "synthetic_codes") else None
    parts = {
        "measurements": _digest(meas),
        "charges": _digest(charges),
        "potentials": _digest(pots + [float(model.total)]),
        "synthetic": _digest([synth.to_numpy(), list(synth.columns)]),
        "rounds": len(release.rounds),
    }
    if getattr(release, "spec", None) is not None:
        parts["spec"] = _digest([release.spec])
    return parts


def environment() -> dict:
    """The numeric stack the fingerprints depend on: versions, BLAS build, CPU features in use."""
    import platform

    import pandas as pd
    import scipy
    import threadpoolctl

    import scipy.linalg

    np.ones(2) @ np.ones(2)  # load numpy's and scipy's BLAS so threadpoolctl sees both
    scipy.linalg.blas.ddot(np.ones(2), np.ones(2))
    blas = sorted([{k: i.get(k) for k in ("internal_api", "version", "architecture")} for i in threadpoolctl.threadpool_info()
            if i.get("user_api") == "blas"], key=json.dumps)
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as umath
    features = sorted(f for f, on in getattr(umath, "__cpu_features__", {}).items() if on)
    return {"python": platform.python_version(), "machine": platform.machine(), "numpy": np.__version__,
            "scipy": scipy.__version__, "pandas": pd.__version__, "blas": blas, "cpu_features": features}


def recorded() -> dict | None:
    """The recorded fingerprints, or None on another numeric stack (where rounding may differ)."""
    record = json.loads(RECORD.read_text())
    return record if record["environment"] == environment() else None


def _load(name: str):
    try:
        from benchmarks.data import load_bundled  # after the move to benchmarks
    except ImportError:
        from benchmarks.data import load_bundled
    return load_bundled(name)


def _load_raw():
    try:
        from benchmarks.data import load_adult_raw
    except ImportError:
        from benchmarks.data import load_adult_raw
    return load_adult_raw()


def adult_releases() -> dict:
    from aim import AIM

    data = _load("adult")
    out = {}
    for eps in (1.0, 10.0):
        release = AIM(eps, 1e-9, insecure_seed=0).run(data)
        out[f"adult-eps{eps:g}"] = release_parts(release)
    return out


def raw_release() -> dict:
    from aim import synthesize

    release, rows = synthesize(_load_raw(), 1.0, 1e-9, insecure_seed=0, sample_seed=0, rows=2000)
    parts = release_parts(release)
    parts["readable"] = _digest([rows.astype(str).to_numpy().tolist()])
    return {"adult-raw-eps1": parts}


def figure3_quick() -> dict:
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "quick"
        subprocess.run([sys.executable, "-m", "benchmarks.figure3", "--quick", "--no-cache", "--no-plots",
                        "--no-aim-logs", "--out", str(out), "--jobs", "2"], cwd=ROOT, check=True,
                       capture_output=True, text=True)
        df = pd.read_csv(out / "results.csv")
    return {"figure3-quick": table_fingerprint(df)}


def table_fingerprint(df) -> dict:
    """The fingerprint of a Figure-3 results table: every column but the timings and file names."""
    keep = [c for c in df.columns if c not in TIMING]
    df = df[keep].sort_values(["task", "method", "epsilon", "trial"]).reset_index(drop=True)
    return {"rows": len(df), "table": _digest([df.to_csv(index=False)])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--only", nargs="*", choices=["adult", "raw", "figure3"], default=["adult", "raw", "figure3"])
    p.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = p.parse_args(argv)
    if args.compare:
        before, after = (json.loads(f.read_text()) for f in args.compare)
        if before.pop("environment", None) != after.pop("environment", None):
            print("note: the two runs used different numeric stacks; differences may be rounding")
        diff = {k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)}
        print("identical" if not diff else json.dumps(diff, indent=1))
        return 0 if not diff else 1
    warnings.simplefilter("ignore")  # seeded runs warn that they are not private: that is the point here
    result = {"environment": environment()}
    if "adult" in args.only:
        result.update(adult_releases())
    if "raw" in args.only:
        result.update(raw_release())
    if "figure3" in args.only:
        result.update(figure3_quick())
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
