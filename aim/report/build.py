"""The release quality report: one self-contained HTML file (images inlined) showing what a release
cost and what it holds — privacy unit and guarantee, spec, ledger, rounds, model size, the measured
cliques as a graph — and, only when the private rows are given, a NON-PRIVATE diagnostic: what the
spec's rules did to raw rows, the total-variation error of every 1-way and 2-way model marginal
against the true one, worst first, with true-vs-model bar plots and heatmaps, and (with a target)
train-on-synthetic / test-on-real ML efficacy.

Everything but the diagnostic is post-processing of the public release. The diagnostic reads the
private rows without any privacy charge, so a report made with data is for the data holder only:
it says so in a banner at the top and is written with owner-only permissions (``0600``).

Plots need matplotlib (the ``report`` extra); `report_plots` draws them, `report_html` lays out
the page. Level labels come from a ``labels(attr) -> list[str] | None`` hook (the caller's, then
the release's spec: categories and bin intervals), else the integer codes.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from marginals.dataset import Dataset
from marginals.domain import Domain
from marginals.files import PRIVATE_MODE, AtomicOutputs, write_bytes_atomic, write_text_atomic
from marginals.privacy import Accountant, cdp_eps

from marginals.limits import check_cells

from . import html as report_html, plots as report_plots
from .efficacy import ml_efficacy
from .inputs import as_dataset, read_rows
from .types import Diagnostic, MarginalError, Plot

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release

#: a labels hook: the readable name of every level of ``attr`` (len = its number of levels), or None.
LabelHook = Callable[[str], "Sequence[str] | None"]

#: prefix of every PNG the report writes (stale ones with it are removed from the PNG folder).
PNG_PREFIX = "dpreport-"


def total_variation(true_counts: np.ndarray, estimate: np.ndarray) -> float:
    """0.5 * L1 distance between the two tables normalised to sum to 1 (an empty estimate counts as uniform)."""
    p = np.asarray(true_counts, dtype=np.float64).ravel()
    q = np.clip(np.asarray(estimate, dtype=np.float64).ravel(), 0.0, None)
    q = q / q.sum() if q.sum() > 0 else np.full(q.shape, 1.0 / q.size)
    return 0.5 * float(np.abs(p / p.sum() - q).sum())


def marginal_errors(
    release: "Release", data: Dataset | pd.DataFrame, synthetic: Dataset | pd.DataFrame | None = None
) -> list[MarginalError]:
    """Error of every 1-way and 2-way marginal of the model (and of ``synthetic`` rows), worst first.

    NOT private: it reads the private ``data``; for the data holder's eyes only.
    """
    domain = release.domain
    data = as_dataset(data, domain, "data")
    synthetic = None if synthetic is None else as_dataset(synthetic, domain, "synthetic")
    levels = [int(m) for m in domain.shape]  # cells of all 1- and 2-way tables, before listing the pairs
    cells = sum(levels) + (sum(levels) ** 2 - sum(m * m for m in levels)) // 2
    check_cells((2 if synthetic is None else 3) * cells, "the report's 1-way and 2-way marginals")
    cliques = [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))
    true_tables = data.marginals(cliques)
    model_tables = release.marginals(cliques)
    synth_tables = synthetic.marginals(cliques) if synthetic is not None else [None] * len(cliques)
    measured = [set(m.clique) for m in release.measurements]
    errors = [
        MarginalError(
            clique, domain.size(clique), total_variation(t, m), None if s is None else total_variation(t, s),
            any(set(clique) <= c for c in measured),
        )
        for clique, t, m, s in zip(cliques, true_tables, model_tables, synth_tables)
    ]
    return sorted(errors, key=lambda e: (-e.tv, e.clique))


def label_function(release: "Release", labels: LabelHook | None = None) -> Callable[[str], list[str]]:
    """attr -> one label per level: from ``labels``, else the release's own labels, else the codes."""
    hooks = [h for h in (labels, _release_hook(release)) if h is not None]

    def resolve(attr: str) -> list[str]:
        levels = release.domain[attr]
        for hook in hooks:
            found = hook(attr)
            if found is not None:
                found = [str(x) for x in found]
                if len(found) != levels:
                    raise ValueError(f"labels for {attr!r}: expected {levels} (one per level), got {len(found)}")
                return found
        return [str(code) for code in range(levels)]

    return resolve


def _release_hook(release: "Release") -> LabelHook | None:
    """The release's labels, if it carries any: its spec's discretizer, a ``labels(attr)`` method or a
    ``spec`` with one."""
    for owner in (getattr(release, "discretizer", None), release, getattr(release, "spec", None)):
        hook = getattr(owner, "labels", None)
        if callable(hook):
            return hook
    return None


def ledger_rows(ledger: Accountant) -> list[dict]:
    """Each charge with its running total (rho, share of the budget, epsilon at the ledger's delta)."""
    rows, spent = [], []
    for charge in ledger.charges:
        spent.append(charge.rho)
        total = math.fsum(spent)
        rows.append({
            "label": charge.label, "mechanism": charge.mechanism, "rho": charge.rho,
            "params": ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in charge.params.items()),
            "rho_total": total, "share": total / ledger.rho,
            "eps_total": None if ledger.delta is None else cdp_eps(total, ledger.delta),
        })
    return rows


def mechanism_totals(ledger: Accountant) -> list[tuple[str, int, float]]:
    """(mechanism, number of charges, total rho) in order of first use."""
    totals: dict[str, list[float]] = {}
    for charge in ledger.charges:
        totals.setdefault(charge.mechanism, []).append(charge.rho)
    return [(kind, len(rhos), math.fsum(rhos)) for kind, rhos in totals.items()]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text)[:40].strip("_") or "x"


def public_plots(release: "Release") -> list[Plot]:
    """The figures made from the release alone: budget and rounds, measured-clique graph."""
    plots = [Plot("budget", "Privacy budget: spent by mechanism, and per round",
                  report_plots.budget_figure(release.ledger.rho, mechanism_totals(release.ledger), release.rounds))]
    plots.append(Plot("cliques", "Measured cliques: attributes as nodes, an edge per measured pair (colour: noise scale)",
                      report_plots.clique_graph_figure(release.domain, release.measurements)))
    return plots


def diagnostic_plots(release: "Release", data: Dataset, errors: list[MarginalError], names: Callable[[str], list[str]],
                     synthetic: Dataset | None = None, worst: int = 6) -> list[Plot]:
    """The NON-PRIVATE figures: error overview, true vs model for every 1-way and the worst 2-way marginals."""
    plots = [Plot("errors", "Total variation error of the worst marginals (non-private)",
                  report_plots.error_overview_figure(errors))]
    ones = [(a,) for a in release.domain.attrs]
    pairs = [e.clique for e in errors if len(e.clique) == 2][:worst]
    cliques = ones + pairs
    true_tables, model_tables = data.marginals(cliques), release.marginals(cliques)
    synth_tables = synthetic.marginals(cliques) if synthetic is not None else [None] * len(cliques)
    tv = {e.clique: e.tv for e in errors}
    for clique, t, m, s in zip(cliques, true_tables, model_tables, synth_tables):
        name = "-".join(_slug(a) for a in clique)
        if len(clique) == 1:
            png = report_plots.oneway_figure(clique[0], names(clique[0]), t, m, s, tv[clique])
            plots.append(Plot(f"oneway-{name}", f"{clique[0]}: true vs model (non-private)", png))
        else:
            png = report_plots.twoway_figure(clique, (names(clique[0]), names(clique[1])), t, m, tv[clique])
            plots.append(Plot(f"twoway-{name}", f"{clique[0]} x {clique[1]}: true vs model (non-private)", png))
    return plots


def write_report(
    release: "Release",
    path: str | os.PathLike,
    data: Dataset | pd.DataFrame | None = None,
    *,
    synthetic: Dataset | pd.DataFrame | None = None,
    target: str | None = None,
    labels: LabelHook | None = None,
    png_dir: str | os.PathLike | bool = False,
    title: str | None = None,
    worst: int = 6,
) -> Path:
    """Write the HTML report of ``release`` to ``path``: one self-contained file (images inlined); return the path.

    ``data`` (the private rows: raw values in a DataFrame for a release with a spec, else codes; a
    `Dataset` is codes) adds the NON-PRIVATE diagnostic and makes every output owner-only;
    ``synthetic`` rows (read the same way) are compared too; ``target`` (with ``data``) adds
    train-on-synthetic / test-on-real ML efficacy. ``png_dir``: True also writes the PNGs to
    ``<name>_files/`` next to the HTML, a path puts them there. ``worst``: how many of the worst
    2-way marginals get a heatmap. All files are written all-or-nothing.
    """
    if not isinstance(worst, int) or worst < 0:
        raise ValueError(f"worst must be an integer >= 0, got {worst!r}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: the report path is a folder; give a file name (e.g. report.html)")
    if data is None and (synthetic is not None or target is not None):
        raise ValueError("synthetic rows and a target are compared with the private data: give data too")
    if target is not None and target not in release.domain:
        raise ValueError(f"target {target!r} is not an attribute of the release ({', '.join(release.domain.attrs)})")
    dataset, encoding = (None, None) if data is None else read_rows(release, data, "data")
    synth = None if synthetic is None else read_rows(release, synthetic, "synthetic")[0]
    names = label_function(release, labels)
    for attr in release.domain.attrs:
        names(attr)  # a bad labels hook fails here, before any drawing
    report_plots.require_matplotlib()
    plots = public_plots(release)
    diagnostic = None
    if dataset is not None:
        errors = marginal_errors(release, dataset, synth)
        extra = diagnostic_plots(release, dataset, errors, names, synth, worst)
        efficacy = None if target is None else ml_efficacy(
            release, dataset, target, names(target), None if synth is None else synth.to_df())
        diagnostic = Diagnostic(len(dataset), errors, extra, synth is not None, encoding, efficacy)
    page = report_html.render(release, plots, diagnostic, title or f"Release report: {path.stem}",
                              ledger_rows(release.ledger), mechanism_totals(release.ledger))
    _write(path, page, plots + (diagnostic.plots if diagnostic else []), png_dir, diagnostic is not None)
    return path


def _write(path: Path, page: str, plots: list[Plot], png_dir: str | os.PathLike | bool, private: bool) -> None:
    """The HTML and the PNGs, all-or-nothing; stale PNGs of an earlier report are removed afterwards."""
    mode = PRIVATE_MODE if private else None
    folder = None if png_dir is False else (path.with_name(f"{path.stem}_files") if png_dir is True else Path(png_dir))
    files = [] if folder is None else [folder / f"{PNG_PREFIX}{i:02d}-{p.name}.png" for i, p in enumerate(plots)]
    with AtomicOutputs() as outputs:
        write_text_atomic(outputs.stage(path), page, mode=mode)
        for file, plot in zip(files, plots):
            write_bytes_atomic(outputs.stage(file), plot.png, mode=mode)
    if folder is not None:
        for old in folder.glob(f"{PNG_PREFIX}*.png"):
            if old not in files:
                old.unlink()
