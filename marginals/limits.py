"""Memory ceilings every consumer of a model or release shares: a table, fit, report or batch of
synthetic rows that would exceed them is a `TooLargeError` (a ValueError) before anything is
allocated, never a MemoryError halfway through."""

from __future__ import annotations

#: most memory (MiB) one consumer may allocate for its tables at once.
MAX_WORK_MB = 4096.0
#: most cells (rows x columns) of synthetic rows drawn at once (2 GiB of int64 codes).
MAX_SYNTHETIC_CELLS = 2**28


class TooLargeError(ValueError):
    """Tables (or rows) too large to allocate: a readable release or domain asked for too much."""


def size_text(mib: float) -> str:
    """``mib`` MiB as a short human size (MiB, GiB or TiB)."""
    for unit, scale in (("TiB", 2**20), ("GiB", 2**10)):
        if mib >= scale:
            return f"{mib / scale:,.1f} {unit}"
    return f"{mib:,.1f} MiB"


def check_cells(cells: int, what: str, itemsize: int = 8, limit_mb: float = MAX_WORK_MB) -> None:
    """Raise `TooLargeError` when ``cells`` values of ``itemsize`` bytes exceed ``limit_mb`` MiB;
    ``what`` says what would be allocated (e.g. "the marginals of 3 cliques")."""
    need = int(cells) * itemsize / 2**20
    if need > limit_mb:
        raise TooLargeError(f"{what} would need {size_text(need)} ({int(cells):,} cells), more than the "
                            f"{limit_mb:,.0f} MiB allowed; the release's domain is too large for this")


def check_synthetic_size(rows: int, columns: int) -> None:
    """Raise `TooLargeError` when ``rows`` synthetic rows of ``columns`` columns exceed `MAX_SYNTHETIC_CELLS`."""
    if int(rows) * max(int(columns), 1) > MAX_SYNTHETIC_CELLS:
        raise TooLargeError(f"{int(rows):,} synthetic rows x {columns} columns is more than the "
                            f"{MAX_SYNTHETIC_CELLS:,} cells allowed at once; ask for fewer rows (--rows)")
