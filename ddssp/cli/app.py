"""The ``dp-marginals`` parser and entry point: each subcommand lives in its own module of
`ddssp.cli` (``register`` adds its parser, ``run`` carries it out) and shares `ddssp.cli.common`.

The command line lives in ``ddssp`` because that package is the end of the import chain
(marginals < pgm < aim < ddssp): it needs all of them. `main` maps errors to exit codes: bad input
(`common.BAD_INPUT`) is one line on stderr and exit 2, anything else an internal error and exit 1;
a private detail a `DataError` carries is printed only with ``--show-private-values``.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import discretize, fit, inspect, predict, query, report, spec, synth
from .common import BAD_INPUT, PROG, Parser, common_flags, fail, private_note

#: the subcommands, in the order of --help.
COMMANDS = (synth, discretize, fit, inspect, spec, report, predict, query)

DESCRIPTION = """\
Differentially private tabular data release from marginals. synth measures noisy marginals with
AIM and writes a release and a synthetic table (from a CSV of codes, from raw values with a public
spec, or from raw values alone with the spec inferred under DP; without --data it runs on the
Adult table shipped with the package). fit, predict, inspect, query and report work from a release alone;
discretize and spec prepare raw tables.

Exit codes: 0 ok, 2 bad input (one line on stderr, no traceback), 1 internal error; --debug shows
the traceback. Progress goes to stderr; --quiet silences it, but not the warnings about a likely
wrong or useless result (a header row that looks like data, a first row that looks like a header,
--delta above 1e-3, a release that is mostly noise). No message quotes an exact count of
private rows or a private value unless --show-private-values (stderr, for the data holder); the
synthetic row count printed is public (--rows or the noisy model total). Text cells of CSV outputs
that a spreadsheet would run as formulas are escaped (--no-escape-formulas keeps them). Files are
written atomically; an output that would overwrite an input is refused before any work; outputs
made of several files (synth, discretize) are all-or-nothing; coded data derived from private rows
is written owner-only (0600).
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: every subcommand of `COMMANDS`, each with the common flags."""
    parser = Parser(prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    common = common_flags()
    for command in COMMANDS:
        command.register(sub, common)
    return parser


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
