"""``dp-marginals report``: one self-contained HTML file showing what a release cost and holds
(privacy unit and guarantee, spec, ledger, rounds, model, measured-clique graph; see
`aim.report.build`), its images inlined (``--png-dir`` also writes them as files).

``--data`` (the private CSV: raw values for a release with a spec, read through the spec's
discretizer; codes otherwise or with ``--coded``) adds a NON-PRIVATE diagnostic: per-marginal
errors, true-vs-model plots, what the spec's rules did to the rows, and with ``--target`` the
train-on-synthetic / test-on-real ML efficacy. That report is for the data holder only: it is
written owner-only and must not be published. Exit codes as for every subcommand (0 ok, 2 bad
input or missing extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from aim.report import write_report
from aim.report.plots import EXTRA, MissingExtraError
from marginals.dataset import Dataset, DataError, read_csv_file
from marginals.domain import Domain

from .common import check_outputs, fail, load_release, nonnegative_int, subcommand
from .raw_csv import add_raw_csv_flags, raw_error, read_raw


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``report`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "report",
                   "HTML quality report of a release (guarantee, spec, ledger, rounds, cliques; --data adds a "
                   "NON-PRIVATE diagnostic)",
                   "Write one self-contained HTML page showing what a release cost and holds. With --data (the "
                   "private rows) it adds a NON-PRIVATE diagnostic: for the data holder only.")  # fmt: skip
    p.add_argument("--release", required=True, help="the release file (.npz) to describe")
    p.add_argument("--out", help="the HTML file (default: <release>-report.html next to the release)")
    p.add_argument("--data", help="the PRIVATE CSV the release was made from (raw values for a release with a spec, "
                                  "else codes): adds a non-private diagnostic; do not publish that report")
    p.add_argument("--coded", action="store_true",
                   help="--data and --synthetic hold integer codes (as `discretize` writes them), not raw values")
    p.add_argument("--target", help="with --data: an attribute to predict from the others (ML efficacy: train on "
                                    "synthetic rows, test on real ones)")
    p.add_argument("--domain", help="with --data of codes: its domain.json (default: the release's own domain)")
    p.add_argument("--synthetic", help="with --data: a CSV of synthetic rows (as `synth` writes them), compared too")
    add_raw_csv_flags(p, "raw --data: ")
    p.add_argument("--png-dir", help="also write the images as PNG files into this folder")
    p.add_argument("--no-png", action="store_true", help="write only the HTML (the default)")
    p.add_argument("--worst", type=nonnegative_int, default=6,
                   help="with --data: heatmaps of this many worst 2-way marginals (default 6)")
    p.add_argument("--title", help="page title (default: from the output name)")
    p.set_defaults(func=run)


def _read_rows(args: argparse.Namespace, release: Any, path: str | None, domain: Domain, synthetic: bool) -> Any:
    """The rows of ``path``: codes (a `Dataset`), or raw text cells for a release with a spec."""
    if path is None:
        return None
    disc = release.discretizer
    if disc is None or args.coded:
        return Dataset.from_csv(path, domain)
    raw = (read_csv_file(path, text=True, skipinitialspace=True) if synthetic
           else read_raw(argparse.Namespace(**{**vars(args), "data": path}), disc))
    unknown = [str(c) for c in raw.columns if str(c) not in disc.domain]
    if unknown and not (args.drop_extra or synthetic):
        raise ValueError(f"{path}: {len(unknown)} column(s) not in the spec: {unknown} (--drop-extra ignores them)")
    return raw.drop(columns=[c for c in raw.columns if str(c) in unknown])


def _check(args: argparse.Namespace, out: Path) -> None:
    if args.no_png and args.png_dir:
        raise ValueError("give --png-dir or --no-png, not both")
    for flag in ("domain", "synthetic", "target", "coded"):
        if getattr(args, flag) and not args.data:
            raise ValueError(f"--{flag.replace('_', '-')} goes with --data (the private rows the diagnostic reads)")
    check_outputs([("--out", out)], [("--release", args.release), ("--data", args.data),
                                         ("--domain", args.domain), ("--synthetic", args.synthetic)])


def run(args: argparse.Namespace) -> int:
    """Run ``report``: write the report; one line per output on stdout. Returns the exit code."""
    out = Path(args.out or Path(args.release).with_suffix("").as_posix() + "-report.html")
    _check(args, out)
    release = load_release(args.release)
    if args.domain and release.discretizer is not None and not args.coded:
        raise ValueError("--domain is for --data of codes: this release's spec reads raw --data (or add --coded)")
    domain = Domain.load(args.domain) if args.domain else release.domain
    data = _read_rows(args, release, args.data, domain, synthetic=False)
    synthetic = _read_rows(args, release, args.synthetic, domain, synthetic=True)
    try:
        write_report(release, out, data, synthetic=synthetic, target=args.target, png_dir=args.png_dir or False,
                     title=args.title, worst=args.worst)
    except MissingExtraError as exc:
        return fail(f"{exc} (the '{EXTRA}' extra)", 2)
    except DataError as exc:
        if isinstance(data, pd.DataFrame) and release.discretizer is not None:
            raise raw_error(args, exc) from None
        raise
    folder = f" and its PNGs in {args.png_dir}" if args.png_dir else ""
    print(f"wrote {out}{folder}")
    if args.data:
        print(f"warning: {out} holds a NON-PRIVATE diagnostic computed from {args.data}: for your eyes only "
              "(written owner-only); do not publish it", file=sys.stderr)  # never silenced by --quiet
    return 0
