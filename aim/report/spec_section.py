"""The report's spec section, from public things only: each column's released categories or bin
edges, ``<other>``, bounds, the rules for unseen and missing values, the model's (noisy) share of
``<other>`` and missing, the model's share of every labelled level (the released 1-way
distributions), and the rows the spec's rules left out (the spec's ``excluded`` record).
A release without a spec says so: its codes' meaning and any excluded rows are not known here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from marginals.spec.columns import fmt_number

from .markup import details, esc, table

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release

NO_SPEC = ("This release holds integer codes only: it stores no spec, so which raw values each code stands "
           "for, the bounds, and whether any rows were left out before the release are not known to this "
           "report. Plots and tables show the codes.")


def spec_origin(release: "Release") -> str:
    """Where the spec came from, in words."""
    inferred = release.spec_config()
    note = (release.spec or {}).get("note")
    how = ("The spec was given by the user: public information, it cost no privacy budget (it must not have "
           "been read off the private rows)." if inferred is None else
           f"The spec was inferred from the private rows under differential privacy: it spent rho = "
           f"{inferred.spec_rho:.4g} of the run's budget (at most {100 * inferred.spec_share:.0f}%), and is "
           "covered by the release's guarantee.")
    return f"<p>{esc(how)}</p>" + (f"<p>Spec note: <em>{esc(note)}</em></p>" if note else "")


def model_shares(release: "Release") -> dict[str, np.ndarray]:
    """Each attribute's share of rows per level in the released model (public, noisy)."""
    shares = {}
    for attr, counts in zip(release.domain.attrs, release.marginals([(a,) for a in release.domain.attrs])):
        counts = np.clip(np.asarray(counts, dtype=float), 0, None)
        shares[attr] = counts / counts.sum() if counts.sum() > 0 else counts
    return shares


def column_rows(release: "Release") -> list[tuple[Any, ...]]:
    """One row per column: name, type, levels, released values, rules, the model's <other> and <missing> shares."""
    labels, shares = release.discretizer.labels, model_shares(release)
    rows = []
    for name, column in release.spec["columns"].items():
        names, share = labels(name), shares[name]
        other = f"{100 * share[names.index('<other>')]:.1f}%" if "<other>" in names else "–"
        missing = f"{100 * share[names.index('<missing>')]:.1f}%" if "<missing>" in names else "–"
        rows.append((name, column["type"], len(names), _values(column), _unseen_rule(column),
                     _missing_rule(column), other, missing))
    return rows


def level_rows(release: "Release") -> list[tuple[str, str, str]]:
    """(column, label, the model's share of rows) for every level: the released 1-way distributions."""
    labels = release.discretizer.labels
    return [(attr, label, f"{100 * p:.2f}%") for attr, share in model_shares(release).items()
            for label, p in zip(labels(attr), share)]


def _values(column: Mapping[str, Any]) -> str:
    if column["type"] == "categorical":
        return ", ".join(str(c) for c in column["categories"])
    edges = [fmt_number(e) for e in column["edges"]]
    kind = "integers" if column.get("integer") else "numbers"
    return (f"{kind} in [{edges[0]}, {edges[-1]}] (values outside are clipped into the end bins); "
            f"{len(edges) - 1} bins, edges {', '.join(edges)}")


def _unseen_rule(column: Mapping[str, Any]) -> str:
    if column["type"] == "numeric":
        return "clipped to the bounds"
    rule = column.get("unseen", "error")
    return {"other": "<other>", "drop": "row left out", "error": "refused (an error)"}[rule]


def _missing_rule(column: Mapping[str, Any]) -> str:
    rule = column.get("missing", "error")
    return {"level": "own level <missing>", "drop": "row left out", "error": "refused (an error)"}[rule]


def excluded_text(release: "Release") -> str:
    """The rows the spec's rules left out: the spec's ``excluded`` record (noisy or bounded statements)."""
    spec = release.spec or {}
    records = spec.get("excluded")
    dropping = [n for n, c in spec.get("columns", {}).items() if "drop" in (c.get("unseen"), c.get("missing"))]
    if records:
        rows = [(r.get("column"), r.get("rule"), r.get("statement"), r.get("noisy_count"), r.get("bound"))
                for r in records]
        return ("<p>Rows the spec's rules left out before the release (differentially private statements):</p>"
                + table(["column", "rule", "statement", "noisy count", "bound"], rows, numeric=(3, 4)))
    if records is not None:
        return "<p>No rows excluded by the spec's rules.</p>"
    if not dropping:
        return ("<p>No rows excluded by the spec's rules: no rule leaves a row out (a value gets a level or is "
                "refused).</p>")
    return (f"<p>The spec's rules leave out rows (a missing or unseen value) in the column(s) "
            f"{esc(', '.join(dropping))}; this release does not record how many.</p>")


def render(release: "Release") -> str:
    """The spec section's HTML."""
    if release.spec is None:
        return f"<p>{esc(NO_SPEC)}</p>"
    spec = release.spec
    markers = spec.get("missing_markers") or []
    rules = ("<p>Missing values: blank cells, NA/NaN/None"
             + (f" and the markers {esc(', '.join(repr(str(m)) for m in markers))}" if markers else "") + ".</p>")
    headers = ["column", "type", "levels", "released categories / bounds and bin edges", "value outside the categories",
               "missing value", "<other> (model, noisy)", "<missing> (model, noisy)"]
    columns = table(headers, column_rows(release), numeric=(2, 6, 7))
    levels = table(["column", "level", "share of rows (model, noisy)"], level_rows(release), numeric=(2,))
    return (spec_origin(release) + rules + details(f"All {len(spec['columns'])} columns", columns, open_=True)
            + details("The released distribution of every column (from the model: public, noisy)", levels)
            + "<h3>Rows excluded</h3>" + excluded_text(release))
