"""``dp-marginals spec``: a discretization spec drafted from a public schema (column names, types,
declared categories, bounds). It reads no private rows; what the schema leaves open is listed on
stderr, to be filled in by hand or inferred under DP by ``synth --schema`` on a raw CSV.

    dp-marginals spec --schema public.json --out spec.json
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from marginals.files import write_text_atomic
from marginals.spec.public import DEFAULT_BINS, draft_spec, spec_gaps

from .common import check_outputs, subcommand


def run(args: argparse.Namespace) -> int:
    """Run ``spec``; returns the exit code."""
    check_outputs([("--out", args.out)], [("--schema", args.schema)])
    draft = draft_spec(args.schema, bins=args.bins)
    text = json.dumps(draft, indent=2) + "\n"
    if args.out:
        write_text_atomic(args.out, text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    gaps = {c: g for c, g in spec_gaps(draft).items() if g}
    if gaps:
        print(f"{len(gaps)} of {len(draft['columns'])} column(s) need more: "
              + ", ".join(f"{c} ({'/'.join(g)})" for c, g in gaps.items())
              + ". Fill them in, or let `synth --schema` infer them under DP (charged to the release's budget).",
              file=sys.stderr)  # fmt: skip
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``spec`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "spec", "draft a discretization spec from a public schema",
                   "Draft a discretization spec from a public schema (no private rows are read) and list the "
                   "columns it leaves open.")  # fmt: skip
    p.add_argument("--schema", required=True, help="public schema (JSON): column names, types, declared categories, bounds")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS, help=f"equal bins for numeric columns with bounds (default {DEFAULT_BINS})")
    p.add_argument("--out", help="write the draft here (default: print it)")
    p.set_defaults(func=run)
