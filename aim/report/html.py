"""The report's HTML page: one self-contained file (inline CSS, images as base64 data URIs, no
JavaScript; long tables fold into ``<details>``). Every string that reaches the page — attribute
names, labels, ledger labels, config values — goes through `html.escape`.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from marginals.rules import describe

from ..release_config import MECHANISM_PART, SPEC_PART
from . import guarantee, spec_section
from .markup import CSS, cards, details, esc, figure, num, table
from .types import Diagnostic, Efficacy, Encoding, Plot

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release


def _section(anchor: str, heading: str, body: str, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f'<section id="{anchor}"{cls}><h2>{esc(heading)}</h2>{body}</section>'


def _summary(release: "Release") -> str:
    ledger, rounds = release.ledger, release.rounds
    eps_spent = ledger.epsilon() if ledger.delta is not None else None
    eps_budget = ledger.epsilon(spent=False) if ledger.delta is not None else release.epsilon
    status = ('<div class="banner ok">Private: all noise came from the operating system\'s secure source.</div>'
              if release.private else "")
    return status + cards([
        ("epsilon spent / budget", f"{num(eps_spent)} / {num(eps_budget)}"), ("delta (whole run)", num(release.delta)),
        ("rho spent / budget (zCDP)", f"{num(ledger.spent)} / {num(ledger.rho)}"),
        ("budget used", f"{100 * ledger.spent / ledger.rho:.1f}%"),
        ("attributes", len(release.domain)), ("measurements", len(release.measurements)),
        ("selection rounds", len(rounds)), ("annealed", sum(bool(r.get("annealed")) for r in rounds)),
        ("model cliques", len(release.model.cliques)), ("model size", f"{release.model.size_mb:.2f} MB"),
        ("estimated rows (noisy)", f"{release.model.total:,.0f}"),
    ])


def _ledger(release: "Release", budget_plot: Plot, rows: list[dict], by_mechanism: list[tuple[str, int, float]]) -> str:
    ledger = release.ledger
    totals = table(["mechanism", "charges", "rho", "share of budget"],
                   [(k, n, rho, f"{100 * rho / ledger.rho:.2f}%") for k, n, rho in by_mechanism]
                   + [("total spent", len(rows), ledger.spent, f"{100 * ledger.spent / ledger.rho:.2f}%"),
                      ("remaining", "", ledger.remaining, f"{100 * ledger.remaining / ledger.rho:.2f}%"),
                      ("budget", "", ledger.rho, "100%")], numeric=(1, 2, 3))
    eps = ("" if ledger.delta is None else
           f"<p>The ledger as (epsilon, delta)-DP at its delta = {esc(num(ledger.delta))}: spent epsilon = "
           f"{esc(num(ledger.epsilon()))} of a budget of {esc(num(ledger.epsilon(spent=False)))}. "
           f"{esc(guarantee.delta_split(release))}</p>")
    charges = table(["#", "label", "mechanism", "parameters", "rho", "running rho", "% of budget", "running epsilon"],
                    [(i + 1, r["label"], r["mechanism"], r["params"], r["rho"], r["rho_total"],
                      f"{100 * r['share']:.2f}%", r["eps_total"]) for i, r in enumerate(rows)], numeric=(0, 4, 5, 6, 7))
    return figure(budget_plot) + totals + eps + details(f"All {len(rows)} charges of the ledger", charges)


def _rounds(release: "Release") -> str:
    rounds = release.rounds
    if not rounds:
        return "<p>The release has no rounds log.</p>"
    keys = list(dict.fromkeys(k for r in rounds for k in r))
    rows = [[", ".join(map(str, r.get(k))) if isinstance(r.get(k), list) else r.get(k) for k in keys] for r in rounds]
    numeric = [j for j, k in enumerate(keys) if all(isinstance(r.get(k), (int, float)) for r in rounds)]
    return details(f"All {len(rounds)} rounds (selected clique, noise scale, budget spent, model size)",
                   table(keys, rows, numeric=numeric), open_=len(rounds) <= 20)


def _cliques(release: "Release", graph_plot: Plot) -> str:
    rows = [(i + 1, " x ".join(m.clique), release.domain.size(m.clique), m.sigma)
            for i, m in enumerate(release.measurements)]
    model = table(["model clique", "cells"], [(" x ".join(c), release.domain.size(c)) for c in release.model.cliques],
                  numeric=(1,))
    info = table(["setting", "value"], _settings(release.config)
                 + [(f"model.{k}", v) for k, v in release.model.info.items() if isinstance(v, (int, float, str, bool))])
    return (figure(graph_plot)
            + details(f"All {len(rows)} measurements (clique, cells, sigma)",
                      table(["#", "measured clique", "cells", "sigma"], rows, numeric=(0, 2, 3)), open_=len(rows) <= 20)
            + f"<p>The model: {len(release.model.cliques)} cliques, {release.model.size_mb:.2f} MB, "
            f"estimated rows {release.model.total:,.0f}.</p>" + _rules(release)
            + details("Model cliques", model) + details("Configuration of the run", info))


def _rules(release: "Release") -> str:
    """The public rules the model keeps as structural zeros (nothing without rules)."""
    rules = release.constraints
    if not rules:
        return ""
    return (f"<p>{len(rules)} public rule(s) kept as structural zeros: the model gives every combination they "
            "forbid probability 0, so no synthetic row breaks them (public knowledge: no budget spent).</p>"
            + table(["#", "rule"], [(i, describe(r)) for i, r in enumerate(rules, 1)], numeric=(0,)))


def _settings(config: dict) -> list[tuple[str, object]]:
    """The run's configuration as rows: the mechanism's (its name, then its fields but the workload), the spec split's."""
    mechanism = config.get(MECHANISM_PART) or {}
    return ([("mechanism" if k == "name" else k, v) for k, v in mechanism.items() if k != "workload"]
            + [(f"spec.{k}", v) for k, v in (config.get(SPEC_PART) or {}).items()])


def _diagnostic(d: Diagnostic) -> str:
    banner = ('<div class="banner warning"><strong>NON-PRIVATE DIAGNOSTIC.</strong> This section reads the '
              f"{d.rows:,} private rows, with no privacy charge: it is not differentially private. Keep it to "
              "yourself: do not publish or share this file. Share a report made without the private data instead.</div>")
    by_way = {k: [e.tv for e in d.errors if len(e.clique) == k] for k in (1, 2)}
    summary = cards([(f"mean total variation, {k}-way ({len(v)})", statistics.fmean(v)) for k, v in by_way.items() if v]
                    + [("worst", f"{d.errors[0].tv:.4f}")])
    headers = ["rank", "marginal", "way", "cells", "measured", "TV model"] + (["TV synthetic"] if d.synthetic else [])
    rows = [(i + 1, " x ".join(e.clique), len(e.clique), e.cells, e.measured, e.tv)
            + ((e.tv_synthetic,) if d.synthetic else ()) for i, e in enumerate(d.errors)]
    errors = table(headers, rows, numeric=(0, 2, 3, 5, 6), highlight=[i < 10 for i in range(len(rows))])
    overview, *rest = d.plots
    ones = [p for p in rest if p.name.startswith("oneway-")]
    twos = [p for p in rest if p.name.startswith("twoway-")]
    return (banner + summary + _encoding(d.encoding) + _efficacy(d.efficacy) + figure(overview)
            + "<p>Total variation distance (half the L1 distance between the normalised tables) of every 1-way and "
            "2-way marginal of the model from the true one, worst first; <em>measured</em>: the marginal lies inside "
            "a measured clique (otherwise the model inferred it)."
            + (" Measured on the spec's codes: what its bounds, bins and &lt;other&gt; lose is in the table above, "
               "not here." if d.encoding is not None else "") + "</p>"
            + details(f"All {len(rows)} marginals, worst first", errors, open_=True)
            + "<h3>1-way marginals: true vs model (non-private)</h3>"
            + '<div class="grid">' + "".join(map(figure, ones)) + "</div>"
            + (f"<h3>The {len(twos)} worst 2-way marginals (non-private)</h3>" + "".join(map(figure, twos))
               if twos else ""))


def _encoding(e: Encoding | None) -> str:
    """What the spec's rules did to the private raw rows (true counts: non-private)."""
    if e is None:
        return ""
    rows = [(name, c.get("clipped_low", 0), c.get("clipped_high", 0), c.get("other", 0), c.get("missing", 0),
             "; ".join(f"{v} ({n:,})" for v, n in e.unseen.get(name, [])))
            for name, c in e.columns.items()]
    kept = (f"all {e.rows:,} rows kept" if e.kept == e.rows else
            f"{e.rows - e.kept:,} of {e.rows:,} rows left out by the spec's rules ({e.kept:,} kept)")
    return ("<h3>The private rows through the spec (non-private)</h3>"
            f"<p>The raw rows were encoded by the release's spec: {esc(kept)}. Per column, true counts of values "
            "clipped to the bounds, outside the released categories (to &lt;other&gt; or left out, by the column's "
            "rule) and missing; the most frequent values outside the categories.</p>"
            + table(["column", "below the bounds", "above the bounds", "outside the categories", "missing",
                     "most frequent values outside the categories (rows)"], rows, numeric=(1, 2, 3, 4)))


def _efficacy(e: Efficacy | None) -> str:
    """Train on synthetic, test on real (non-private: the real rows are read)."""
    if e is None:
        return ""
    model = "logistic regression" if e.task == "classification" else "linear regression"
    rows = [(metric, synth, real, base) for metric, synth, real, base in e.scores]
    notes = "".join(f"<li>{esc(n)}</li>" for n in e.notes)
    return (f"<h3>ML efficacy for {esc(e.target)}: train on synthetic, test on real (non-private)</h3>"
            f"<p>A {model} on the {e.features} one-hot columns of the other attributes, trained once on "
            f"{e.train_synthetic:,} synthetic rows and once on {e.train_real:,} real rows; both scored on the same "
            f"{e.test_real:,} held-out real rows. The baseline predicts a constant (the real training rows' "
            f"{'majority class' if e.task == 'classification' else 'mean'}).</p>"
            + table(["metric", "trained on synthetic", "trained on real", "constant baseline"], rows,
                    numeric=(1, 2, 3)) + (f"<ul>{notes}</ul>" if notes else ""))


def render(release: "Release", plots: list[Plot], diagnostic: Diagnostic | None, title: str,
           ledger_rows: list[dict], by_mechanism: list[tuple[str, int, float]]) -> str:
    """The whole page; ``ledger_rows`` and ``by_mechanism`` as made by `report.ledger_rows` and
    `report.mechanism_totals`."""
    plot = {p.name: p for p in plots}
    top = []
    if not release.private:
        top.append('<div class="banner danger"><strong>NOT PRIVATE.</strong> This release was made with a seeded '
                   "noise source (tests and benchmarks only): anyone who knows the seed can undo its noise. It is "
                   "not differentially private, whatever its ledger says.</div>")
    if diagnostic is not None:
        top.append('<div class="banner warning"><strong>Contains a NON-PRIVATE DIAGNOSTIC</strong> computed from '
                   'the private rows (<a href="#diagnostic">below</a>): do not publish this file.</div>')
    sections = [("summary", "Summary", _summary(release)),
                ("privacy", "Privacy unit and guarantee", guarantee.render(release)),
                ("spec", "Spec: what the codes stand for", spec_section.render(release)),
                ("ledger", "Privacy ledger", _ledger(release, plot["budget"], ledger_rows, by_mechanism)),
                ("rounds", "Rounds", _rounds(release)),
                ("cliques", "Measured cliques and model", _cliques(release, plot["cliques"]))]
    if diagnostic is not None:
        heading = "NON-PRIVATE DIAGNOSTIC: the release against the private rows"
        sections.append(("diagnostic", heading, _diagnostic(diagnostic)))
    nav = "<nav>" + "".join(f'<a href="#{a}">{esc(h)}</a>' for a, h, _ in sections) + "</nav>"
    mechanism = (release.config.get(MECHANISM_PART) or {}).get("name", "unknown mechanism")
    body = "".join(_section(a, h, b, "diagnostic" if a == "diagnostic" else "") for a, h, b in sections)
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><h1>{esc(title)}</h1><p class=\"sub\">{esc(mechanism)} release over {len(release.domain)} "
            f"attributes; made by dp-marginals</p>{''.join(top)}{nav}{body}</body></html>\n")
