"""``python -m aim``: make a DP release of a table with AIM and write synthetic data.

Reads a bundled data set (or a CSV plus its domain.json), runs AIM under (epsilon, delta),
saves the release (one .npz file) and a synthetic CSV, and prints the release summary, the
privacy ledger and the workload error of the model and of the synthetic table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from marginals.data import data_dir, demo_dataset, load_bundled
from marginals.dataset import Dataset
from marginals.domain import Domain, write_text_atomic

from .mechanism import AIM
from .metrics import workload_error
from .workload import all_k_way


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aim", description=__doc__)
    parser.add_argument("--dataset", default="adult", help="bundled data set name (default: adult)")
    parser.add_argument("--csv", help="a CSV of integer codes to use instead of a bundled data set")
    parser.add_argument("--domain", help="the domain.json of --csv")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--max-model-size", type=float, default=80.0, help="MB (default 80)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/release", help="output folder (default results/release)")
    parser.add_argument("--quiet", action="store_true", help="no per-round progress on stderr")
    args = parser.parse_args(argv)

    if args.csv:
        if not args.domain:
            parser.error("--csv needs --domain")
        data, name = Dataset.from_csv(args.csv, Domain.load(args.domain)), Path(args.csv).stem
    elif data_dir() is None:
        print("note: ../shared/data is absent; using the built-in deterministic demo table instead")
        data, name = demo_dataset(), "demo"
    else:
        data, name = load_bundled(args.dataset), args.dataset
    print(f"data set {name}: {len(data):,} rows x {len(data.domain)} attributes")

    start = time.perf_counter()
    mechanism = AIM(args.epsilon, args.delta, max_model_size=args.max_model_size, seed=args.seed, progress=not args.quiet)
    release = mechanism.run(data)
    elapsed = time.perf_counter() - start
    synthetic = release.synthetic_data(rng=np.random.default_rng([args.seed, 2]))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    release_path = out / f"{name}-eps{args.epsilon:g}-seed{args.seed}.npz"
    synth_path = out / f"{name}-eps{args.epsilon:g}-seed{args.seed}-synthetic.csv"
    release.save(release_path)
    write_text_atomic(synth_path, synthetic.to_csv(index=False))

    workload = all_k_way(data.domain)
    print(f"\nAIM finished in {elapsed:.1f} s")
    print(release.summary())
    print(
        f"workload error (mean L1 over {len(workload)} 2-way marginals): "
        f"model {workload_error(data, release.model, workload):.4f}, "
        f"synthetic {workload_error(data, synthetic, workload):.4f}"
    )
    print(f"wrote {release_path} and {synth_path} ({len(synthetic):,} synthetic rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
