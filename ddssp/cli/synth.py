"""``dp-marginals synth``: an AIM release and a synthetic table sampled from its model.

Three inputs: a CSV of codes with its public ``--domain``; a raw CSV with a public ``--spec``
(synthetic rows are decoded back to values); or a raw CSV alone, whose spec is inferred under DP
and charged to the release's own ledger (`synth_raw`; ``--schema`` declares what is public).
Without ``--data`` it runs on a data set shipped with the package (``--dataset``, Adult by default).

    dp-marginals synth --data codes.csv --domain domain.json --epsilon 1 --out synth.csv --release r.npz
    dp-marginals synth --data raw.csv --epsilon 1 --out synth.csv --release r.npz [--spec-budget 0.05]

Person-level privacy: ``--unit COLUMN --max-rows-per-unit K`` (both or neither) protects every
value of COLUMN (e.g. a person id) with all its rows, keeping at most K rows per value (a keyed
random choice; `marginals.units`); every count's noise grows K-fold. COLUMN is read from --data
(a header row is needed) and never released. With a raw CSV alone it needs a --schema that
leaves nothing to infer (the DP spec inference is priced for one row).

A raw CSV without a header row needs its column names: ``--columns a,b,c`` or a ``--schema``
listing them in file order, as many as the file has columns. Careless input warns on stderr, also
under ``--quiet`` (`ddssp.cli.guards`): a header that looks like data, a first row that looks like a
header, a ``--delta`` above 1e-3, a release that is mostly noise. So do the rows the spec leaves
out: each "drop" rule's public statement (`marginals.Discretizer.excluded`, also in the summary).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any, Callable

from aim import AIM, all_k_way, normalize_workload, workload_error
from aim.raw import SPEC_SHARE, synthesize, with_rules
from aim.targets import check_targets, check_targets_in
from marginals.limits import check_synthetic_size
from marginals.dataset import DataError, Dataset, read_csv_file
from marginals.datasets import CODEBOOKS, DATASETS
from marginals.domain import Domain
from marginals.files import AtomicOutputs, read_json, write_text_atomic
from marginals.privacy import cdp_rho
from marginals.randomness import sampling_rng
from marginals.rules import compile_rules
from marginals.spec.discretize import Discretizer
from marginals.spec.infer import SpecInferenceWarning
from marginals.spec.public import DEFAULT_BINS
from marginals.units import split_unit

from .analysis import add_analysis_flags, analysis_estimator
from .common import (
    Renamed, add_csv_output_flags, check_outputs, csv_text, nonnegative_int, note, positive_float, positive_int,
    private_note, row_count, share, subcommand,
)
from .guards import check_delta, check_release_size, warn
from .raw_csv import add_raw_csv_flags, encode_raw, raw_error, read_raw, read_raw_alone

# --- the input -----------------------------------------------------------------------------------------


def input_name(args: argparse.Namespace) -> str:
    """The name of the input (for the default output paths): the --data file's stem or the data set's name."""
    return Path(args.data).stem if args.data else args.dataset


def load_input(args: argparse.Namespace) -> tuple[Dataset, Any]:
    """(coded dataset, discretizer or None) from --data/--domain, --data/--spec or a shipped data set (with its codebook)."""
    if args.data:
        if args.spec and args.domain:
            raise ValueError("give --domain (a CSV of codes) or --spec (a CSV of raw values), not both")
        if args.spec:
            disc = Discretizer.load(args.spec)
            return encode_raw(args, disc), disc
        if not args.domain:
            raise ValueError("--data needs --domain (the public domain.json) or --spec (a discretization spec)")
        return Dataset.from_csv(args.data, Domain.load(args.domain)), None
    if args.domain or args.spec:
        raise ValueError("--domain and --spec describe a --data file; give --data too")
    return DATASETS[args.dataset](), CODEBOOKS[args.dataset]()  # its codebook: the synthetic rows come out labelled


def unit_options(args: argparse.Namespace) -> dict:
    """--unit and --max-rows-per-unit as AIM's keywords ({} without them); both or neither."""
    if (args.unit is None) != (args.max_rows_per_unit is None):
        raise ValueError("--unit COLUMN and --max-rows-per-unit K go together: the column that identifies a person "
                         "(or other privacy unit) and the most rows one may contribute")
    return {} if args.unit is None else {"unit": args.unit, "max_rows_per_unit": args.max_rows_per_unit}


def load_unit_input(args: argparse.Namespace, column: str) -> tuple[Dataset, Any, Any]:
    """(coded dataset without the unit column, discretizer or None, unit id of every row) from --data
    with --domain or --spec; the unit column is split off before anything is coded."""
    if not args.data or not (args.domain or args.spec):
        raise ValueError("--unit needs --data (with --domain, --spec or a complete --schema) holding the unit column")
    if args.no_header:
        raise ValueError("--unit names a column of a header row: not with --no-header")
    if args.spec:
        if args.domain:
            raise ValueError("give --domain (a CSV of codes) or --spec (a CSV of raw values), not both")
        disc = Discretizer.load(args.spec)
        frame, ids = split_unit(read_raw(args, disc), column)
        try:
            codes = disc.transform_df(frame, extra="drop" if args.drop_extra else "error")
        except DataError as exc:
            raise raw_error(args, exc) from None
        return Dataset(codes, disc.domain), disc, ids[codes.index.to_numpy()]
    frame, ids = split_unit(read_csv_file(args.data, dtype={column: str}), column)  # ids as text, whatever other rows hold
    try:
        return Dataset(frame, Domain.load(args.domain)), None, ids
    except DataError as exc:
        raise DataError(f"{args.data}: {exc}", detail=exc.detail) from None


def read_workload(args: argparse.Namespace, domain: Domain) -> Any:
    """The --workload file's cliques (or [clique, weight] pairs), checked against ``domain``; None without one."""
    if not args.workload:
        return None
    raw = read_json(args.workload, "workload file")
    if not isinstance(raw, list):
        raise ValueError(f"{args.workload}: a workload file holds a JSON list of cliques or [clique, weight] pairs")
    try:
        normalize_workload(domain, raw)  # validated here so that the error names the file
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{args.workload}: {exc}") from None
    return raw  # cliques or [clique, weight] pairs: AIM's normalize_workload reads both


def target_names(args: argparse.Namespace) -> list[str] | None:
    """The --target names (repeatable, each comma-separated), in order; None without any."""
    if not args.target:
        return None
    names = [name.strip() for value in args.target for name in value.split(",")]
    if any(not name for name in names):
        raise ValueError(f"--target: an empty attribute name in {args.target!r}")
    return names


def read_targets(args: argparse.Namespace, domain: Domain) -> list[str] | None:
    """The --target names checked against ``domain`` (public; before AIM reads a row)."""
    names = target_names(args)
    if names is None:
        return None
    try:
        check_targets_in(domain, check_targets(names))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--target: {exc}") from None
    return names


def read_rules(args: argparse.Namespace) -> list | None:
    """--rules: a JSON list of public rules (raw values with a spec, codes with --domain), or None."""
    if not getattr(args, "rules", None):
        return None
    rules = read_json(args.rules, "rules file")
    if not isinstance(rules, list):
        raise ValueError(f"{args.rules}: a rules file holds a JSON list of rules, got {type(rules).__name__}")
    return rules


def rule_constraints(args: argparse.Namespace, domain: Domain, disc: Discretizer | None) -> tuple[Any, Any]:
    """(discretizer with --rules added, AIM's constraints over codes or None): rules in raw values go
    through the spec (its own "rules" included), rules of a --domain run are over codes."""
    rules = read_rules(args)
    try:
        if disc is not None:
            disc = with_rules(disc, rules)
            return disc, disc.rules or None
        if rules:
            compile_rules(domain, rules)  # errors name the rule before any row is counted
        return disc, rules
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{args.rules or args.spec}: {exc}") from None


def print_evaluation(data: Any, model: Any, synthetic: Any) -> None:
    """The --evaluate line: workload errors of the model and the synthetic rows against the private rows."""
    workload = all_k_way(data.domain)
    print(f"workload error (NOT private: computed on the private rows; mean L1 over {len(workload)} 2-way "
          f"marginals): model {workload_error(data, model, workload):.4f}, "
          f"synthetic {workload_error(data, synthetic, workload):.4f}")  # fmt: skip


# --- codes, or raw values with a public spec -------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run ``synth``; returns the exit code."""
    cdp_rho(args.epsilon, args.delta)  # validates the budget before any data is read
    check_delta(args.delta)
    unit_options(args)  # --unit and --max-rows-per-unit: both or neither
    out_path = Path(args.out or f"results/{input_name(args)}-eps{args.epsilon:g}-synthetic.csv")
    release_path = Path(args.release or f"results/{input_name(args)}-eps{args.epsilon:g}-release.npz")
    check_outputs([("--out", out_path), ("--release", release_path)],
                  [("--data", args.data), ("--domain", args.domain), ("--spec", args.spec), ("--workload", args.workload),
                   ("--schema", args.schema), ("--rules", args.rules)])  # fmt: skip
    if args.data and not args.domain and not args.spec:  # raw values alone: the spec is inferred under DP
        return synth_raw(args, out_path, release_path, lambda message: note(args, message))
    if args.schema or args.spec_budget is not None or args.columns:
        raise ValueError("--schema, --spec-budget and --columns are for a raw --data without --spec or --domain")
    units = unit_options(args)
    data, disc, ids = load_unit_input(args, args.unit) if units else (*load_input(args), None)
    disc, constraints = rule_constraints(args, data.domain, disc)
    if args.rows is not None:  # checked before AIM runs, not after
        check_synthetic_size(args.rows, len(data.domain))
    note(args, f"{input_name(args)}: {len(data.domain)} attributes")
    private_note(args, f"{input_name(args)}: {len(data):,} rows")
    targets = read_targets(args, data.domain)
    analysis = analysis_estimator(args, targets, data.domain)
    mechanism = AIM(args.epsilon, args.delta, workload=read_workload(args, data.domain),
                    max_model_size=args.max_model_size, max_cells=args.max_cells, insecure_seed=args.insecure_seed,
                    targets=targets, constraints=constraints, progress=not args.quiet,
                    analysis_share=args.analysis_share if analysis is not None else None, **units)  # fmt: skip
    spec = None if disc is None else disc.with_exclusions()  # stated before the analysis fits itself to the release
    release = mechanism.run(data, units=ids, analysis=analysis, spec=spec)
    rows_rng = sampling_rng(args.sample_seed)  # post-processing of the public model: a seed is safe here
    synthetic = release.synthetic_codes(args.rows, rng=rows_rng)
    disc = spec  # the release stores its public spec (its "drop" rules stated); rows come back readable
    out = synthetic if disc is None else disc.inverse_transform(synthetic, rng=rows_rng, numeric=args.numeric, typed=True)
    with AtomicOutputs() as outputs:  # the release and the CSV: both or neither
        release.save(outputs.stage(release_path))
        write_text_atomic(outputs.stage(out_path), csv_text(out, args.escape_formulas))
    print(release.summary())  # no run time: it depends on the private rows (their number, the counting)
    warn_excluded(disc)
    if args.evaluate:
        print_evaluation(data, release.model, synthetic)
    print(f"wrote {release_path} and {out_path} ({len(out):,} synthetic rows)")
    check_release_size(release, args.epsilon)
    return 0


def warn_excluded(disc: Discretizer | None) -> None:
    """Each public statement of the spec about rows it leaves out, on stderr (also under --quiet)."""
    for statement in [] if disc is None else disc.excluded():
        warn(f"rows left out of the release: {statement['statement']}")


# --- raw values alone: the spec inferred under DP ----------------------------------------------------------


def describe_spec(spec: dict) -> str:
    """One line per spec: each column's categories count or numeric range."""
    parts = []
    for name, col in spec["columns"].items():
        if col["type"] == "categorical":
            k = len(col["categories"])
            parts.append(f"{name}: {k} {'category' if k == 1 else 'categories'}")
        else:
            edges = col.get("edges") or [col["lo"], col["hi"]]
            parts.append(f"{name}: [{edges[0]:g}, {edges[-1]:g}]")
    return "; ".join(parts)


def synth_raw(args: argparse.Namespace, out_path: Path, release_path: Path, say: Callable[[str], None]) -> int:
    """``synth`` on a raw CSV without a spec: DP spec + AIM on one ledger, readable synthetic rows."""
    raw = read_raw_alone(args)
    spec_share = SPEC_SHARE if args.spec_budget is None else args.spec_budget
    say(f"{Path(args.data).stem}: raw CSV read as text, {raw.shape[1]} columns; no --spec: inferring the spec "
        f"under DP with {100 * spec_share:g}% of the budget (--spec-budget), charged to the release's ledger")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecInferenceWarning)
        try:
            release, synthetic = synthesize(
                raw, args.epsilon, args.delta, schema=args.schema, spec_share=spec_share, bins=args.bins,
                rows=args.rows, numeric=args.numeric, insecure_seed=args.insecure_seed, sample_seed=args.sample_seed,
                max_model_size=args.max_model_size, max_cells=args.max_cells, progress=not args.quiet,
                targets=target_names(args), show_private_values=getattr(args, "show_private_values", False),
                rules=read_rules(args), analysis=analysis_estimator(args, target_names(args), None),
                **({"analysis_share": args.analysis_share} if args.analysis else {}),
                **unit_options(args),
            )
        except DataError as exc:  # a rule of the schema failed on the rows: checked before any budget is spent
            raise ValueError(f"{args.data}: {exc}") from None
    for w in caught:
        say(f"warning: {w.message}")
    with AtomicOutputs() as outputs:
        release.save(outputs.stage(release_path))
        write_text_atomic(outputs.stage(out_path), csv_text(synthetic, args.escape_formulas))
    print(f"spec (public: DP-derived, stored in the release): {describe_spec(release.spec)}")
    print(release.summary())
    warn_excluded(release.discretizer)
    if args.evaluate:
        coded = release.discretizer.transform(raw.set_axis([str(c) for c in raw.columns], axis=1), extra="drop")
        print_evaluation(coded, release.model, release.synthetic_codes(rng=args.sample_seed))
    print(f"wrote {release_path} and {out_path} ({len(synthetic):,} synthetic rows)")
    check_release_size(release, args.epsilon)
    return 0


# --- the parser ----------------------------------------------------------------------------------------------


def add_input_flags(p: argparse.ArgumentParser) -> None:
    """What to read: --data with --domain, --spec or neither (raw: --schema, --spec-budget, ...), or --dataset."""
    p.add_argument("--data", metavar="CSV", help="CSV of integer codes (with --domain) or of raw values (with --spec, "
                                                 "or alone: the spec is then inferred under DP, on the same budget)")
    p.add_argument("--domain", metavar="JSON", help="the public domain.json of --data (column -> number of levels)")
    p.add_argument("--spec", metavar="JSON",
                   help="a public discretization spec for raw --data; synthetic rows are decoded back to values")
    p.add_argument("--numeric", choices=["uniform", "midpoint", "interval"], default="uniform",
                   help="raw data: decoded numeric bins as values drawn inside the bin (default; following the spec's DP "
                        "density when it has one, else uniformly), "
                        "bin midpoints, or interval labels")
    p.add_argument("--decode", action=Renamed,
                   const="--numeric uniform|midpoint|interval (--decode is discretize's CSV of codes)")
    add_raw_csv_flags(p, "raw data: ")
    p.add_argument("--schema", help="raw --data without --spec: a public schema (JSON: names, types, categories, "
                                    "bounds); what it leaves open is inferred under DP")
    p.add_argument("--spec-budget", type=share, default=None,
                   help=f"raw --data without --spec: share of the privacy budget (rho) the DP spec inference may "
                        f"spend (default {SPEC_SHARE:g}); AIM gets the rest")
    p.add_argument("--columns", help="comma-separated column names of a raw CSV read with --no-header")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS, help=f"bins per inferred numeric column (default {DEFAULT_BINS})")
    p.add_argument("--dataset", choices=sorted(DATASETS), default="adult",
                   help="data set shipped with the package, used when --data is not given (default adult: "
                        "the UCI Adult table, 47,842 rows)")


def add_release_flags(p: argparse.ArgumentParser) -> None:
    """The release's budget and AIM's settings, the seeds, the outputs."""
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy budget epsilon of the release, > 0 (default 1)")
    p.add_argument("--delta", type=float, default=1e-9,
                   help="privacy budget delta of the release, in (0, 1); keep it far below 1/rows (default 1e-9)")
    p.add_argument("--workload", metavar="JSON",
                   help="JSON list of cliques or [clique, weight] pairs (default: all 2-way)")
    p.add_argument("--target", action="append", metavar="NAME[,NAME...]",
                   help="regression target(s) the release is made for (repeatable or comma-separated): every "
                        "(attribute, target) pair is measured first and the rounds favour what a regression on "
                        "them needs; the release records them")
    add_analysis_flags(p)
    p.add_argument("--rules", metavar="JSON",
                   help="public rules (JSON list; README 'Public rules'): combinations that cannot occur, kept as "
                        "structural zeros so no synthetic row breaks them; raw values with a spec (added to the "
                        "spec's own \"rules\"), codes with --domain; free (no budget), stored in the release")
    p.add_argument("--unit", metavar="COLUMN",
                   help="person-level privacy: the column of --data that identifies a person (or other privacy "
                        "unit); all rows of one value are protected together; the column is never released. "
                        "Needs --max-rows-per-unit")
    p.add_argument("--max-rows-per-unit", type=positive_int, default=None, metavar="K",
                   help="with --unit: the most rows one unit may contribute; rows beyond K are dropped (a keyed "
                        "random choice within the unit) and every count's noise is K times larger")
    p.add_argument("--max-cells", type=positive_int, default=10_000, metavar="N",
                   help="default workload: the 2-way marginals of at most N cells (default 10000)")
    p.add_argument("--max-model-size", type=positive_float, default=80.0, metavar="MB",
                   help="largest graphical model AIM may fit, in MB (default 80)")
    p.add_argument("--insecure-seed", type=nonnegative_int, default=None, metavar="SEED",
                   help="TESTS/BENCHMARKS ONLY: seed the noise; anyone who knows it can undo the noise, and the "
                        "release is marked not private (default: the OS's secure source, nothing to seed)")
    p.add_argument("--sample-seed", type=nonnegative_int, default=None, metavar="SEED",
                   help="seed for drawing the synthetic rows from the released model (post-processing: safe)")
    p.add_argument("--rows", type=row_count, metavar="N",
                   help="synthetic rows, at most 100,000,000 (default: the release's noisy estimate of the total)")
    p.add_argument("--out", metavar="CSV", help="synthetic CSV (default results/<name>-eps<eps>-synthetic.csv)")
    p.add_argument("--release", metavar="NPZ", help="release file (default results/<name>-eps<eps>-release.npz)")
    p.add_argument("--evaluate", action="store_true",
                   help="also print the workload error against the private rows (a NON-PRIVATE diagnostic: it "
                        "spends no budget, for the data holder only; do not publish it)")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``synth`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "synth", "AIM release and synthetic table",
                   "Measure noisy marginals with AIM under (--epsilon, --delta), write the release and a synthetic "
                   "CSV sampled from its model. The input is a CSV of codes (--domain), a raw CSV with a public "
                   "spec (--spec), a raw CSV alone (its spec is inferred under DP, on the same budget) or, without "
                   "--data, a data set shipped with the package.")  # fmt: skip
    add_input_flags(p)
    add_release_flags(p)
    add_csv_output_flags(p)
    p.set_defaults(func=run)
