"""The report's HTML building blocks: the page's CSS and small escaped pieces (numbers, tables,
figures as base64 data URIs, key-figure cards, folding ``<details>``). Every string that reaches
the page goes through `esc` (`html.escape`)."""

from __future__ import annotations

import base64
import html
from typing import Iterable, Sequence

from .types import Plot

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
    """A folding block: ``summary`` (escaped) shown, ``content`` (HTML) inside."""
    return f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>{content}</details>"
