"""``dp-marginals``: the command line — ``synth`` (AIM release + synthetic table; from codes, from
raw values with a public spec, or from raw values alone with the spec inferred under DP; without
--data it runs on the Adult table shipped with the package), ``fit`` (DD-SSP regression from a
release alone), ``predict`` (a fitted model's predictions on new rows; `ddssp.cli_predict`),
``inspect`` (what a release holds and what it cost), ``discretize`` (raw table -> integer codes
with a public spec, and back), ``spec`` (a spec drafted from a public schema; `ddssp.cli_spec`)
and ``report`` (an HTML quality report of a release; `ddssp.cli_report`).

Exit codes: 0 ok, 2 bad input (one line on stderr, no traceback), 1 internal error. ``--debug``
shows the traceback. Progress goes to stderr; ``--quiet`` silences it. Files are written atomically;
an output that would overwrite an input is refused before any work; outputs made of several files
(``synth``, ``discretize``) are all-or-nothing; coded data derived from private rows is ``0600``.
It lives in ``ddssp`` because it is the end of the import chain (it needs marginals, aim and ddssp).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from aim import AIM, Release, all_k_way, normalize_workload, workload_error
from aim.release import NotPrivateWarning
from marginals.dataset import DataError, Dataset, read_csv_file
from marginals.datasets import DATASETS
from marginals.discretize import Discretizer
from marginals.domain import AtomicOutputs, Domain, read_json, write_text_atomic
from marginals.privacy import cdp_rho
from marginals.randomness import sampling_rng

from .cli_predict import add_predict
from .cli_report import add_report_parser
from .cli_spec import add_raw_synth_arguments, add_spec_parser, synth_raw
from .encoding import CATEGORICAL_PRESETS, EncodingOptions, categorical_preset
from .estimators import DDSSPLinearRegression, DDSSPLogisticRegression

PROG = "dp-marginals"
# Exceptions that mean "the input is wrong": ValueError covers DataError, SpecError, JSON, CSV and
# release-format errors and unknown attribute names (UnknownAttributeError); the OSErrors are
# paths that cannot be read or written. Anything else (a KeyError included) is an internal error.
BAD_INPUT = (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SystemExit(_fail(f"{self.prog}: {message} (see --help)", 2))


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: " + " ".join(str(message).split()), file=sys.stderr)
    return code


def _note(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr, flush=True)


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds, lines to skip)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (row and cell counts)."""
    value = nonnegative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be a positive integer, got 0")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (sizes in MB)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (through links and relative paths; either may not exist)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: Sequence[tuple[str, Any]], inputs: Sequence[tuple[str, Any]]) -> None:
    """Refuse, before any work, an output that would overwrite an input, two outputs that are the
    same file, and an output that is a folder. Both lists hold (flag, path or None)."""
    outputs = [(flag, p) for flag, p in outputs if p is not None]
    for i, (flag, out) in enumerate(outputs):
        for in_flag, source in inputs:
            if source is not None and _same_file(out, source):
                raise ValueError(f"{out}: the output {flag} would overwrite the input {in_flag}; write elsewhere")
        for other_flag, other in outputs[:i]:
            if _same_file(out, other):
                raise ValueError(f"{out}: the outputs {other_flag} and {flag} are the same file")
        if os.path.isdir(out):
            raise ValueError(f"{out}: the output {flag} is a folder; give a file name")


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
        df = read_csv_file(args.data, header=None if args.no_header else "infer", skiprows=args.skip_rows,
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
        return synth_raw(args, out_path, release_path, lambda message: _note(args, message))
    if args.schema or args.spec_budget is not None or args.columns:
        raise ValueError("--schema, --spec-budget and --columns are for a raw --data without --spec or --domain")
    data, name, disc = _load_input(args)
    _note(args, f"{name}: {len(data):,} rows x {len(data.domain)} attributes")
    mechanism = AIM(
        args.epsilon,
        args.delta,
        workload=_workload(args, data.domain),
        max_model_size=args.max_model_size,
        max_cells=args.max_cells,
        insecure_seed=args.insecure_seed,
        progress=not args.quiet,
    )
    start = time.perf_counter()
    release = mechanism.run(data)
    elapsed = time.perf_counter() - start
    rows_rng = sampling_rng(args.sample_seed)  # post-processing of the public model: a seed is safe here
    synthetic = release.synthetic_codes(args.rows, rng=rows_rng)
    if disc is not None:
        release = release.with_spec(disc)  # the release stores its public spec; rows come back readable
    out = synthetic if disc is None else disc.inverse_transform(synthetic, rng=rows_rng, numeric=args.numeric, typed=True)
    with AtomicOutputs() as outputs:  # the release and the CSV: both or neither
        release.save(outputs.stage(release_path))
        write_text_atomic(outputs.stage(out_path), out.to_csv(index=False))
    print(f"AIM finished in {elapsed:.1f} s")
    print(release.summary())
    if args.evaluate:
        workload = all_k_way(data.domain)
        print(
            f"workload error (NOT private: computed on the private rows; mean L1 over {len(workload)} 2-way "
            f"marginals): model {workload_error(data, release.model, workload):.4f}, "
            f"synthetic {workload_error(data, synthetic, workload):.4f}"
        )
    print(f"wrote {release_path} and {out_path} ({len(out):,} synthetic rows)")
    return 0


# --- fit ---------------------------------------------------------------------------------------------


def _fit_result(model: Any, args: argparse.Namespace, release: Release, exclude: list[str]) -> dict:
    result = {
        "release": str(args.release),
        "target": args.target,
        "model": args.model,
        "excluded": exclude,
        "release_epsilon": release.epsilon,
        "release_delta": release.delta,
        "categorical": None if model.categorical is None else list(model.categorical),
        "fit_intercept": bool(model.encoding_.intercept),
        "features": list(model.encoded_feature_names_),  # level labels when the release has a spec
        "coef": [float(c) for c in model.coef_],
        "intercept": float(model.intercept_) if model.encoding_.intercept else None,
    }
    if args.model == "logistic":
        result["classes"] = [c if isinstance(c, str) else int(c) for c in model.classes_]
        result["chebyshev_monomial_coefficients"] = [float(b) for b in model.monomial_coef_]
    return result


def _load_release(path: str) -> Release:
    """`Release.load`, with its not-private warning as one line on stderr (never silenced by --quiet)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NotPrivateWarning)
        release = Release.load(path)
    for w in caught:
        if issubclass(w.category, NotPrivateWarning):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return release


def _g(value: float | None) -> str:
    return "unknown" if value is None else f"{value:g}"  # a release built by hand may lack (eps, delta)


def cmd_fit(args: argparse.Namespace) -> int:
    check_outputs([("--json", args.json)], [("--release", args.release)])
    release = _load_release(args.release)
    exclude = _names(args.exclude)
    if args.target in exclude:
        raise ValueError(f"the target {args.target!r} cannot be excluded")
    source = release.without(exclude) if exclude else release
    if args.target not in source.domain:
        raise ValueError(f"target {args.target!r} is not in the release's domain; attributes are {list(source.domain.attrs)}")
    if args.preset and args.categorical:
        raise ValueError("give --categorical or --preset, not both")
    categorical: Sequence[str] | None = None
    if args.preset:
        categorical = [a for a in categorical_preset(args.preset) if a in source.domain and a != args.target]
    elif args.categorical:
        categorical = _names(args.categorical)
    cls = DDSSPLinearRegression if args.model == "linear" else DDSSPLogisticRegression
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cls(target=args.target, categorical=categorical, encoding=EncodingOptions(intercept=args.intercept)).fit(source)
    for w in caught:
        _note(args, f"warning: {' '.join(str(w.message).split())}")
    result = _fit_result(model, args, release, exclude)
    print(
        f"DD-SSP {args.model} regression of {args.target!r} from {args.release} (release: eps={_g(release.epsilon)}, "
        f"delta={_g(release.delta)}; fitting spends no further privacy)"
    )
    width = max(len(n) for n in result["features"] + ["intercept"])
    for feature, coef in zip(result["features"], result["coef"]):
        print(f"  {feature:<{width}}  {coef: .6f}")
    if result["fit_intercept"]:
        print(f"  {'intercept':<{width}}  {result['intercept']: .6f}")
    else:
        print("  (no intercept column: the paper's encoding has none; --intercept fits one)")
    if args.model == "logistic":
        print(f"  positive class: {args.target} = {result['classes'][1]}")
    if args.json:
        write_text_atomic(args.json, json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


# --- inspect -----------------------------------------------------------------------------------------


def release_report(release: Release) -> dict:
    """What a release holds and what it cost, as a JSON-able dict (used by ``inspect``)."""
    ledger = release.ledger
    return {
        "domain": release.domain.to_dict(),
        "privacy": {
            "rho_budget": ledger.rho,
            "rho_spent": ledger.spent,
            "epsilon": release.epsilon,
            "delta": release.delta,
            "charges": len(ledger.charges),
        },
        "measurements": [{"clique": list(m.clique), "sigma": float(m.sigma), "cells": int(np.size(m.noisy_counts))}
                         for m in release.measurements],
        "model": {"cliques": [list(c) for c in release.model.cliques], "size_mb": release.model.size_mb,
                  "total": release.model.total},
        "rounds": len(release.rounds),
        "annealed": sum(bool(r.get("annealed")) for r in release.rounds),
        "private": release.private,
        "config": {k: v for k, v in release.config.items() if k != "workload"},
        "workload_cliques": len(release.config.get("workload", [])),
    }


def cmd_inspect(args: argparse.Namespace) -> int:
    release = _load_release(args.release)
    report = release_report(release)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    status = "private" if release.private else "NOT PRIVATE (seeded noise source: tests/benchmarks only)"
    print(f"release {args.release}: {len(release.domain)} attributes, {status}")
    print("\n".join([release.ledger.summary(), *release.threshold_lines()]))
    print(f"{report['rounds']} selection rounds ({report['annealed']} annealed); "
          f"workload of {report['workload_cliques']} cliques")
    print(f"model: {len(release.model.cliques)} cliques, {release.model.size_mb:.2f} MB, "
          f"estimated rows {release.model.total:,.0f}")
    print(f"{len(release.measurements)} measurements (clique, sigma, cells):")
    for m in report["measurements"]:
        print(f"  {','.join(m['clique']):<40} sigma={m['sigma']:10.3f}  {m['cells']:>7} cells")
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
        write_text_atomic(out, readable.to_csv(index=False))
        print(f"decoded {len(readable):,} rows of {args.decode} into {out}")
        return 0
    if not args.data or not args.out_dir:
        raise ValueError("discretize needs --data and --out-dir (or --decode CODES.csv to map codes back)")
    report = _encode_raw(args, disc, args.out_dir)
    print(f"wrote {args.out_dir}/data.csv ({report['rows']:,} rows), domain.json and discretizer.json")
    _note(args, "transform report (computed on the private rows: for the data holder, do not publish): "
          + json.dumps({k: report[k] for k in ("clipped", "other", "missing")}))
    return 0


# --- the parser --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser. Each subcommand is one ``_add_<name>(sub, common)`` call below: it adds its
    parser (with the ``common`` flags), documents every flag and sets ``func`` to its ``cmd_<name>``."""
    parser = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", action="store_true", help="no progress or notes on stderr")
    common.add_argument("--debug", action="store_true", help="show the traceback of an error")
    _add_synth(sub, common)
    _add_discretize(sub, common)
    _add_fit(sub, common)
    _add_inspect(sub, common)
    add_spec_parser(sub, [common])
    add_report_parser(sub, [common])
    add_predict(sub, common)
    return parser


class _Renamed(argparse.Action):
    """A flag that was renamed (hidden from --help): using it is a usage error that names the new
    spelling, given as ``const``."""

    def __init__(self, option_strings: Sequence[str], dest: str, const: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", const=const, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        parser.error(f"{option_string} was renamed: use {self.const}")


def _subcommand(sub: Any, common: argparse.ArgumentParser, name: str, summary: str, description: str) -> Any:
    """A subcommand's parser with the ``common`` flags; ``summary`` shows in the command list,
    ``description`` in its own --help."""
    return sub.add_parser(name, parents=[common], help=summary, description=description)


def _add_raw_csv_flags(p: argparse.ArgumentParser, when: str = "") -> None:
    """--no-header, --skip-rows and --drop-extra: how to read a raw CSV (``synth --spec``, ``discretize``)."""
    p.add_argument("--no-header", action="store_true",
                   help=f"{when}the raw CSV has no header row: its columns are in the spec's order")
    p.add_argument("--skip-rows", type=nonnegative_int, default=0, metavar="N",
                   help=f"{when}lines to skip at the top of the raw CSV, e.g. a title line (default 0)")
    p.add_argument("--drop-extra", action="store_true",
                   help=f"{when}ignore raw columns the spec does not name (default: they are an error)")


def _add_synth(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _subcommand(sub, common, "synth", "AIM release and synthetic table",
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
    p.add_argument("--decode", action=_Renamed,
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
    p.add_argument("--rows", type=positive_int, metavar="N",
                   help="synthetic rows (default: the release's estimated total)")
    p.add_argument("--out", metavar="CSV", help="synthetic CSV (default results/<name>-eps<eps>-synthetic.csv)")
    p.add_argument("--release", metavar="NPZ", help="release file (default results/<name>-eps<eps>-release.npz)")
    p.add_argument("--evaluate", action="store_true",
                   help="also print the workload error against the private rows (a non-private diagnostic)")
    p.set_defaults(func=cmd_synth)


def _add_discretize(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _subcommand(sub, common, "discretize", "raw table -> integer codes (public spec), or back",
                    "Encode a raw CSV into codes + domain.json with a public spec (--data, --out-dir), "
                    "or decode a CSV of codes back to readable values (--decode).")
    p.add_argument("--spec", required=True, metavar="JSON", help="the discretization spec (see marginals.discretize)")
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
    p.set_defaults(func=cmd_discretize)


def _add_fit(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _subcommand(sub, common, "fit", "DD-SSP regression from a release alone",
                    "Fit a DD-SSP regression from the marginals of a release (no private rows, "
                    "no further privacy cost) and print its coefficients.")
    p.add_argument("--release", required=True, metavar="NPZ", help="a release file written by synth")
    p.add_argument("--target", required=True, metavar="ATTR", help="the attribute to predict (a column of the release)")
    p.add_argument("--model", choices=["linear", "logistic"], default="linear",
                   help="linear (least squares) or logistic (Chebyshev approximation; a 2-level target) "
                        "(default linear)")
    p.add_argument("--exclude", metavar="ATTRS", help="comma-separated attributes to leave out of the features")
    p.add_argument("--categorical", metavar="ATTRS",
                   help="comma-separated one-hot features (others numeric; default: all one-hot)")
    p.add_argument("--preset", choices=sorted(CATEGORICAL_PRESETS),
                   help="the DD-SSP paper's one-hot features for that data set (instead of --categorical)")
    p.add_argument("--json", metavar="FILE", help="also write the coefficients to this JSON file")
    p.add_argument("--intercept", action="store_true", help="add an intercept column (the paper's encoding has none)")
    p.set_defaults(func=cmd_fit)


def _add_inspect(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _subcommand(sub, common, "inspect", "ledger, measurements, model and rounds of a release",
                    "Print what a release holds and what it cost: the privacy ledger, measurements, "
                    "model cliques and selection rounds.")
    p.add_argument("release", metavar="NPZ", help="a release file written by synth")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=cmd_inspect)


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
        return _fail(message, 2)
    except Exception as exc:  # an internal error: say so, keep it to one line unless --debug
        if args.debug:
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", 1)


if __name__ == "__main__":
    sys.exit(main())
