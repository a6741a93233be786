"""``dp-marginals query``: a release's marginal over a few attributes with a standard error per cell
(`aim.query`), as a CSV: one row per cell, the attributes' values (the spec's labels when the
release has one, codes otherwise), ``count``, ``fraction``, ``se``, ``se_fraction``, ``se_from``
(``measured``: exact from the measurement noise; ``inferred``: a bootstrap of the model fit) and,
with ``--alpha``, the bounds. It reads only the release: no privacy cost. ``--seed`` makes the
bootstrap of an inferred marginal replayable (post-processing of public data, so a seed is safe).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from aim.query import DEFAULT_BOOT
from marginals.files import write_text_atomic

from .common import (add_csv_output_flags, check_outputs, csv_text, load_release, nonnegative_int, note, positive_int,
                     split_names, subcommand)  # fmt: skip


def _alpha(text: str) -> float:
    """argparse type: a number in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``query``; returns the exit code."""
    check_outputs([("--out", args.out)], [("--release", args.release)])
    attrs = split_names(args.attrs)
    if not attrs:
        raise ValueError("--attrs must name at least one attribute (comma-separated)")
    release = load_release(args.release)
    table = release.query(attrs, alpha=args.alpha, n_boot=args.n_boot, random_state=args.seed)
    if table.se_from.iloc[0] == "inferred":
        note(args, f"no measurement holds {attrs}: their standard errors come from {args.n_boot} refits of the "
                   "model (a parametric bootstrap; it does not cover the model's independence assumptions)")
    text = csv_text(table, args.escape_formulas)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    write_text_atomic(args.out, text)
    print(f"wrote {args.out} ({len(table)} cells of {','.join(attrs)}, se {table.se_from.iloc[0]})")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``query`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "query", "a marginal of a release with a standard error per cell",
                   "Write the release's marginal over --attrs, one row per cell, with a standard error: exact from "
                   "the measurement noise where a measurement holds the attributes, a bootstrap of the model fit "
                   "where the model inferred them. Reads only the release (no privacy cost).")  # fmt: skip
    p.add_argument("--release", required=True, metavar="NPZ", help="the release file written by synth")
    p.add_argument("--attrs", required=True, help="the attributes, comma-separated (e.g. age,sex)")
    p.add_argument("--out", metavar="CSV", help="the output CSV (default: print it on stdout)")
    p.add_argument("--alpha", type=_alpha, help="also write lower/upper bounds of nominal coverage 1 - ALPHA "
                                                "(e.g. 0.1 for 90%%)")
    p.add_argument("--n-boot", type=positive_int, default=DEFAULT_BOOT,
                   help=f"bootstrap refits for an inferred marginal (>= 2, default {DEFAULT_BOOT})")
    p.add_argument("--seed", type=nonnegative_int, help="seed of the bootstrap (default: fresh entropy)")
    add_csv_output_flags(p)
    p.set_defaults(func=run)
