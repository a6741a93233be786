"""The report's figures, each returned as PNG bytes: budget and rounds, the measured-clique graph,
and (non-private diagnostic) the error overview, true-vs-model bars and heatmaps.

matplotlib is an optional dependency (the ``report`` extra), imported only when a figure is drawn;
figures are built with ``matplotlib.figure.Figure`` (no pyplot, no global state, no display).
Text from user files (attribute names, labels) has its ``$`` escaped so it is never read as math.
"""

from __future__ import annotations

import io
import itertools
import math
from typing import TYPE_CHECKING, Sequence

import networkx as nx
import numpy as np

from .types import MarginalError

if TYPE_CHECKING:  # pragma: no cover
    from marginals.domain import Domain
    from marginals.measurement import Measurement

EXTRA = "report"
TRUE_COLOR, MODEL_COLOR, INFERRED_COLOR, SYNTH_COLOR = "#4d4d4d", "#d95f02", "#fdb863", "#1b9e77"
MECHANISM_COLORS = ["#1f78b4", "#e6ab02", "#7570b3", "#e7298a", "#66a61e"]
DPI = 100


class MissingExtraError(ImportError):
    """An optional dependency of the report is not installed."""


def require_matplotlib():
    """The ``matplotlib.figure.Figure`` class, or `MissingExtraError` naming the extra to install."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError(
            f"the HTML report draws its plots with matplotlib, which is not installed: "
            f"pip install 'dp-marginals[{EXTRA}]' (or pip install matplotlib)"
        ) from exc
    return Figure


def _text(value: object, limit: int = 40) -> str:
    """A user string safe for matplotlib text: shortened, with ``$`` escaped (no mathtext)."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _formatter(fmt):
    """A tick formatter from a one-argument function."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: fmt(value))


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def budget_figure(budget: float, totals: Sequence[tuple[str, int, float]], rounds: Sequence[dict]) -> bytes:
    """Left: the zCDP budget as one bar split by mechanism plus what remains. Right (when there are
    rounds): the share of the budget spent and the noise scale sigma after each round."""
    Figure = require_matplotlib()
    has_rounds = any("rho_used" in r for r in rounds)
    fig = Figure(figsize=(10 if has_rounds else 6, 3.2), layout="constrained")
    axes = fig.subplots(1, 2, width_ratios=[1, 2]) if has_rounds else [fig.subplots()]
    ax = axes[0]
    left = 0.0
    for i, (kind, count, rho) in enumerate(totals):
        ax.barh(0, rho / budget, left=left, color=MECHANISM_COLORS[i % len(MECHANISM_COLORS)],
                label=f"{_text(kind)} ({count}): {100 * rho / budget:.1f}%")
        left += rho / budget
    ax.barh(0, max(0.0, 1 - left), left=left, color="#dddddd", label=f"remaining: {100 * max(0.0, 1 - left):.1f}%")
    ax.set_xlim(0, 1)
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(_formatter(lambda x: f"{100 * x:.0f}%"))
    ax.set_title(f"budget rho = {budget:.4g} (zCDP)", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), fontsize=8, frameon=False)
    if has_rounds:
        _rounds_axes(axes[1], budget, rounds)
    return _png(fig)


def _rounds_axes(ax, budget: float, rounds: Sequence[dict]) -> None:
    from matplotlib.ticker import MaxNLocator

    steps = [r for r in rounds if "rho_used" in r]
    x = [r.get("round", i + 1) for i, r in enumerate(steps)]
    ax.plot(x, [100 * r["rho_used"] / budget for r in steps], color=MECHANISM_COLORS[0], marker=".", label="budget spent")
    ax.set_ylim(0, 105)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel("budget spent (%)", color=MECHANISM_COLORS[0])
    sigmas = [(xi, r["sigma"]) for xi, r in zip(x, steps) if isinstance(r.get("sigma"), (int, float))]
    if sigmas:
        twin = ax.twinx()
        twin.step([s[0] for s in sigmas], [s[1] for s in sigmas], where="mid", color=MODEL_COLOR, label="sigma")
        annealed = [(xi, r["sigma"]) for xi, r in zip(x, steps) if r.get("annealed")]
        if annealed:
            twin.scatter(*zip(*annealed), marker="v", color="black", zorder=3, label="annealed after this round")
        twin.set_yscale("log")
        twin.yaxis.set_major_formatter(_formatter(lambda v: f"{v:g}"))
        twin.yaxis.set_minor_formatter(_formatter(lambda v: f"{v:g}"))
        twin.tick_params(axis="y", which="minor", labelsize=7)
        twin.set_ylabel("sigma (noise scale)", color=MODEL_COLOR)
        twin.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), ncols=2, fontsize=8, frameon=False)
    ax.set_title(f"{len(steps)} selection rounds", fontsize=10)


def _pair_sigmas(measurements: Sequence["Measurement"]) -> dict[tuple[str, str], tuple[float, bool]]:
    """Each measured pair -> (effective sigma over the measurements covering it, from a 3+-way clique)."""
    precision: dict[tuple[str, str], float] = {}
    wide: dict[tuple[str, str], bool] = {}
    for m in measurements:
        for pair in itertools.combinations(m.clique, 2):
            key = tuple(sorted(pair))
            precision[key] = precision.get(key, 0.0) + 1.0 / m.sigma**2
            wide[key] = wide.get(key, False) or len(m.clique) > 2
    return {k: (1.0 / math.sqrt(p), wide[k]) for k, p in precision.items()}


def _layout(graph: nx.Graph, order: Sequence[str]) -> dict:
    """Kamada-Kawai for the largest connected part (it shows its structure, but flings other parts
    to the rim); the remaining attributes in a row underneath, each part's nodes side by side."""
    rank = {a: i for i, a in enumerate(order)}
    parts = sorted((sorted(p, key=rank.get) for p in nx.connected_components(graph)), key=lambda p: (-len(p), rank[p[0]]))
    main = graph.subgraph(parts[0])
    pos = {k: np.asarray(v) for k, v in (nx.kamada_kawai_layout(main) if len(main) > 2 else nx.circular_layout(main)).items()}
    rest = [a for part in parts[1:] for a in part]
    if rest:
        bottom = min(v[1] for v in pos.values()) - 0.5
        xs = np.linspace(-1, 1, len(rest) + 2)[1:-1]
        pos.update({a: np.array([x, bottom]) for a, x in zip(rest, xs)})
    return pos


def clique_graph_figure(domain: "Domain", measurements: Sequence["Measurement"]) -> bytes:
    """Attributes as nodes (size: number of levels), an edge per measured pair coloured by its
    effective sigma (pairs inside a 3-way or larger clique dashed)."""
    Figure = require_matplotlib()
    from matplotlib import cm, colormaps, colors

    graph = nx.Graph()
    graph.add_nodes_from(domain.attrs)
    pairs = _pair_sigmas(measurements)
    graph.add_edges_from(pairs)
    pos = _layout(graph, domain.attrs)
    size = max(6.0, min(11.0, 3 + 0.4 * len(domain)))
    fig = Figure(figsize=(size, size * 0.75), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    if pairs:
        sigmas = [s for s, _ in pairs.values()]
        norm = colors.LogNorm(min(sigmas), max(sigmas)) if min(sigmas) < max(sigmas) else colors.Normalize(0, 2 * sigmas[0])
        cmap = colors.ListedColormap(colormaps["viridis"](np.linspace(0.0, 0.85, 256)))  # no pale yellow
        for wide in (False, True):
            edges = [e for e, (_, w) in pairs.items() if w == wide]
            if edges:
                nx.draw_networkx_edges(graph, pos, edgelist=edges, ax=ax, style="dashed" if wide else "solid",
                                       width=[1.0 + 3.0 * min(sigmas) / pairs[e][0] for e in edges],
                                       edge_color=[cmap(norm(pairs[e][0])) for e in edges])
        bar = fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.6, label="sigma of the measurement(s)")
        bar.ax.yaxis.set_major_formatter(_formatter(lambda v: f"{v:g}"))
        bar.ax.yaxis.set_minor_formatter(_formatter(lambda v: f"{v:g}"))
    levels = np.array([domain[a] for a in domain.attrs], dtype=float)
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_size=150 + 600 * np.sqrt(levels / levels.max()),
                           node_color="#cfe2f3", edgecolors="#1f78b4")
    nx.draw_networkx_labels(graph, pos, ax=ax, labels={a: _text(a, 24) for a in domain.attrs}, font_size=9,
                            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    xy = np.array(list(pos.values()))
    pad = 0.15 * max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1.0)
    ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)  # room for the nodes and labels at the rim
    ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
    wide = sum(len(m.clique) > 2 for m in measurements)
    apart = nx.number_connected_components(graph) > 1
    ax.set_title(f"{len(domain)} attributes, {len(pairs)} measured pairs"
                 + (f"; {wide} measurements of 3+ attributes (dashed)" if wide else "")
                 + ("\nbottom row: attributes not linked to the main group" if apart else ""), fontsize=10)
    return _png(fig)


def error_overview_figure(errors: Sequence[MarginalError], top: int = 25) -> bytes:
    """Horizontal bars of the total variation of the ``top`` worst marginals (measured ones darker)."""
    Figure = require_matplotlib()
    shown = list(errors[:top])[::-1]
    fig = Figure(figsize=(8, 1.0 + 0.25 * max(1, len(shown))), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(shown))
    from matplotlib.patches import Patch

    ax.barh(y, [e.tv for e in shown], color=[MODEL_COLOR if e.measured else INFERRED_COLOR for e in shown])
    handles = [Patch(color=MODEL_COLOR, label="model, measured marginal"),
               Patch(color=INFERRED_COLOR, label="model, inferred marginal")]
    if shown and shown[0].tv_synthetic is not None:
        handles.append(ax.scatter([e.tv_synthetic for e in shown], y, color=SYNTH_COLOR, zorder=3, s=14,
                                  label="synthetic rows"))
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    ax.set_yticks(y, [_text(" x ".join(e.clique), 50) for e in shown], fontsize=8)
    log = spans_orders(np.array([e.tv for e in shown]))
    if log:
        ax.set_xscale("log")
    ax.set_xlabel("total variation distance to the true marginal" + (" (log scale)" if log else ""))
    ax.set_title(f"worst {len(shown)} of {len(errors)} marginals", fontsize=10)
    return _png(fig)


def oneway_figure(attr: str, labels: Sequence[str], true_counts: np.ndarray, model_counts: np.ndarray,
                  synth_counts: np.ndarray | None, tv: float) -> bytes:
    """Side-by-side bars of the true and model (and synthetic) shares of each level of ``attr``."""
    Figure = require_matplotlib()
    series = [("true", true_counts, TRUE_COLOR), ("model", model_counts, MODEL_COLOR)]
    if synth_counts is not None:
        series.append(("synthetic", synth_counts, SYNTH_COLOR))
    n = len(labels)
    shown = _tick_labels(labels, 24, 18)
    fontsize = 7 if n > 16 else 8
    width = min(10.0, max(3.0 + 1.5 * len(series), 2.5 + 0.2 * n * len(series)))  # room for title and legend
    rotate = sum(len(t) + 2 for _, t in shown) * 0.5 * fontsize / 72 > 0.8 * (width - 0.8)
    bottom = _label_depth([t for _, t in shown], fontsize, "rotated" if rotate else "flat") + 0.25
    fig = Figure(figsize=(width, 2.6 + bottom))
    _margins(fig, left=0.85, right=0.15, bottom=bottom, top=0.45)
    ax = fig.subplots()
    x = np.arange(n)
    width = 0.8 / len(series)
    shares = []
    for i, (name, counts, color) in enumerate(series):
        counts = np.clip(np.asarray(counts, dtype=np.float64), 0, None)
        shares.append(counts / max(counts.sum(), 1e-300))
        ax.bar(x + (i - (len(series) - 1) / 2) * width, shares[-1], width, color=color, label=name)
    log = spans_orders(np.concatenate(shares))
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_formatter(lambda v: f"{100 * v:g}%"))
    ax.set_xticks([i for i, _ in shown], [t for _, t in shown], rotation=60 if rotate else 0,
                  ha="right" if rotate else "center", rotation_mode="anchor", fontsize=fontsize)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylabel("share (log scale)" if log else "share of rows")
    ax.set_title(f"{_text(attr)}  (TV {tv:.3f})", fontsize=10, loc="left")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=len(series), fontsize=8, frameon=False,
              borderaxespad=0.1)
    return _png(fig)


def twoway_figure(pair: Sequence[str], labels: tuple[Sequence[str], Sequence[str]], true_counts: np.ndarray,
                  model_counts: np.ndarray, tv: float) -> bytes:
    """Heatmaps of the true and model shares of a 2-way marginal (same colour scale) and their difference."""
    Figure = require_matplotlib()
    p = np.asarray(true_counts, dtype=np.float64)
    p = p / p.sum()
    q = np.clip(np.asarray(model_counts, dtype=np.float64), 0, None)
    q = q / max(q.sum(), 1e-300)
    rows, cols = _tick_labels(labels[0], 16, 14), _tick_labels(labels[1], 16, 14)
    bottom = _label_depth([t for _, t in cols], 7, "rotated") + 0.3
    left = _label_depth([t for _, t in rows], 7, "side") + 0.35
    fig = Figure(figsize=(12, 3.0 + bottom))
    _margins(fig, left=left, right=0.75, bottom=bottom, top=0.5)
    grid = fig.add_gridspec(1, 6, width_ratios=[1, 1, 0.05, 0.3, 1, 0.05], wspace=0.08)
    axes = [fig.add_subplot(grid[0, i]) for i in (0, 1, 4)]
    percent = {"format": _formatter(lambda v: f"{100 * v:.2g}%")}
    top = max(p.max(), q.max(), 1e-12)
    for ax, table, name in ((axes[0], p, "true"), (axes[1], q, "model")):
        image = ax.imshow(table, cmap="Blues", vmin=0, vmax=top, aspect="auto", interpolation="nearest")
        ax.set_title(name, fontsize=10)
    fig.colorbar(image, cax=fig.add_subplot(grid[0, 2]), label="share of rows", **percent)
    bound = max(np.abs(q - p).max(), 1e-12)
    diff = axes[2].imshow(q - p, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
    axes[2].set_title("model - true", fontsize=10)
    fig.colorbar(diff, cax=fig.add_subplot(grid[0, 5]), **percent)
    for ax in axes:
        ax.set_xticks([i for i, _ in cols], [t for _, t in cols], rotation=60, ha="right", rotation_mode="anchor", fontsize=7)
        ax.set_xlabel(_text(pair[1]))
    axes[0].set_yticks([i for i, _ in rows], [t for _, t in rows], fontsize=7)
    for ax in axes[1:]:
        ax.set_yticks([])
    axes[0].set_ylabel(_text(pair[0]))
    fig.suptitle(f"{_text(pair[0])} x {_text(pair[1])}  (TV {tv:.3f})", fontsize=11)
    return _png(fig)


def spans_orders(values: np.ndarray, orders: float = 2.0) -> bool:
    """True when the positive ``values`` span more than ``orders`` orders of magnitude (then a bar
    chart uses a log scale, or its small bars would not show)."""
    positive = np.asarray(values, dtype=np.float64)
    positive = positive[positive > 0]
    return positive.size > 1 and positive.max() > 10**orders * positive.min()


def _tick_labels(labels: Sequence[str], most: int, length: int) -> list[tuple[int, str]]:
    """(position, shortened label) at every level, or at every k-th when there are more than ``most``."""
    step = max(1, math.ceil(len(labels) / most))
    return [(i, _text(labels[i], length)) for i in range(0, len(labels), step)]


def _label_depth(labels: Sequence[str], fontsize: float, how: str) -> float:
    """Inches taken by tick labels: under an axis ``"rotated"`` by 60 degrees or ``"flat"``, or
    beside it (``"side"``). An estimate: the report lays its figures out by hand, since
    matplotlib's layout engines would cost most of its running time."""
    height = fontsize / 72
    width = 0.5 * height * max((len(s) for s in labels), default=1)
    depth = {"rotated": 0.87 * width + 0.5 * height, "flat": height, "side": width}[how]
    return depth + 0.12


def _margins(fig, left: float, right: float, bottom: float, top: float) -> None:
    """Margins in inches."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h)
