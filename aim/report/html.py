"""The report's HTML page: one self-contained file (inline CSS, images as base64 data URIs, no
JavaScript; long tables fold into ``<details>``). Every string that reaches the page — attribute
names, labels, ledger labels, config values — goes through `html.escape`.
"""

from __future__ import annotations

import base64
import html
import statistics
from typing import TYPE_CHECKING, Iterable, Sequence

from ..release_config import MECHANISM_PART, SPEC_PART
from .types import Diagnostic, Plot

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 1em 2em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.1em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
.sub { color: #666; margin-top: 0; }
.banner { padding: 0.8em 1.2em; border-radius: 6px; margin: 1em 0; font-size: 1.05em; }
.danger { background: #b30000; color: #fff; } .danger strong { font-size: 1.3em; }
.warning { background: #fff3cd; border: 3px solid #d97706; color: #5a3a00; }
.ok { background: #e8f5e9; border: 1px solid #66bb6a; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.5em 1em; min-width: 9em; background: #fafafa; }
.card .v { font-size: 1.4em; font-weight: 600; } .card .k { color: #666; font-size: 0.85em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fdecea; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
.grid { display: flex; flex-wrap: wrap; gap: 1em; } .grid figure { flex: 1 1 480px; margin: 0; }
details { margin: 0.6em 0; } summary { cursor: pointer; font-weight: 600; }
section.diagnostic { border: 3px dashed #d97706; padding: 0 1.2em 1em; border-radius: 8px; background: #fffdf7; }
nav a { margin-right: 1em; }
"""


def esc(value: object) -> str:
    """``value`` as text safe inside HTML elements and quoted attributes."""
    return html.escape(str(value), quote=True)


def num(value: object, digits: int = 4) -> str:
    """A number with ``digits`` significant digits ("–" when absent)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[int] = (),
          highlight: Sequence[bool] | None = None) -> str:
    """An HTML table; every cell is escaped, columns in ``numeric`` are right-aligned numbers."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = "".join(f'<td class="n">{esc(num(c))}</td>' if j in numeric else f"<td>{esc(num(c))}</td>"
                        for j, c in enumerate(row))
        bad = ' class="bad"' if highlight is not None and highlight[i] else ""
        body.append(f"<tr{bad}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(plot: Plot) -> str:
    """The plot as an embedded PNG with its caption."""
    data = base64.b64encode(plot.png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{esc(plot.caption)}">'
            f"<figcaption>{esc(plot.caption)}</figcaption></figure>")


def cards(items: Sequence[tuple[str, object]]) -> str:
    """A row of key figures."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{esc(num(v))}</div><div class="k">{esc(k)}</div></div>' for k, v in items
    ) + "</div>"


def details(summary: str, content: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>{content}</details>"


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
        ("epsilon spent / budget", f"{num(eps_spent)} / {num(eps_budget)}"), ("delta", num(release.delta)),
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
           f"<p>As (epsilon, delta)-DP with delta = {esc(num(ledger.delta))}: spent epsilon = "
           f"{esc(num(ledger.epsilon()))} of a budget of {esc(num(ledger.epsilon(spent=False)))}.</p>")
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
            f"estimated rows {release.model.total:,.0f}.</p>"
            + details("Model cliques", model) + details("Configuration of the run", info))


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
    return (banner + summary + figure(overview)
            + "<p>Total variation distance (half the L1 distance between the normalised tables) of every 1-way and "
            "2-way marginal of the model from the true one, worst first; <em>measured</em>: the marginal lies inside "
            "a measured clique (otherwise the model inferred it).</p>"
            + details(f"All {len(rows)} marginals, worst first", errors, open_=True)
            + "<h3>1-way marginals: true vs model</h3>" + '<div class="grid">' + "".join(map(figure, ones)) + "</div>"
            + (f"<h3>The {len(twos)} worst 2-way marginals</h3>" + "".join(map(figure, twos)) if twos else ""))


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
                ("ledger", "Privacy ledger", _ledger(release, plot["budget"], ledger_rows, by_mechanism)),
                ("rounds", "Rounds", _rounds(release)),
                ("cliques", "Measured cliques and model", _cliques(release, plot["cliques"]))]
    if diagnostic is not None:
        sections.append(("diagnostic", "NON-PRIVATE DIAGNOSTIC: model vs true marginals", _diagnostic(diagnostic)))
    nav = "<nav>" + "".join(f'<a href="#{a}">{esc(h)}</a>' for a, h, _ in sections) + "</nav>"
    mechanism = (release.config.get(MECHANISM_PART) or {}).get("name", "unknown mechanism")
    body = "".join(_section(a, h, b, "diagnostic" if a == "diagnostic" else "") for a, h, b in sections)
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><h1>{esc(title)}</h1><p class=\"sub\">{esc(mechanism)} release over {len(release.domain)} "
            f"attributes; made by dp-marginals</p>{''.join(top)}{nav}{body}</body></html>\n")
