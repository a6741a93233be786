"""The command line's spec side: ``dp-marginals spec`` (a spec drafted from a public schema) and
``synth`` on a raw CSV without a spec (the spec inferred under DP, charged to the release's ledger).

    dp-marginals spec --schema public.json --out spec.json
    dp-marginals synth --data raw.csv --epsilon 1 --out synth.csv --release r.npz [--spec-budget 0.05]

A raw CSV without a header row needs its column names: ``--columns a,b,c`` or a ``--schema``
listing them in file order.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from aim import all_k_way, workload_error
from aim.raw import SPEC_SHARE, synthesize
from marginals.dataset import DataError, read_csv_file
from marginals.files import AtomicOutputs, write_text_atomic
from marginals.spec.infer import SpecInferenceWarning
from marginals.spec.public import DEFAULT_BINS, draft_spec, read_schema, spec_gaps

from .common import check_outputs, csv_text


def share(text: str) -> float:
    """argparse type: a fraction strictly between 0 and 1 (the spec's share of the budget)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not (0 < value < 1):
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return value


def add_raw_synth_arguments(p: argparse.ArgumentParser) -> None:
    """The ``synth`` options of the raw path (no --spec, no --domain)."""
    p.add_argument("--schema", help="raw --data without --spec: a public schema (JSON: names, types, categories, "
                                    "bounds); what it leaves open is inferred under DP")
    p.add_argument("--spec-budget", type=share, default=None,
                   help=f"raw --data without --spec: share of the privacy budget (rho) the DP spec inference may "
                        f"spend (default {SPEC_SHARE:g}); AIM gets the rest")
    p.add_argument("--columns", help="comma-separated column names of a raw CSV read with --no-header")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS, help=f"bins per inferred numeric column (default {DEFAULT_BINS})")


def add_spec_parser(sub: argparse._SubParsersAction, parents: list) -> None:
    """Register ``dp-marginals spec``."""
    p = sub.add_parser("spec", parents=parents, help="draft a discretization spec from a public schema")
    p.add_argument("--schema", required=True, help="public schema (JSON): column names, types, declared categories, bounds")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS, help=f"equal bins for numeric columns with bounds (default {DEFAULT_BINS})")
    p.add_argument("--out", help="write the draft here (default: print it)")
    p.set_defaults(func=cmd_spec)


def cmd_spec(args: argparse.Namespace) -> int:
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
              file=sys.stderr)
    return 0


def _names(args: argparse.Namespace) -> list[str] | None:
    """Column names of a headerless raw CSV (--columns or the schema's order); None with a header row."""
    if not args.no_header:
        if args.columns:
            raise ValueError("--columns names the columns of a CSV read with --no-header")
        return None
    if args.columns:
        return [c.strip() for c in args.columns.split(",") if c.strip()]
    if args.schema:
        return list(read_schema(args.schema)["columns"])
    raise ValueError("a raw CSV read with --no-header needs its column names: --columns a,b,c or a --schema")


def _describe(spec: dict) -> str:
    parts = []
    for name, col in spec["columns"].items():
        if col["type"] == "categorical":
            k = len(col["categories"])
            parts.append(f"{name}: {k} {'category' if k == 1 else 'categories'}")
        else:
            edges = col.get("edges") or [col["lo"], col["hi"]]
            parts.append(f"{name}: [{edges[0]:g}, {edges[-1]:g}]")
    return "; ".join(parts)


def synth_raw(args: argparse.Namespace, out_path: Path, release_path: Path, note) -> int:
    """``synth`` on a raw CSV without a spec: DP spec + AIM on one ledger, readable synthetic rows."""
    names = _names(args)
    raw = read_csv_file(args.data, text=True, header=None if names else "infer", names=names,
                        skiprows=args.skip_rows, skipinitialspace=True)
    if raw.empty:
        raise ValueError(f"{args.data}: no data rows (a raw CSV needs a header row and at least one row)")
    spec_share = SPEC_SHARE if args.spec_budget is None else args.spec_budget
    note(f"{Path(args.data).stem}: raw CSV read as text, {raw.shape[1]} columns; no --spec: inferring the spec "
         f"under DP with {100 * spec_share:g}% of the budget (--spec-budget), charged to the release's ledger")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecInferenceWarning)
        try:
            release, synthetic = synthesize(
                raw, args.epsilon, args.delta, schema=args.schema, spec_share=spec_share, bins=args.bins,
                rows=args.rows, numeric=args.numeric, insecure_seed=args.insecure_seed, sample_seed=args.sample_seed,
                max_model_size=args.max_model_size, max_cells=args.max_cells, progress=not args.quiet,
                show_private_values=getattr(args, "show_private_values", False),
            )
        except DataError as exc:  # a rule of the schema failed on the rows: checked before any budget is spent
            raise ValueError(f"{args.data}: {exc}") from None
    for w in caught:
        note(f"warning: {w.message}")
    with AtomicOutputs() as outputs:
        release.save(outputs.stage(release_path))
        write_text_atomic(outputs.stage(out_path), csv_text(synthetic, args.escape_formulas))
    print(f"spec (public: DP-derived, stored in the release): {_describe(release.spec)}")
    print(release.summary())
    if args.evaluate:
        coded = release.discretizer.transform(raw.set_axis([str(c) for c in raw.columns], axis=1), extra="drop")
        workload = all_k_way(coded.domain)
        codes = release.synthetic_codes(rng=args.sample_seed)
        print(f"workload error (NOT private: computed on the private rows; mean L1 over {len(workload)} 2-way "
              f"marginals): model {workload_error(coded, release.model, workload):.4f}, "
              f"synthetic {workload_error(coded, codes, workload):.4f}")
    print(f"wrote {release_path} and {out_path} ({len(synthetic):,} synthetic rows)")
    return 0

