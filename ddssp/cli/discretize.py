"""``dp-marginals discretize``: a raw CSV -> integer codes + domain.json with a public spec, or a CSV
of codes (e.g. synthetic rows) back to readable values (``--decode``). Both are deterministic given
the spec, except ``--numeric uniform``, which draws values inside each bin (``--sample-seed``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from marginals.dataset import read_csv_file
from marginals.files import write_text_atomic
from marginals.spec.discretize import Discretizer

from .common import add_csv_output_flags, check_outputs, csv_text, nonnegative_int, private_note, subcommand
from .raw_csv import add_raw_csv_flags, encode_raw

#: the files an encoding writes into --out-dir.
OUTPUT_FILES = ("data.csv", "domain.json", "discretizer.json")


def decode(args: argparse.Namespace, disc: Discretizer, out: Path) -> int:
    """--decode: the CSV of codes mapped back to values, written to ``out``."""
    codes = read_csv_file(args.decode)
    if args.numeric == "uniform" and args.sample_seed is None:
        raise ValueError("--numeric uniform draws random values: give --sample-seed")
    rng = np.random.default_rng(args.sample_seed) if args.numeric == "uniform" else None
    try:
        readable = disc.inverse_transform(codes, rng=rng, numeric=args.numeric)
    except ValueError as exc:
        raise ValueError(f"{args.decode}: {exc}") from None
    write_text_atomic(out, csv_text(readable, args.escape_formulas))
    print(f"decoded {args.decode} into {out}")
    private_note(args, f"{args.decode}: {len(readable):,} rows decoded")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``discretize``; returns the exit code."""
    if args.decode:
        out = Path(args.out or Path(args.decode).with_suffix("").as_posix() + "-decoded.csv")
        check_outputs([("--out", out)], [("--decode", args.decode), ("--spec", args.spec)])
    elif args.data and args.out_dir:
        folder = Path(args.out_dir)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{folder}: --out-dir names an existing file, not a folder")
        check_outputs([("--out-dir", folder / n) for n in OUTPUT_FILES], [("--data", args.data), ("--spec", args.spec)])
    disc = Discretizer.load(args.spec)
    if args.decode:
        return decode(args, disc, out)
    if not args.data or not args.out_dir:
        raise ValueError("discretize needs --data and --out-dir (or --decode CODES.csv to map codes back)")
    report = encode_raw(args, disc, args.out_dir)
    print(f"wrote {args.out_dir}/data.csv, domain.json and discretizer.json")
    private_note(args, f"{args.data}: {report['rows']:,} rows; transform report "
                 + json.dumps({k: report[k] for k in ("clipped", "other", "missing")}))  # fmt: skip
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``discretize`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "discretize", "raw table -> integer codes (public spec), or back",
                   "Encode a raw CSV into codes + domain.json with a public spec (--data, --out-dir), "
                   "or decode a CSV of codes back to readable values (--decode).")  # fmt: skip
    p.add_argument("--spec", required=True, metavar="JSON",
                   help="the public discretization spec (JSON; dp-marginals spec drafts one from a schema)")
    p.add_argument("--data", metavar="CSV", help="raw CSV to encode")
    add_raw_csv_flags(p)
    p.add_argument("--out-dir", metavar="DIR", help="folder for data.csv, domain.json and discretizer.json")
    p.add_argument("--decode", metavar="CSV",
                   help="a CSV of codes (e.g. synthetic rows) to map back to readable values")
    p.add_argument("--numeric", choices=["interval", "uniform"], default="interval",
                   help="decoded numeric bins as interval labels or uniform draws inside the bin (needs "
                        "--sample-seed; default interval)")
    p.add_argument("--sample-seed", type=nonnegative_int, metavar="SEED",
                   help="seed for --numeric uniform (post-processing of public codes: safe)")
    p.add_argument("--seed", type=nonnegative_int, dest="sample_seed", help=argparse.SUPPRESS)  # the old name
    p.add_argument("--out", metavar="CSV", help="decoded CSV (default <codes>-decoded.csv)")
    add_csv_output_flags(p)
    p.set_defaults(func=run)
