"""The report's value types, shared by the builder and the renderers: `MarginalError` (one
marginal's error against the true one), `Plot` (one figure) and `Diagnostic` (what the
NON-PRIVATE section shows)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MarginalError:
    """How far one model (and optionally synthetic) marginal is from the true one."""

    clique: tuple[str, ...]
    cells: int
    tv: float  # total variation distance, 0.5 * || p - q ||_1 of the normalised tables
    tv_synthetic: float | None
    measured: bool  # the clique lies inside a measured clique (else the model inferred it)


@dataclass(frozen=True)
class Plot:
    """One figure of the report: a file name, a caption and its PNG bytes."""

    name: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Diagnostic:
    """What the NON-PRIVATE section shows: row count, errors (worst first), figures."""

    rows: int
    errors: list[MarginalError]
    plots: list[Plot]
    synthetic: bool
