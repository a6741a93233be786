"""``dp-marginals report``: one self-contained HTML file showing what a release cost and holds
(ledger, rounds, model, measured-clique graph; see `aim.report.build`), plus its PNGs in a folder.

``--data`` (the private CSV of codes) adds a NON-PRIVATE diagnostic: per-marginal errors and
true-vs-model plots. That report is for the data holder only: it is written owner-only and
must not be published. Exit codes as for every subcommand (0 ok, 2 bad input or missing extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aim.report import write_report
from aim.report.plots import EXTRA, MissingExtraError
from marginals.dataset import Dataset
from marginals.domain import Domain

from .common import check_outputs, fail, load_release, nonnegative_int, subcommand


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``report`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "report",
                   "HTML quality report of a release (ledger, rounds, cliques; --data adds a NON-PRIVATE diagnostic)",
                   "Write one self-contained HTML page (and its PNGs) showing what a release cost and holds. With "
                   "--data (the private rows) it adds a NON-PRIVATE diagnostic: for the data holder only.")  # fmt: skip
    p.add_argument("--release", required=True, help="the release file (.npz) to describe")
    p.add_argument("--out", help="the HTML file (default: <release>-report.html next to the release)")
    p.add_argument("--data", help="the PRIVATE CSV of codes the release was made from: adds a non-private "
                                  "diagnostic (errors of every 1-way and 2-way marginal); do not publish that report")
    p.add_argument("--domain", help="with --data: its domain.json (default: the release's own domain)")
    p.add_argument("--synthetic", help="with --data: a CSV of synthetic codes, compared with the true marginals too")
    p.add_argument("--png-dir", help="folder for the PNGs (default <out>_files next to the HTML)")
    p.add_argument("--no-png", action="store_true", help="write only the HTML (its images are embedded anyway)")
    p.add_argument("--worst", type=nonnegative_int, default=6,
                   help="with --data: heatmaps of this many worst 2-way marginals (default 6)")
    p.add_argument("--title", help="page title (default: from the output name)")
    p.set_defaults(func=run)


def _read_codes(path: str | None, domain: Domain) -> Dataset | None:
    return None if path is None else Dataset.from_csv(path, domain)


def run(args: argparse.Namespace) -> int:
    """Run ``report``: write the report; one line per output on stdout. Returns the exit code."""
    out = Path(args.out or Path(args.release).with_suffix("").as_posix() + "-report.html")
    if args.no_png and args.png_dir:
        raise ValueError("give --png-dir or --no-png, not both")
    for flag in ("domain", "synthetic"):
        if getattr(args, flag) and not args.data:
            raise ValueError(f"--{flag} goes with --data (the private rows the diagnostic compares against)")
    check_outputs([("--out", out)], [("--release", args.release), ("--data", args.data),
                                         ("--domain", args.domain), ("--synthetic", args.synthetic)])
    release = load_release(args.release)
    domain = Domain.load(args.domain) if args.domain else release.domain
    png_dir: str | bool = False if args.no_png else (args.png_dir or True)
    try:
        write_report(release, out, _read_codes(args.data, domain), synthetic=_read_codes(args.synthetic, domain),
                     png_dir=png_dir, title=args.title, worst=args.worst)
    except MissingExtraError as exc:
        return fail(f"{exc} (the '{EXTRA}' extra)", 2)
    folder = "" if png_dir is False else f" and its PNGs in {args.png_dir or out.with_name(out.stem + '_files')}"
    print(f"wrote {out}{folder}")
    if args.data:
        print(f"warning: {out} holds a NON-PRIVATE diagnostic computed from {args.data}: for your eyes only "
              "(written owner-only); do not publish it", file=sys.stderr)  # never silenced by --quiet
    return 0
