"""The privacy unit and guarantee in words, for the report's privacy section, and the one way the
report writes the run's delta and its split (the ledger's share, what thresholded histograms
reserved), so the summary tile, the ledger and the words always agree."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .markup import esc, num

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release


def delta_parts(release: "Release") -> tuple[float | None, float | None, float]:
    """(the whole run's delta, the ledger's delta, the part reserved for thresholded histograms)."""
    spec = release.spec_config()
    reserved = 0.0 if spec is None else spec.threshold_delta
    return release.delta, release.ledger.delta, reserved


def delta_split(release: "Release") -> str:
    """How the run's delta splits when the spec inference reserved a part of it ("" otherwise)."""
    run, ledger, reserved = delta_parts(release)
    if run is None or not reserved or ledger is None:
        return ""
    return (f"Of the run's delta = {num(run)}, {num(ledger)} covers the ledger's measurements and "
            f"{num(reserved)} is reserved for the thresholded histograms of the spec inference.")


def _public_part(release: "Release") -> str:
    """What the release took as public input, which the guarantee does not protect ("" for none)."""
    if release.spec is None:
        return "the table's coding (columns and numbers of levels) is public input, not protected; "
    if release.spec_config() is None:
        return "the spec was given by the user: public input, not protected (it must not come from the private rows); "
    return ""


def _per_unit_caveat(unit) -> str:
    """What the unit does not protect: several rows of one person (row level), or one person under several ids."""
    if unit is None:
        return "a person with several rows is protected per row only (k rows: about k times epsilon); "
    return (f"a person whose rows carry several values of {esc(unit.column)} is protected per value only "
            "(the column must identify the person); ")


def render(release: "Release") -> str:
    """The privacy section's HTML: unit, guarantee, what it covers and what it does not."""
    epsilon = release.epsilon
    if epsilon is None and release.ledger.delta is not None:
        epsilon = release.ledger.epsilon(spent=False)
    eps = num(epsilon)
    factor = f"{math.exp(epsilon):.3g}" if epsilon is not None and epsilon < 50 else "e^epsilon"
    unit = release.ledger.unit
    lines = [
        "<strong>Privacy unit: one row</strong> of the input table. Two tables are neighbours when one is the "
        "other with one row added or removed (add/remove neighbours)." if unit is None else
        f"<strong>Privacy unit: one {esc(unit.column)}</strong>: all rows sharing one value of the column "
        f"{esc(unit.column)}, of which at most {unit.max_rows} were kept (rows beyond that were dropped by a keyed "
        "random order that depends on that unit's own rows only). Two tables are neighbours when one is the other "
        f"with one whole unit added or removed; every count was priced for sensitivity {unit.max_rows}. The column "
        f"{esc(unit.column)} itself is not released.",
        f"<strong>Guarantee:</strong> the whole run (spec inference, selection and measurements) is "
        f"(epsilon = {esc(eps)}, delta = {esc(num(release.delta))})-differentially private, from "
        f"zero-concentrated DP with rho = {esc(num(release.ledger.rho))}. In words: adding or removing any one "
        f"{'row' if unit is None else esc(unit.column) + ' (all its rows)'} changes the probability of any "
        f"output of this release by at most a factor of {esc(factor)}, "
        f"except with a probability of at most {esc(num(release.delta))}. {esc(delta_split(release))}",
        "<strong>Covered:</strong> everything in the release (spec, measurements, model, ledger) and anything "
        "computed from it alone, such as synthetic rows drawn from the model.",
        "<strong>Not covered:</strong> " + _per_unit_caveat(unit) + f"{_public_part(release)}a diagnostic "
        "computed from the private rows (a report made with the data) is not covered.",
    ]
    if not release.private:
        lines.insert(0, "<strong>This release is NOT private:</strong> it was made with a seeded noise source, so "
                        "the guarantee below holds for nobody who knows the seed.")
    return "<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"
