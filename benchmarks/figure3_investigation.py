"""The "bug or real?" section of figure3's summary.md, computed from the results table.

Two diagnostics run next to the methods (see `benchmarks/figure3.py`):
- ``ddssp_exact``: DD-SSP on the exact marginals of the training rows, the ceiling any DD-SSP fit
  from noisy marginals can reach (for linear regression it equals ordinary least squares);
- ``adassp_paper``: AdaSSP as the paper's code calibrates it (budget split 1/3, 0.63, 0.03 and
  per-release noise sqrt(log(2/delta_i))/eps_i; not a valid DP mechanism for every epsilon; used
  only to show what the paper's baseline scores on our split).
Where a claim of the paper fails, the section says which explanation the numbers support.
"""

from __future__ import annotations

import math

from marginals.privacy import cdp_rho

LINEAR_BASE, LOGISTIC_BASE = "adassp", "objpert"


def noise_ratios(eps: float, delta: float) -> tuple[float, float]:
    """Our AdaSSP noise std over the paper code's, for the X^T X and the X^T y release (sensitivity cancels)."""
    ours = 1.0 / math.sqrt(2.0 * cdp_rho(eps, delta) / 3.0)  # equal thirds of rho
    shares = ((2 / 3) * 0.95, (2 / 3) * 0.05)
    return tuple(ours / (math.sqrt(math.log(2.0 / (delta * f))) / (eps * f)) for f in shares)


def _significant(a: tuple, b: tuple) -> bool:
    return abs(a[0] - b[0]) > 2.0 * math.sqrt((a[1] if a[1] == a[1] else 0.0) ** 2 + (b[1] if b[1] == b[1] else 0.0) ** 2)


def investigation(stats, S: dict, delta: float) -> list[str]:
    """Markdown lines explaining each failed claim with the diagnostics' numbers."""
    lines = ["### Bug or real? (diagnostics)", ""]
    found = False
    for dataset, task, kind in sorted(set(zip(stats["dataset"], stats["task"], stats["kind"]))):
        eps_grid = sorted(float(e) for e in stats.loc[(stats["dataset"] == dataset) & (stats["task"] == task), "epsilon"].unique())
        cell = {m: {e: S.get((dataset, task, m, e)) for e in eps_grid} for m in
                ("ddssp", "aim_synth", "public", "ddssp_exact", LINEAR_BASE, LOGISTIC_BASE, "adassp_paper")}
        exact = next((v[0] for v in cell["ddssp_exact"].values() if v), None)
        public = next((v[0] for v in cell["public"].values() if v), None)
        if kind == "linear":
            worse = [e for e in eps_grid if cell["ddssp"][e] and cell[LINEAR_BASE][e]
                     and cell["ddssp"][e][0] > cell[LINEAR_BASE][e][0] and _significant(cell["ddssp"][e], cell[LINEAR_BASE][e])]
            if not worse:
                continue
            found = True
            paper = [(e, cell["ddssp"][e], cell["adassp_paper"][e]) for e in eps_grid if cell["ddssp"][e] and cell["adassp_paper"][e]]
            not_worse = sum(1 for _, d, p in paper if d[0] <= p[0] or not _significant(d, p))
            ratios = ", ".join("{:g}: {:.2f} / {:.2f}".format(e, *noise_ratios(e, delta)) for e in eps_grid)
            lines.append(f"- **{dataset}/{task}**: DD-SSP is significantly worse than our AdaSSP at eps "
                         f"{', '.join(f'{e:g}' for e in worse)}.")
            if exact is not None and public is not None:
                lines.append(f"  - DD-SSP from exact marginals: MSE {exact:.4g} vs public OLS {public:.4g} "
                             f"(equal: the Z^T Z algebra is exact, so the gap comes from AIM's noisy marginals, not from DD-SSP).")
            if paper:
                detail = "; ".join(f"eps {e:g}: DD-SSP {d[0]:.4g} vs {p[0]:.4g}" for e, d, p in paper)
                lines.append(f"  - AdaSSP as the paper's code calibrates it (diagnostic): {detail}. DD-SSP is better or within "
                             f"2 s.e. in {not_worse} of {len(paper)} epsilons.")
            lines.append(f"  - Our AdaSSP's noise std relative to the paper code's, X^T X / X^T y release, per eps: {ratios} "
                         "(equal thirds of zCDP through the tight conversion vs the code's 1/3, 0.63, 0.03 split with "
                         "sqrt(log(2/delta_i))/eps_i per release).")
            verdict = ("real: against the paper code's weaker AdaSSP DD-SSP is as good or better, as the paper says; our "
                       "AdaSSP spends the same budget better (far less noise on X^T y, see the ratios above), and DD-SSP "
                       "from AIM's marginals loses to that stronger baseline"
                       if paper and not_worse >= len(paper) / 2
                       else "real: AIM's marginals are too noisy for this task at these epsilons, even against the paper code's AdaSSP")
            lines.append(f"  - Verdict: {verdict}; not a bug.")
        else:
            if exact is None:
                continue
            beaten = []
            for e in eps_grid:
                d = cell["ddssp"][e]
                for other in ("aim_synth", LOGISTIC_BASE):
                    o = cell[other][e]
                    if d and o and o[0] > d[0] and _significant(d, o):
                        beaten.append((e, other, o[0]))
            if not beaten:
                continue
            found = True
            beyond = sum(max(0.0, v - exact) for _, _, v in beaten)
            total_gap = sum(v - cell["ddssp"][e][0] for e, _, v in beaten)
            share = beyond / total_gap if total_gap > 0 else 0.0
            detail = "; ".join(f"eps {e:g}: {'AIM-Synth' if o == 'aim_synth' else 'ObjPert'} {v:.3f} vs "
                               f"{cell['ddssp'][e][0]:.3f}" for e, o, v in beaten)  # fmt: skip
            lines.append(f"- **{dataset}/{task}**: DD-SSP is significantly beaten ({detail}).")
            lines.append(f"  - DD-SSP from exact marginals reaches AUC {exact:.4f} (public logistic regression "
                         f"{public:.4f}): no DD-SSP fit can pass it, since with degree 2 the Chebyshev objective's "
                         "maximiser is a scaled least-squares fit on +-1 labels (a linear probability model). "
                         f"Of the summed AUC gaps, {100 * share:.0f}% lies above that ceiling (the approximation) and "
                         f"{100 * (1 - share):.0f}% between DD-SSP and its ceiling (AIM's noisy marginals).")
            lines.append("  - Verdict: real, not a bug: " + ("mostly the limit of the quadratic approximation, which "
                         "noise hides at low epsilon." if share >= 0.5 else "mostly the noise of AIM's marginals, plus "
                         "the approximation's ceiling."))  # fmt: skip
    if not found:
        lines.append("- No paper claim failed by a significant margin in this run.")
    return lines + [""]
