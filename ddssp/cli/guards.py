"""Guard rails of the command line: careless input that would give a wrong or useless result is
refused (a ``--columns`` list that does not match the file) or warned about on stderr.

Warnings start with ``warning:`` and are printed even with ``--quiet``: they say the result is
probably not what was meant. They go to stderr only, for the data holder who runs the command,
never into an output file. A warning about the rows of the input file (its first row, its header)
names column positions, never a cell value; ``--show-private-values`` adds the cells.

The rules, kept simple on purpose:

- header row that looks like data (a CSV read with a header): some header cell is a number;
- first row that looks like a header (``--no-header``): the first row repeats the given column
  names, or no cell of the first row is a number while some column whose first cell is not a number
  holds mostly numbers below it (more than half of its non-empty cells);
- ``--delta`` above `DELTA_WARN`: delta should be much smaller than 1/n;
- a release that is mostly noise: its noisy total (public) is below `FEW_ROWS` rows, or in most of
  its one-way measurements the noise's standard deviation exceeds the average count per cell
  (noisy total / cells). Only public quantities are used: never the true number of rows.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import numpy as np
import pandas as pd

from aim import Release

from .common import PLAIN_NUMBER, private_note

#: deltas above this (1e-3) warn: they allow a per-row failure probability a release should not have.
DELTA_WARN = 1e-3
#: a release whose noisy total is below this many rows warns: it carries almost no information.
FEW_ROWS = 100


def warn(message: str) -> None:
    """A warning on stderr, also under --quiet (it says the result is likely wrong or useless)."""
    print("warning: " + " ".join(str(message).split()), file=sys.stderr, flush=True)


def is_number(cell: object) -> bool:
    """Whether a text cell is a plain number (``39``, ``-2.5``, ``1e3``; spaces around are ignored)."""
    return bool(PLAIN_NUMBER.match(str(cell).strip()))


def _positions(flags: Sequence[bool]) -> str:
    cols = [str(i + 1) for i, f in enumerate(flags) if f]
    shown = ", ".join(cols[:8]) + (", ..." if len(cols) > 8 else "")
    return f"column{'s' if len(cols) > 1 else ''} {shown}"


def check_column_count(path: str, table: pd.DataFrame, names: Sequence[str], source: str) -> pd.DataFrame:
    """``table`` (read without a header) with ``names`` as its columns; a ValueError when the counts
    differ (pandas would shift the columns or use the first ones as an index). ``source`` says where
    the names come from, e.g. ``--columns``."""
    if table.shape[1] != len(names):
        raise ValueError(f"{path}: {table.shape[1]} columns per row but {source} names {len(names)}; with "
                         f"--no-header name every column of the file, in its order")
    return table.set_axis(list(names), axis=1)


def check_header(args: argparse.Namespace, path: str, columns: Sequence[object]) -> None:
    """Warn when the header row of a CSV read with a header looks like data (a cell is a number)."""
    numbers = [is_number(c) for c in columns]
    if any(numbers):
        warn(f"{path}: the header row looks like data ({_positions(numbers)} of the header "
             f"{'are numbers' if sum(numbers) > 1 else 'is a number'}); if the file has no header row, add "
             f"--no-header (and --columns or a --schema), or the first data row becomes the column names")
        private_note(args, "header cells that are numbers: " + ", ".join(repr(str(c)) for c, f in zip(columns, numbers) if f))


def _mostly_numbers(column: pd.Series) -> bool:
    cells = column.astype(str).str.strip()
    cells = cells[cells != ""]
    return len(cells) > 0 and float(np.mean([is_number(c) for c in cells])) > 0.5


def check_first_row(args: argparse.Namespace, path: str, table: pd.DataFrame, names: Sequence[str]) -> None:
    """Warn when the first row of a CSV read with --no-header looks like a header: it repeats
    ``names``, or none of its cells is a number while a column it heads holds mostly numbers."""
    if len(table) < 1:
        return
    first = [str(c).strip() for c in table.iloc[0]]
    if [c.lower() for c in first] == [str(n).strip().lower() for n in names]:
        reason = "it repeats the column names"
    elif any(is_number(c) for c in first):
        return
    else:
        heads = [_mostly_numbers(table.iloc[1:, i]) for i in range(table.shape[1])]
        if not any(heads):
            return
        reason = f"no cell of it is a number, but {_positions(heads)} below it hold mostly numbers"
    warn(f"{path}: the first row looks like a header ({reason}); it is read as data under --no-header: "
         f"drop --no-header, or skip it with --skip-rows 1")
    private_note(args, "first row: " + ", ".join(repr(c) for c in first))


def check_delta(delta: float) -> None:
    """Warn when delta is above `DELTA_WARN` (delta >= 1 is refused by the budget check itself)."""
    if delta > DELTA_WARN:
        warn(f"--delta {delta:g} is large: delta should be much smaller than 1/n; values above 1e-3 allow "
             f"a per-row failure probability a release should not have (the default is 1e-9)")


def noise_share(release: Release) -> float:
    """The median, over the release's one-way measurements (all of them if it has none), of the noise's
    standard deviation divided by the average count per cell (noisy total / cells): public quantities."""
    measured = [m for m in release.measurements if len(m.clique) == 1] or list(release.measurements)
    total = max(float(release.total), 1.0)
    if not measured:
        return float("inf")
    return float(np.median([m.sigma * m.noisy_counts.size / total for m in measured]))


def check_release_size(release: Release, epsilon: float) -> None:
    """Warn when the release is mostly noise: a noisy total below `FEW_ROWS`, or a `noise_share` above 1."""
    total, share = float(release.total), noise_share(release)
    if total < FEW_ROWS:
        why = f"its noisy total is {total:,.0f} row{'' if round(total) == 1 else 's'} (under {FEW_ROWS})"
    elif share > 1:
        why = f"in most one-way marginals the noise (standard deviation) exceeds the average count per cell ({share:.1f}x)"
    else:
        return
    warn(f"the release is mostly noise: {why} at --epsilon {epsilon:g}; its synthetic rows say little about the "
         f"data. Use a larger --epsilon, or fewer columns or bins (--bins), or more rows of data")
