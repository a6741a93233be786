"""The report's value types, shared by the builder and the renderers: `MarginalError` (one
marginal's error against the true one), `Plot` (one figure), `Encoding` (what the spec's rules
did to the private rows), `Efficacy` (train on synthetic, test on real) and `Diagnostic` (what
the NON-PRIVATE section shows)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
class Encoding:
    """What the spec's discretizer did to the private raw rows (NOT private: true counts).

    ``columns``: per column, the counts of the transform report (clipped_low, clipped_high,
    other, missing); ``unseen``: per categorical column, the most frequent raw values outside
    its released categories with their counts (they became ``<other>`` or left their rows out).
    """

    rows: int
    kept: int
    columns: dict[str, dict[str, int]]
    unseen: dict[str, list[tuple[str, int]]]


@dataclass(frozen=True)
class Efficacy:
    """Train-on-synthetic / test-on-real for one target (NOT private: it reads the real rows).

    ``scores``: (metric, trained on synthetic rows, trained on real rows, constant baseline),
    every score measured on the same held-out real rows.
    """

    target: str
    task: str  # "classification" (logistic regression) or "regression" (linear, bin midpoints)
    features: int  # one-hot columns
    train_synthetic: int
    train_real: int
    test_real: int
    scores: list[tuple[str, float, float, float]]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Diagnostic:
    """What the NON-PRIVATE section shows: row count, errors (worst first), figures, and with raw
    rows what the encoding did; with a target the ML efficacy."""

    rows: int
    errors: list[MarginalError]
    plots: list[Plot]
    synthetic: bool
    encoding: Encoding | None = None
    efficacy: Efficacy | None = None
