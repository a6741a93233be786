"""Reading a raw CSV on the command line: with a public spec (``synth --spec``, ``discretize``) or
alone (``synth`` infers its spec), with or without a header row. A headerless file's column names
(the spec's, ``--columns`` or the ``--schema``'s) must match its number of columns; a header row
that looks like data, or a first row that looks like a header, is warned about (`ddssp.cli.guards`)."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from marginals.dataset import DataError, read_csv_file
from marginals.spec.discretize import Discretizer
from marginals.spec.public import read_schema

from .common import nonnegative_int, split_names
from .guards import check_column_count, check_first_row, check_header

#: phrases of library errors that name Python arguments -> the flag that does the same here.
FLAG_HINTS = (("extra='drop'", "--drop-extra"),)


def add_raw_csv_flags(p: argparse.ArgumentParser, when: str = "") -> None:
    """--no-header, --skip-rows and --drop-extra: how to read a raw CSV (``synth --spec``, ``discretize``)."""
    p.add_argument("--no-header", action="store_true",
                   help=f"{when}the raw CSV has no header row: its columns are in the spec's order")
    p.add_argument("--skip-rows", type=nonnegative_int, default=0, metavar="N",
                   help=f"{when}lines to skip at the top of the raw CSV, e.g. a title line (default 0)")
    p.add_argument("--drop-extra", action="store_true",
                   help=f"{when}ignore raw columns the spec does not name (default: they are an error)")


def read_text_csv(args: argparse.Namespace) -> pd.DataFrame:
    """The --data CSV as text cells, with its header row unless --no-header (then columns 0, 1, ...)."""
    try:
        return read_csv_file(args.data, text=True, header=None if args.no_header else "infer",
                             skiprows=args.skip_rows, skipinitialspace=True)  # fmt: skip
    except DataError as exc:
        if "not a readable CSV" in str(exc):
            raise ValueError(f"{exc}; if lines above the data are not CSV rows, skip them with --skip-rows N") from None
        if "duplicate column" in str(exc) and not args.no_header:
            raise ValueError(f"{exc}; if the file has no header row, read it with --no-header") from None
        raise


def read_raw(args: argparse.Namespace, disc: Discretizer) -> pd.DataFrame:
    """The raw CSV of --data (header row, or the spec's column order with --no-header)."""
    df = read_text_csv(args)
    if not args.no_header:
        return df
    names = list(disc.domain.attrs)
    df = check_column_count(args.data, df, names, "the spec")
    check_first_row(args, args.data, df, names)
    return df


def column_names(args: argparse.Namespace) -> list[str] | None:
    """Column names of a headerless raw CSV (--columns or the schema's order); None with a header row."""
    if not args.no_header:
        if args.columns:
            raise ValueError("--columns names the columns of a CSV read with --no-header")
        return None
    if args.columns:
        return split_names(args.columns)
    if args.schema:
        return list(read_schema(args.schema)["columns"])
    raise ValueError("a raw CSV read with --no-header needs its column names: --columns a,b,c or a --schema")


def read_raw_alone(args: argparse.Namespace) -> pd.DataFrame:
    """The raw CSV of --data without a spec (``synth`` infers one): named by its header row, or by
    --columns or the --schema with --no-header."""
    names = column_names(args)
    raw = read_text_csv(args)
    if names is None:
        check_header(args, args.data, list(raw.columns))
    else:
        raw = check_column_count(args.data, raw, names, "--columns" if args.columns else "the --schema")
        check_first_row(args, args.data, raw, names)
    if raw.empty:
        raise ValueError(f"{args.data}: no data rows (a raw CSV needs a header row and at least one row)")
    return raw


def raw_error(args: argparse.Namespace, exc: Exception) -> ValueError:
    """A raw-CSV encoding error as the command line says it: the file first, flags instead of arguments."""
    message = str(exc)
    for argument, flag in FLAG_HINTS:
        message = message.replace(argument, flag)
    if "missing from the table" in message and not args.no_header:
        message += "; a CSV without a header row needs --no-header (and --skip-rows N for lines above the data)"
    return ValueError(f"{args.data}: {message}")


def encode_raw(args: argparse.Namespace, disc: Discretizer, out_dir: str | None = None) -> Any:
    """Codes of the raw --data: a `Dataset`, or the transform report after writing them to ``out_dir``."""
    raw = read_raw(args, disc)
    extra = "drop" if args.drop_extra else "error"
    try:
        return disc.transform(raw, extra=extra) if out_dir is None else disc.write(raw, out_dir, extra=extra)
    except DataError as exc:
        raise raw_error(args, exc) from None
