"""Shared pieces of the ``dp-marginals`` subcommands: the parser class with one-line usage errors,
the flags every subcommand takes, error and note printing (private counts only with
``--show-private-values``), argparse value types, the output-overwrite guard, reading a release and
writing a CSV with its formulas escaped (raw CSVs are read by `ddssp.cli.raw_csv`).

Every CSV the command line writes goes through `csv_text`: a text cell that a spreadsheet would
run as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a
leading ``'``, as OWASP recommends against CSV injection, unless ``--no-escape-formulas``. Numeric
columns are never touched, and neither is a text cell that is a plain number (``-3``, ``+1.5e3``):
a spreadsheet reads those as numbers, not formulas, and they round-trip unchanged."""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd

from aim import Release
from aim.release import NotPrivateWarning

PROG = "dp-marginals"
#: most synthetic rows a command may ask for (``--rows``); `Release.synthetic_data` also caps rows x columns.
MAX_ROWS = 100_000_000
#: first characters that make a spreadsheet read a text cell as a formula (OWASP, "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: a text cell that is a plain number (``-3``, ``+1.5e3``): a spreadsheet reads it as a number.
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")
# Exceptions that mean "the input is wrong": ValueError covers DataError, SpecError, JSON, CSV and
# release-format errors and unknown attribute names (UnknownAttributeError); the OSErrors are
# paths that cannot be read or written. Anything else (a KeyError included) is an internal error.
BAD_INPUT = (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SystemExit(fail(f"{self.prog}: {message} (see --help)", 2))


def common_flags() -> argparse.ArgumentParser:
    """The flags every subcommand takes (a parent parser): --quiet, --debug, --show-private-values."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", action="store_true",
                        help="no progress or notes on stderr (warnings about likely wrong results still show)")
    common.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (it may quote private values: for the data holder)")
    common.add_argument("--show-private-values", action="store_true",
                        help="also print exact private counts (rows read, dropped, clipped) to stderr: for the data "
                             "holder only, never publish that output (default: no message quotes them)")
    return common


def fail(message: str, code: int) -> int:
    """Print ``message`` as one error line on stderr; returns ``code`` (the exit code)."""
    print(f"{PROG}: error: " + " ".join(str(message).split()), file=sys.stderr)
    return code


def note(args: argparse.Namespace, message: str) -> None:
    """A progress note on stderr, unless --quiet."""
    if not args.quiet:
        print(message, file=sys.stderr, flush=True)


def private_note(args: argparse.Namespace, message: str) -> None:
    """An exact private count or value on stderr, only with --show-private-values (for the data holder)."""
    if getattr(args, "show_private_values", False):
        print(f"private (do not publish): {message}", file=sys.stderr, flush=True)


def split_names(text: str | None) -> list[str]:
    """The names of a comma-separated flag value (none for an empty or missing value)."""
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


def row_count(text: str) -> int:
    """argparse type: a number of synthetic rows, 1 .. `MAX_ROWS`."""
    value = positive_int(text)
    if value > MAX_ROWS:
        raise argparse.ArgumentTypeError(f"at most {MAX_ROWS:,} rows, got {value:,}")
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


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
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
            if source is not None and same_file(out, source):
                raise ValueError(f"{out}: the output {flag} would overwrite the input {in_flag}; write elsewhere")
        for other_flag, other in outputs[:i]:
            if same_file(out, other):
                raise ValueError(f"{out}: the outputs {other_flag} and {flag} are the same file")
        if os.path.isdir(out):
            raise ValueError(f"{out}: the output {flag} is a folder; give a file name")


def load_release(path: str) -> Release:
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


def escape_formula(cell: Any) -> Any:
    """``cell`` with a leading ``'`` if it is text a spreadsheet would run as a formula (see the module
    docstring); any other cell (numbers, missing values, plain-number text) as it is."""
    if isinstance(cell, str) and cell[:1] in FORMULA_STARTS and not PLAIN_NUMBER.match(cell):
        return "'" + cell
    return cell


def _escape_column(column: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return column  # numbers are never formulas: a negative number stays -3
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = [escape_formula(c) for c in column.cat.categories]
        if categories == list(column.cat.categories):
            return column
        if len(set(categories)) == len(categories):  # no clash with an existing "'=x": stay categorical
            return column.cat.rename_categories(categories)
        lookup = np.asarray(categories + [np.nan], dtype=object)  # code -1 (missing) picks the NaN
        return pd.Series(lookup[column.cat.codes.to_numpy()], index=column.index, name=column.name)
    return column.map(escape_formula)


def escape_formulas(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` whose text cells and column names are escaped by `escape_formula`."""
    out = pd.DataFrame({i: _escape_column(table.iloc[:, i]) for i in range(table.shape[1])}, index=table.index)
    return out.set_axis([escape_formula(str(c)) for c in table.columns], axis=1)


def csv_text(table: pd.DataFrame, escape: bool = True) -> str:
    """The CSV text (no index) of ``table``; ``escape``: formulas escaped (`escape_formulas`). Lines
    end in ``\\n``, or ``\\r\\n`` when a text cell holds a carriage return: Python's CSV writer quotes
    only the line end's characters, and an unquoted CR would end the row for every reader."""
    out = escape_formulas(table) if escape else table
    has_cr = any("\r" in str(c) for c in out.columns) or any(_holds_cr(out.iloc[:, i]) for i in range(out.shape[1]))
    return out.to_csv(index=False, lineterminator="\r\n" if has_cr else "\n")


def _holds_cr(column: pd.Series) -> bool:
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return False
    values = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.unique()
    return any(isinstance(v, str) and "\r" in v for v in values)


def add_csv_output_flags(p: argparse.ArgumentParser) -> None:
    """--no-escape-formulas, for a subcommand that writes a CSV."""
    p.add_argument("--no-escape-formulas", dest="escape_formulas", action="store_false",
                   help="write text cells that start with =, +, -, @, tab or CR as they are (default: prefix "
                        "them with ' so that a spreadsheet shows them as text instead of running them)")


class Renamed(argparse.Action):
    """A flag that was renamed (hidden from --help): using it is a usage error that names the new
    spelling, given as ``const``."""

    def __init__(self, option_strings: Sequence[str], dest: str, const: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", const=const, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        parser.error(f"{option_string} was renamed: use {self.const}")


def subcommand(sub: Any, common: argparse.ArgumentParser, name: str, summary: str, description: str) -> Any:
    """A subcommand's parser with the ``common`` flags; ``summary`` shows in the command list,
    ``description`` in its own --help."""
    return sub.add_parser(name, parents=[common], help=summary, description=description)


def share(text: str) -> float:
    """argparse type: a fraction strictly between 0 and 1 (a share of the budget)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not (0 < value < 1):
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return value
