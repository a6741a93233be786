"""Plots and summary.md of `benchmarks.figure3`, computed from its results table only.

The summary states measured comparisons: means and standard errors over trials (s.e. = sample
standard deviation / sqrt(trials)) and counts of epsilons where one method's mean is better, by
more than 2 pooled s.e., within them, or worse. It passes no verdict.

Re-render the plots and summary of a finished run from its ``results.csv`` and ``run.json``::

    python -m benchmarks.figure3_report benchmarks/results/full-200
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import figure3_others as others
from .figure3_investigation import investigation
from .harness import mean_se, pyplot, save_figure, write_json, write_text

AIM_METHODS = ("ddssp", "aim_synth", "pmt_release")  # rows that depend on an AIM release (and its model size)
LABELS = {"public": "public (non-private)", "ddssp": "DD-SSP", "aim_synth": "AIM-Synth", "adassp": "AdaSSP",
          "objpert": "ObjPert", "ddssp_exact": "DD-SSP, exact marginals (non-private)",
          "adassp_paper": "AdaSSP, paper's calibration (diagnostic)", **others.LABELS}  # fmt: skip
STYLE = {"ddssp": ("tab:blue", "o"), "aim_synth": ("tab:orange", "s"), "adassp": ("tab:green", "^"),
         "objpert": ("tab:red", "v"), "public": ("black", None), "adassp_paper": ("tab:olive", "x"),
         "ddssp_exact": ("tab:gray", None), **others.STYLE}  # fmt: skip
PLOTTED = ("ddssp", "aim_synth", "adassp", "objpert", "adassp_paper", "tukeyem", "pmt", "pmt_release", "dp_rr", "dp_lr")
BASELINE = {"linear": "adassp", "logistic": "objpert"}
CLOSE_AUC = 0.01  # "close" AUC at high epsilon (the paper's "close performance")
LOW_EPS = 0.2  # "low-epsilon regime": epsilon <= this
HIGH_EPS = 1.0  # "high epsilon": epsilon >= this
ORDER = [("adult", "linear"), ("adult", "linear-no-education"), ("acs-income-lin", "linear"), ("adult", "logistic"),
         ("acs-employment", "logistic")]  # fmt: skip
CLAIMS = {  # what the paper's Figure 3 text says, for the comparisons below
    "linear": "DD-SSP and AIM-Synth perform nearly identically; both improve on AdaSSP on every data set but "
              "ACSincome, where they perform similarly.",
    "logistic": "DD-SSP closely matches AIM-Synth (slightly better on Adult and ACSincome); both improve AUC over "
                "ObjPert, clearly at low epsilon and closely at high epsilon.",
}  # fmt: skip


def ordered(keys) -> list:
    """Unique (dataset, task, ...) tuples in the figure's panel order (unknown tasks last)."""
    keys = list(dict.fromkeys(keys))
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(keys, key=lambda k: (rank.get(tuple(k[:2]), len(ORDER)), k))


# -- statistics -----------------------------------------------------------------------------------


def model_sizes(df: pd.DataFrame) -> list[float]:
    """The AIM model sizes of the run, largest (the paper's 200 MB) first."""
    sizes = df.loc[df["method"].isin(AIM_METHODS), "max_model_size"].dropna().unique()
    return sorted((float(m) for m in sizes), reverse=True)


def for_size(df: pd.DataFrame, mms: float | None) -> pd.DataFrame:
    """The AIM methods' rows at model size ``mms`` plus every baseline row."""
    if mms is None:
        return df
    return df[~df["method"].isin(AIM_METHODS) | np.isclose(df["max_model_size"].astype(float), mms)]


def cell_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and number of trials per (dataset, task, method, epsilon)."""
    return mean_se(df, ["dataset", "task", "kind", "target", "method", "epsilon"])


def lookup(stats: pd.DataFrame) -> dict:
    """(dataset, task, method, epsilon) -> (mean, s.e., trials)."""
    return {(r.dataset, r.task, r.method, float(r.epsilon)): (float(r.mean), float(r.se), int(r.n)) for r in stats.itertuples()}


def fmt(mean: float, se: float, kind: str) -> str:
    """A mean ± s.e. cell (4 significant digits for MSE, 3 decimals for AUC)."""
    digits = 4 if kind == "linear" else 3
    if math.isnan(se):
        return f"{mean:.{digits}g}" if kind == "linear" else f"{mean:.{digits}f}"
    if kind == "linear":
        return f"{mean:.{digits}g} ± {se:.2g}"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def compare(a: tuple, b: tuple, kind: str) -> tuple[bool, bool | None, float]:
    """(a better than b on means, |difference| > 2 pooled s.e. (None without s.e.), difference a - b)."""
    (ma, sa, _), (mb, sb, _) = a, b
    diff = ma - mb
    better = diff < 0 if kind == "linear" else diff > 0
    pooled = math.sqrt(sa**2 + sb**2)
    significant = None if math.isnan(pooled) else abs(diff) > 2 * pooled
    return better, significant, diff


def beats_text(a: tuple, b: tuple, kind: str) -> str:
    better, significant, _ = compare(a, b, kind)
    word = "yes" if better else "no"
    if significant is None:
        return f"{word} (means; 1 trial)"
    return word if significant else f"{word} (within 2 s.e.)"


def agree_text(d: tuple, s: tuple, kind: str) -> str:
    better, significant, _ = compare(d, s, kind)
    if significant is None:
        return "n/a (1 trial)"
    if not significant:
        return "yes"
    return "no (DD-SSP better)" if better else "no (AIM-Synth better)"


# -- plots ----------------------------------------------------------------------------------------


def _panel(ax, cell: pd.DataFrame, rows: pd.DataFrame, kind: str, title: str) -> None:
    """One data set / task: every plotted method's mean ± s.e. vs epsilon, public and exact as lines."""
    from matplotlib.ticker import NullFormatter

    for method in PLOTTED:
        m = cell[cell["method"] == method].sort_values("epsilon")
        if m.empty:
            continue
        color, marker = STYLE[method]
        ax.errorbar(m["epsilon"], m["mean"], yerr=m["se"].fillna(0.0), color=color, marker=marker, capsize=3,
                    label=LABELS[method], linestyle=":" if method in ("adassp_paper", "dp_rr", "dp_lr") else "-")  # fmt: skip
        if method == "tukeyem":
            _annotate_ptr(ax, rows, m, color)
    for method, color, style in (("public", "black", "--"), ("ddssp_exact", "tab:gray", ":")):
        line = cell[cell["method"] == method]
        if not line.empty:
            ax.axhline(float(line["mean"].mean()), color=color, linestyle=style, label=LABELS[method])
    ax.set_xscale("log")
    values = cell["mean"].to_numpy()
    if kind == "linear" and values.min() > 0 and values.max() / values.min() > 10:
        ax.set_yscale("log")  # MSEs spanning orders of magnitude (adult's leaky full task)
    core = cell[cell["method"].isin(("public", "ddssp", "aim_synth", "adassp", "objpert", "tukeyem"))]
    if kind == "linear" and not core.empty and values.max() > 5 * core["mean"].max():
        ax.set_ylim(top=5 * core["mean"].max())  # PMT / DP-RR far off: clipped, see summary.md
    eps = sorted(cell["epsilon"].unique())
    ax.set_xticks(eps)
    ax.set_xticklabels([f"{e:g}" for e in eps])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test MSE" if kind == "linear" else "test AUC")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)


def _figure(sized: pd.DataFrame, stats: pd.DataFrame, kind: str, mms: float | None, out: Path) -> Path | None:
    """figure3_<kind>[_mms<size>].png of one model size, or None when the run has no such task."""
    sub = stats[stats["kind"] == kind]
    panels = ordered(zip(sub["dataset"], sub["task"], sub["target"]))
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * max(len(panels), 2), 5.2), squeeze=False)
    for ax, (dataset, task, target) in zip(axes[0], panels):
        cell = sub[(sub["dataset"] == dataset) & (sub["task"] == task)]
        rows = sized[(sized["dataset"] == dataset) & (sized["task"] == task)]
        _panel(ax, cell, rows, kind, f"{dataset}: {task}\n({target})")
    legend = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    ncol = 2 if len(panels) < 3 else 4
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=ncol, fontsize=8)
    fig.suptitle(f"Figure 3 ({kind} regression)" + (f", AIM max_model_size {mms:g} MB" if mms is not None else ""),
                 fontsize=11)  # fmt: skip
    fig.tight_layout(rect=(0, 0.02 + 0.045 * math.ceil(len(legend) / ncol), 1, 1))
    return save_figure(fig, Path(out) / (f"figure3_{kind}" + ("" if mms is None else f"_mms{mms:g}") + ".png"))


def make_plots(df: pd.DataFrame, out: Path) -> list[Path]:
    """figure3_<kind>_mms<size>.png: metric vs epsilon (mean ± s.e.), one panel per dataset/task."""
    paths = []
    for mms in (model_sizes(df) or [None]) if not df.empty else []:
        sized = for_size(df, mms)
        stats = cell_stats(sized)
        paths += [p for p in (_figure(sized, stats, kind, mms, out) for kind in ("linear", "logistic")) if p]
    return paths


def _annotate_ptr(ax, rows: pd.DataFrame, means: pd.DataFrame, color: str) -> None:
    """Label each TukeyEM point with its PTR pass count ("PTR passed/trials")."""
    tukey = rows[rows["method"] == "tukeyem"]
    for eps, group in tukey.groupby("epsilon"):
        passed = int(group["ptr_passed"].astype("boolean").fillna(False).astype(bool).sum())
        y = means.loc[np.isclose(means["epsilon"], eps), "mean"]
        if len(y):
            ax.annotate(f"PTR {passed}/{len(group)}", (eps, float(y.iloc[0])), textcoords="offset points",
                        xytext=(0, 6), fontsize=7, color=color, ha="center")  # fmt: skip


# -- summary ----------------------------------------------------------------------------------------


def _task_table(stats: pd.DataFrame, S: dict, dataset: str, task: str, kind: str, target: str) -> list[str]:
    base = BASELINE[kind]
    metric = "test MSE, lower is better" if kind == "linear" else "test AUC, higher is better"
    cell = stats[(stats["dataset"] == dataset) & (stats["task"] == task)]
    pub = cell[cell["method"] == "public"]
    public = f"{float(pub['mean'].mean()):.4g}" if not pub.empty else "n/a"
    lines = [f"#### {dataset} / {task} (target `{target}`; {metric}; public reference {public})", ""]
    lines.append(f"| epsilon | DD-SSP | AIM-Synth | {LABELS[base]} | DD-SSP beats {LABELS[base]}? | "
                 "DD-SSP and AIM-Synth agree? |")  # fmt: skip
    lines.append("|---|---|---|---|---|---|")
    for eps in sorted(cell["epsilon"].unique()):
        d, s, b = (S.get((dataset, task, m, float(eps))) for m in ("ddssp", "aim_synth", base))
        cols = [f"{eps:g}"] + [fmt(x[0], x[1], kind) if x else "–" for x in (d, s, b)]
        cols.append(beats_text(d, b, kind) if d and b else "–")
        cols.append(agree_text(d, s, kind) if d and s else "–")
        lines.append("| " + " | ".join(cols) + " |")
    return lines + [""]


def _comparison_row(S: dict, epsilons: list[float], key: tuple, pair: tuple, kind: str) -> list[str] | None:
    """Counts over the epsilons where both methods have a result (None when there is none)."""
    (dataset, task), (a, b) = key, pair
    cells = [(e, S[(dataset, task, a, e)], S[(dataset, task, b, e)]) for e in epsilons
             if (dataset, task, a, e) in S and (dataset, task, b, e) in S]  # fmt: skip
    if not cells:
        return None
    results = [(e, compare(x, y, kind)) for e, x, y in cells]
    has_se = all(r[1] is not None for _, r in results)
    count = lambda pred: str(sum(1 for e, r in results if pred(e, r)))  # noqa: E731
    row = [f"{dataset}/{task}", f"{LABELS[a]} vs {LABELS[b]}", str(len(cells)), count(lambda e, r: r[0])]
    if has_se:
        row += [count(lambda e, r: r[0] and r[1]), count(lambda e, r: not r[1]), count(lambda e, r: not r[0] and r[1])]
    else:
        row += ["n/a (1 trial)"] * 3
    row.append(f"{np.mean([r[2] for _, r in results]):+.4g}")
    if kind == "logistic":
        low, high = [x for x in results if x[0] <= LOW_EPS], [x for x in results if x[0] >= HIGH_EPS]
        strong = f" ({sum(bool(r[0] and r[1]) for _, r in low)} by > 2 s.e.)" if has_se else ""
        row.append(f"{sum(r[0] for _, r in low)} of {len(low)}{strong}")
        row.append(f"{sum(abs(r[2]) <= CLOSE_AUC for _, r in high)} of {len(high)}")
    return row


def comparisons(stats: pd.DataFrame, S: dict) -> list[str]:
    """Per task type: the paper's statement, then counts of epsilons per method pair."""
    lines = []
    for kind in ("linear", "logistic"):
        tasks = [(d, t) for d, t, k in ordered(zip(stats["dataset"], stats["task"], stats["kind"])) if k == kind]
        if not tasks:
            continue
        base = BASELINE[kind]
        head = ["task", "A vs B", "epsilons", "A better (means)", "A better by > 2 s.e.", "within 2 s.e.",
                "A worse by > 2 s.e.", "mean of A - B"]  # fmt: skip
        if kind == "logistic":
            head += [f"eps <= {LOW_EPS:g}: A better", f"eps >= {HIGH_EPS:g}: abs(A - B) <= {CLOSE_AUC}"]
        lines += [f"**{kind.capitalize()} regression.** The paper: {CLAIMS[kind]}", "",
                  "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]  # fmt: skip
        for key in tasks:
            eps = sorted(float(e) for e in stats.loc[(stats["dataset"] == key[0]) & (stats["task"] == key[1]), "epsilon"].unique())
            for pair in (("ddssp", "aim_synth"), ("ddssp", base), ("aim_synth", base)):
                row = _comparison_row(S, eps, key, pair, kind)
                if row:
                    lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return lines


def _header(info: dict) -> list[str]:
    args, wall = info["args"], info["wall_seconds"]
    eps = "given: " + ", ".join(f"{e:g}" for e in args["eps"]) if args["eps"] else "the paper’s (linear 0.05, 0.1, 0.5, 1, 2; logistic adds 0.2)"
    return [
        f"# Figure 3 (DD-SSP paper): run `{args['run_name']}`", "",
        f"**Total wall time: {wall:.1f} s ({wall / 60:.1f} min)** on {info['jobs']} worker process(es).", "",
        f"- data sets: {', '.join(args['datasets'])}; trials: {args['trials']}; delta: {args['delta']:g}; "
        f"base seed: {args['seed']}; AIM max_model_size: {', '.join(f'{m:g}' for m in args['max_model_size'])} MB",
        f"- epsilon grid: {eps}",
        "- train: first 50,000 rows of the bundled train.csv; test: the bundled 1,000-row test.csv; one AIM release "
        "(all-pairs workload) per data set, epsilon, trial and model size, shared by DD-SSP and AIM-Synth on every "
        "task of that data set",
        "- numbers: mean ± standard error over trials (s.e. = sample std / sqrt(trials)); the full rows are in "
        "[results.csv](results.csv)",
        "- rules: *beats* compares means (linear: lower MSE, logistic: higher AUC); \"within 2 s.e.\" marks a "
        "difference no larger than 2 sqrt(se_a^2 + se_b^2). *Agree*: |mean_d - mean_s| <= 2 sqrt(se_d^2 + se_s^2) "
        "for DD-SSP (d) and AIM-Synth (s).", "",
    ]  # fmt: skip


def _size_section(df: pd.DataFrame, mms: float | None, info: dict) -> list[str]:
    """Tables, comparisons and diagnostics of one AIM model size."""
    sub = for_size(df, mms)
    stats = cell_stats(sub)
    S = lookup(stats)
    lines = [f"## AIM max_model_size {mms:g} MB" if mms is not None else "## Results", ""]
    lines += [f"![{p}]({p})" for p in info.get("plots", []) if mms is None or p.endswith(f"_mms{mms:g}.png")]
    lines += ["", "### Results by task", ""]
    for dataset, task, kind, target in ordered(zip(stats["dataset"], stats["task"], stats["kind"], stats["target"])):
        lines += _task_table(stats, S, dataset, task, kind, target)
    lines += ["### The paper's claims against these numbers", "",
              f"Counts of epsilons per pair of methods A and B; better = lower MSE / higher AUC. Low epsilon: "
              f"<= {LOW_EPS:g}; high epsilon: >= {HIGH_EPS:g}. The paper's other data sets (Fire, Taxi, ACSincome "
              "logistic, ACSmobility, ACSPublicCoverage) are not part of this run.", ""]  # fmt: skip
    lines += comparisons(stats, S)
    lines += others.others_section(sub, fmt, ordered)
    return lines + investigation(stats, S, float(info["args"]["delta"]))


def summary_markdown(df: pd.DataFrame, info: dict) -> str:
    """summary.md of a run: settings, per-size tables and comparisons, releases, warnings."""
    lines = _header(info)
    if df.empty:
        return "\n".join(lines + ["No results (every unit failed; see run.json)."]) + "\n"
    for mms in model_sizes(df) or [None]:
        lines += _size_section(df, mms, info)
    lines += _release_section(info)
    lines += ["## Warnings and errors", "",
              f"- CollinearityWarning from ddssp (filtered, counted): {info['collinearity_warnings']} "
              "(per fit in the `collinearity_warnings` column of results.csv)"]  # fmt: skip
    lines += [f"- {v} x {k}" for k, v in sorted(info.get("other_warnings", {}).items(), key=lambda kv: -kv[1])]
    lines += [f"- FAILED {e['unit']}: `{e['error'].strip().splitlines()[-1]}`" for e in info.get("errors", [])]
    if not info.get("errors"):
        lines.append("- failed units: none")
    return "\n".join(lines) + "\n"


def _release_section(info: dict) -> list[str]:
    rel = pd.DataFrame(info.get("releases", []))
    lines = ["## AIM releases", ""]
    if rel.empty:
        return lines + ["No AIM releases.", ""]
    lines.append(f"{len(rel)} releases, {int(rel['cached'].sum())} read from the cache (their time is the original "
                 f"AIM run's, from the cache's metadata). Seconds per release (one process each):")  # fmt: skip
    lines.append("")
    lines.append("| max_model_size | dataset | epsilon | releases (cached) | mean s | min s | max s | rounds | model MB |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for (mms, ds, eps), g in rel.groupby(["max_model_size", "dataset", "epsilon"]):
        lines.append(f"| {mms:g} | {ds} | {eps:g} | {len(g)} ({int(g['cached'].sum())}) | {g['seconds'].mean():.1f} | "
                     f"{g['seconds'].min():.1f} | {g['seconds'].max():.1f} | {g['rounds'].mean():.1f} | "
                     f"{g['model_mb'].mean():.2f} |")  # fmt: skip
    slowest = rel.loc[rel["seconds"].idxmax()]
    lines += ["", f"Total AIM time (sum over releases): {rel['seconds'].sum():.0f} s; slowest: {slowest['dataset']} "
              f"eps={slowest['epsilon']:g} ({slowest['seconds']:.1f} s).", ""]  # fmt: skip
    return lines


def write_report(df: pd.DataFrame, info: dict, out: Path) -> None:
    """summary.md and run.json of a run into ``out`` (the plots are made first, see `make_plots`)."""
    write_text(Path(out) / "summary.md", summary_markdown(df, info))
    write_json(Path(out) / "run.json", info)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Re-render the plots and summary.md of a figure3 run folder.")
    p.add_argument("folder", type=Path, help="a figure3 output folder (results.csv and run.json)")
    p.add_argument("--no-plots", action="store_true", help="keep the PNGs as they are")
    args = p.parse_args(argv)
    df = pd.read_csv(args.folder / "results.csv")
    info = json.loads((args.folder / "run.json").read_text())
    if not args.no_plots:
        info["plots"] = [path.name for path in make_plots(df, args.folder)]
    write_report(df, info, args.folder)
    print(f"figure3_report: {len(df)} rows -> {args.folder / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
