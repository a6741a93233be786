"""Shared pieces of the ``dp-marginals`` subcommands: the parser class with one-line usage errors,
error and note printing, argparse value types, the output-overwrite guard and reading a release."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, Sequence

import numpy as np

from aim import Release
from aim.release import NotPrivateWarning

PROG = "dp-marginals"
# Exceptions that mean "the input is wrong": ValueError covers DataError, SpecError, JSON, CSV and
# release-format errors and unknown attribute names (UnknownAttributeError); the OSErrors are
# paths that cannot be read or written. Anything else (a KeyError included) is an internal error.
BAD_INPUT = (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SystemExit(fail(f"{self.prog}: {message} (see --help)", 2))


def fail(message: str, code: int) -> int:
    """Print ``message`` as one error line on stderr; returns ``code`` (the exit code)."""
    print(f"{PROG}: error: " + " ".join(str(message).split()), file=sys.stderr)
    return code


def note(args: argparse.Namespace, message: str) -> None:
    """A progress note on stderr, unless --quiet."""
    if not args.quiet:
        print(message, file=sys.stderr, flush=True)


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
