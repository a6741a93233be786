"""``dp-marginals``: the command line — ``synth`` (AIM release + synthetic table; from codes, from
raw values with a public spec, or from raw values alone with the spec inferred under DP; without
--data it runs on the Adult table shipped with the package), ``fit`` (DD-SSP regression from a
release alone; `ddssp.cli.fit`), ``predict`` (a fitted model's predictions on new rows; `ddssp.cli.predict`),
``inspect`` (what a release holds and what it cost; `ddssp.cli.fit`), ``discretize`` (raw table -> integer codes
with a public spec, and back), ``spec`` (a spec drafted from a public schema; `ddssp.cli.spec`)
and ``report`` (an HTML quality report of a release; `ddssp.cli.report`).

Exit codes: 0 ok, 2 bad input (one line on stderr, no traceback), 1 internal error. ``--debug``
shows the traceback. Progress goes to stderr; ``--quiet`` silences it. No message quotes an exact
count of private rows or a private value unless ``--show-private-values`` (stderr, for the data
holder); the synthetic row count printed is public (``--rows`` or the noisy model total).
CSV outputs have spreadsheet formulas escaped (`ddssp.cli.common.csv_text`; ``--no-escape-formulas``). Files are written atomically;
an output that would overwrite an input is refused before any work; outputs made of several files
(``synth``, ``discretize``) are all-or-nothing; coded data derived from private rows is ``0600``.
Shared helpers are in `ddssp.cli.common`. It lives in ``ddssp`` because it is the end of the import
chain (it needs marginals, aim and ddssp).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aim import AIM, all_k_way, normalize_workload, workload_error
from marginals.dataset import DataError, Dataset, read_csv_file
from marginals.datasets import DATASETS
from marginals.spec.discretize import Discretizer
from marginals.domain import Domain
from marginals.files import AtomicOutputs, read_json, write_text_atomic
from marginals.privacy import cdp_rho
from marginals.randomness import sampling_rng

from .common import (
    BAD_INPUT, PROG, Parser, Renamed, add_csv_output_flags, check_outputs, check_synthetic_size, csv_text, fail,
    nonnegative_int, note, positive_float, positive_int, private_note, row_count, subcommand,
)
from .fit import add_fit, add_inspect
from .predict import add_predict
from .report import add_report_parser
from .spec import add_raw_synth_arguments, add_spec_parser, synth_raw


# --- synth -------------------------------------------------------------------------------------------


def _load_input(args: argparse.Namespace) -> tuple[Dataset, str, Any]:
    """(coded dataset, name, discretizer or None) from --data/--domain, --spec or a shipped data set."""
    if args.data:
        if args.spec and args.domain:
            raise ValueError("give --domain (a CSV of codes) or --spec (a CSV of raw values), not both")
        if args.spec:
            disc = Discretizer.load(args.spec)
            return _encode_raw(args, disc), _input_name(args), disc
        if not args.domain:
            raise ValueError("--data needs --domain (the public domain.json) or --spec (a discretization spec)")
        return Dataset.from_csv(args.data, Domain.load(args.domain)), _input_name(args), None
    if args.domain or args.spec:
        raise ValueError("--domain and --spec describe a --data file; give --data too")
    return DATASETS[args.dataset](), args.dataset, None


def _input_name(args: argparse.Namespace) -> str:
    """The name `_load_input` will give the input (for the default output paths)."""
    return Path(args.data).stem if args.data else args.dataset


def _read_raw(args: argparse.Namespace, disc: Discretizer) -> pd.DataFrame:
    """The raw CSV of --data (header row, or the spec's column order with --no-header)."""
    try:
        df = read_csv_file(args.data, text=True, header=None if args.no_header else "infer", skiprows=args.skip_rows,
                           skipinitialspace=True)
    except DataError as exc:
        if "not a readable CSV" not in str(exc):
            raise
        raise ValueError(f"{exc}; if lines above the data are not CSV rows, skip them with --skip-rows N") from None
    if not args.no_header:
        return df
    names = list(disc.domain.attrs)
    if df.shape[1] != len(names):  # pandas would silently shift or pad the columns under names=
        raise ValueError(f"{args.data}: {df.shape[1]} columns per row but the spec names {len(names)}; with "
                         "--no-header the columns must be the spec's, in its order")
    return df.set_axis(names, axis=1)


#: phrases of library errors that name Python arguments -> the flag that does the same here.
_FLAG_HINTS = (("extra='drop'", "--drop-extra"),)


def _raw_error(args: argparse.Namespace, exc: Exception) -> ValueError:
    """A raw-CSV encoding error as the command line says it: the file first, flags instead of arguments."""
    message = str(exc)
    for argument, flag in _FLAG_HINTS:
        message = message.replace(argument, flag)
    if "missing from the table" in message and not args.no_header:
        message += "; a CSV without a header row needs --no-header (and --skip-rows N for lines above the data)"
    return ValueError(f"{args.data}: {message}")


def _encode_raw(args: argparse.Namespace, disc: Discretizer, out_dir: str | None = None) -> Any:
    """Codes of the raw --data: a `Dataset`, or the transform report after writing them to ``out_dir``."""
    raw = _read_raw(args, disc)
    extra = "drop" if args.drop_extra else "error"
    try:
        return disc.transform(raw, extra=extra) if out_dir is None else disc.write(raw, out_dir, extra=extra)
    except DataError as exc:
        raise _raw_error(args, exc) from None


def _workload(args: argparse.Namespace, domain: Domain) -> Any:
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


def cmd_synth(args: argparse.Namespace) -> int:
    cdp_rho(args.epsilon, args.delta)  # validates the budget before any data is read
    out_path = Path(args.out or f"results/{_input_name(args)}-eps{args.epsilon:g}-synthetic.csv")
    release_path = Path(args.release or f"results/{_input_name(args)}-eps{args.epsilon:g}-release.npz")
    check_outputs([("--out", out_path), ("--release", release_path)],
                  [("--data", args.data), ("--domain", args.domain), ("--spec", args.spec), ("--workload", args.workload),
                   ("--schema", args.schema)])
    if args.data and not args.domain and not args.spec:  # raw values alone: the spec is inferred under DP
        return synth_raw(args, out_path, release_path, lambda message: note(args, message))
    if args.schema or args.spec_budget is not None or args.columns:
        raise ValueError("--schema, --spec-budget and --columns are for a raw --data without --spec or --domain")
    data, name, disc = _load_input(args)
    if args.rows is not None:  # checked before AIM runs, not after
        check_synthetic_size(args.rows, len(data.domain))
    note(args, f"{name}: {len(data.domain)} attributes")
    private_note(args, f"{name}: {len(data):,} rows")
    mechanism = AIM(
        args.epsilon,
        args.delta,
        workload=_workload(args, data.domain),
        max_model_size=args.max_model_size,
        max_cells=args.max_cells,
        insecure_seed=args.insecure_seed,
        progress=not args.quiet,
    )
    release = mechanism.run(data)
    rows_rng = sampling_rng(args.sample_seed)  # post-processing of the public model: a seed is safe here
    synthetic = release.synthetic_codes(args.rows, rng=rows_rng)
    if disc is not None:
        release = release.with_spec(disc)  # the release stores its public spec; rows come back readable
    out = synthetic if disc is None else disc.inverse_transform(synthetic, rng=rows_rng, numeric=args.numeric, typed=True)
    with AtomicOutputs() as outputs:  # the release and the CSV: both or neither
        release.save(outputs.stage(release_path))
        write_text_atomic(outputs.stage(out_path), csv_text(out, args.escape_formulas))
    print(release.summary())  # no run time: it depends on the private rows (their number, the counting)
    if args.evaluate:
        workload = all_k_way(data.domain)
        print(
            f"workload error (NOT private: computed on the private rows; mean L1 over {len(workload)} 2-way "
            f"marginals): model {workload_error(data, release.model, workload):.4f}, "
            f"synthetic {workload_error(data, synthetic, workload):.4f}"
        )
    print(f"wrote {release_path} and {out_path} ({len(out):,} synthetic rows)")
    return 0


# --- discretize --------------------------------------------------------------------------------------


def cmd_discretize(args: argparse.Namespace) -> int:
    if args.decode:
        out = Path(args.out or Path(args.decode).with_suffix("").as_posix() + "-decoded.csv")
        check_outputs([("--out", out)], [("--decode", args.decode), ("--spec", args.spec)])
    elif args.data and args.out_dir:
        folder = Path(args.out_dir)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{folder}: --out-dir names an existing file, not a folder")
        check_outputs([("--out-dir", folder / n) for n in ("data.csv", "domain.json", "discretizer.json")],
                      [("--data", args.data), ("--spec", args.spec)])
    disc = Discretizer.load(args.spec)
    if args.decode:
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
    if not args.data or not args.out_dir:
        raise ValueError("discretize needs --data and --out-dir (or --decode CODES.csv to map codes back)")
    report = _encode_raw(args, disc, args.out_dir)
    print(f"wrote {args.out_dir}/data.csv, domain.json and discretizer.json")
    private_note(args, f"{args.data}: {report['rows']:,} rows; transform report "
                 + json.dumps({k: report[k] for k in ("clipped", "other", "missing")}))
    return 0


# --- the parser --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser. Each subcommand is one ``_add_<name>(sub, common)`` call below: it adds its
    parser (with the ``common`` flags), documents every flag and sets ``func`` to its ``cmd_<name>``."""
    parser = Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", action="store_true", help="no progress or notes on stderr")
    common.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (it may quote private values: for the data holder)")
    common.add_argument("--show-private-values", action="store_true",
                        help="also print exact private counts (rows read, dropped, clipped) to stderr: for the data "
                             "holder only, never publish that output (default: no message quotes them)")
    _add_synth(sub, common)
    _add_discretize(sub, common)
    add_fit(sub, common)
    add_inspect(sub, common)
    add_spec_parser(sub, [common])
    add_report_parser(sub, [common])
    add_predict(sub, common)
    return parser


def _add_raw_csv_flags(p: argparse.ArgumentParser, when: str = "") -> None:
    """--no-header, --skip-rows and --drop-extra: how to read a raw CSV (``synth --spec``, ``discretize``)."""
    p.add_argument("--no-header", action="store_true",
                   help=f"{when}the raw CSV has no header row: its columns are in the spec's order")
    p.add_argument("--skip-rows", type=nonnegative_int, default=0, metavar="N",
                   help=f"{when}lines to skip at the top of the raw CSV, e.g. a title line (default 0)")
    p.add_argument("--drop-extra", action="store_true",
                   help=f"{when}ignore raw columns the spec does not name (default: they are an error)")


def _add_synth(sub: Any, common: argparse.ArgumentParser) -> None:
    p = subcommand(sub, common, "synth", "AIM release and synthetic table",
                    "Measure noisy marginals with AIM under (--epsilon, --delta), write the release "
                    "and a synthetic CSV sampled from its model.")
    p.add_argument("--data", metavar="CSV", help="CSV of integer codes (with --domain) or of raw values (with --spec, "
                                                 "or alone: the spec is then inferred under DP, on the same budget)")
    p.add_argument("--domain", metavar="JSON", help="the public domain.json of --data (column -> number of levels)")
    p.add_argument("--spec", metavar="JSON",
                   help="a public discretization spec for raw --data; synthetic rows are decoded back to values")
    p.add_argument("--numeric", choices=["uniform", "midpoint", "interval"], default="uniform",
                   help="raw data: decoded numeric bins as values drawn uniformly inside the bin (default), "
                        "bin midpoints, or interval labels")
    p.add_argument("--decode", action=Renamed,
                   const="--numeric uniform|midpoint|interval (--decode is discretize's CSV of codes)")
    _add_raw_csv_flags(p, "raw data: ")
    add_raw_synth_arguments(p)
    p.add_argument("--dataset", choices=sorted(DATASETS), default="adult",
                   help="data set shipped with the package, used when --data is not given (default adult: "
                        "the UCI Adult table, 47,842 rows)")
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy budget epsilon of the release, > 0 (default 1)")
    p.add_argument("--delta", type=float, default=1e-9,
                   help="privacy budget delta of the release, in (0, 1); keep it far below 1/rows (default 1e-9)")
    p.add_argument("--workload", metavar="JSON",
                   help="JSON list of cliques or [clique, weight] pairs (default: all 2-way)")
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
    add_csv_output_flags(p)
    p.set_defaults(func=cmd_synth)


def _add_discretize(sub: Any, common: argparse.ArgumentParser) -> None:
    p = subcommand(sub, common, "discretize", "raw table -> integer codes (public spec), or back",
                    "Encode a raw CSV into codes + domain.json with a public spec (--data, --out-dir), "
                    "or decode a CSV of codes back to readable values (--decode).")
    p.add_argument("--spec", required=True, metavar="JSON", help="the discretization spec (see marginals.spec.discretize)")
    p.add_argument("--data", metavar="CSV", help="raw CSV to encode")
    _add_raw_csv_flags(p)
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
    p.set_defaults(func=cmd_discretize)


def _private_detail(exc: BaseException) -> str | None:
    """The private detail (exact count, cell value, row) a `DataError` in ``exc``'s chain holds."""
    seen = 0
    while exc is not None and seen < 8:
        if getattr(exc, "detail", None):
            return exc.detail
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, already reported)
        return int(exc.code or 0)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BAD_INPUT as exc:
        if args.debug:
            raise
        message = exc
        if isinstance(exc, OSError) and exc.filename is not None:
            message = f"{exc.filename}: {exc.strerror}"
        detail = _private_detail(exc)
        if detail:
            private_note(args, detail)
        return fail(message, 2)
    except Exception as exc:  # an internal error: say so, keep it to one line unless --debug
        if args.debug:
            raise
        return fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", 1)


if __name__ == "__main__":
    sys.exit(main())
