"""Ways of looking at a release (`aim.release.Release`) without changing it: `ReleaseView` (the
release without some attributes), `summary` (a short readable description), `threshold_lines`
(the delta that DP spec inference reserved, as ledger lines) and `excluded_lines` (the rows the
spec leaves out, as the spec's public statements)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from marginals.randomness import SamplingSeed
from marginals.rules import describe
from marginals.spec.discretize import Discretizer

from .release_config import spec_config


class ReleaseView:
    """A release seen without some attributes: marginals over the rest, synthetic rows without them."""

    def __init__(self, release: Any, dropped: tuple[str, ...]) -> None:  # release: an `aim.release.Release`
        self.release = release
        self.dropped = dropped
        self.domain = release.domain.marginalize(dropped)
        self.model = release.model  # clique membership (which pairs were measured) is unchanged

    @property
    def total(self) -> float:
        """The model's (noisy) estimate of the number of rows."""
        return self.release.total

    @property
    def discretizer(self) -> Discretizer | None:
        """The release's spec (labels of the remaining columns; None without a spec)."""
        return self.release.discretizer

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        """The model's cliques (dropping attributes does not change which pairs were fitted)."""
        return self.release.cliques

    @property
    def measurements(self) -> list:
        """The release's noisy measurements (all of them, dropped attributes included)."""
        return self.release.measurements

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """The model's marginal over ``attrs`` (none of them dropped)."""
        return self.marginals([tuple(attrs)])[0]

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The model's marginals over cliques of the remaining attributes."""
        return self.release.marginals([tuple(self.domain.check(c)) for c in cliques])

    def synthetic_data(self, n: int | None = None, rng: SamplingSeed = None,
                       decode: bool | None = None, numeric: str = "uniform") -> pd.DataFrame:
        """The release's synthetic rows without the dropped columns (see `Release.synthetic_data`)."""
        return self.release.synthetic_data(n, rng, decode, numeric).drop(columns=list(self.dropped))

    def synthetic_codes(self, n: int | None = None, rng: SamplingSeed = None) -> pd.DataFrame:
        """The release's synthetic codes without the dropped columns."""
        return self.synthetic_data(n, rng, decode=False)


def summary(release: Any) -> str:
    """A short readable description of a `Release`: size, rounds, model and ledger."""
    lines = [
        f"release over {len(release.domain)} attributes: {len(release.measurements)} measurements, "
        f"{len(release.rounds)} selection rounds, model {len(release.model.cliques)} cliques / "
        f"{release.model.size_mb:.2f} MB, estimated rows {release.model.total:,.0f}",
        *target_lines(release),
        *analysis_lines(release),
        *rule_lines(release),
        release.ledger.summary(),
        *threshold_lines(release),
        *([] if release.discretizer is None else [f"spec: readable values for {len(release.domain)} columns "
                                                  "(categories and bin edges are public or DP-derived)"]),
        *excluded_lines(release),
        *([] if release.private else ["NOT PRIVATE: made with a seeded noise source (tests and benchmarks only)"]),
    ]
    return "\n".join(lines)


def release_targets(release: Any) -> list[str]:
    """The targets the release's run was made for (`aim.targets`; [] when none or not an AIM release)."""
    return list((release.config.get("mechanism") or {}).get("targets") or [])


def target_lines(release: Any) -> list[str]:
    """One line naming the release's regression targets and how many target pairs it measured (none without)."""
    targets = release_targets(release)
    if not targets:
        return []
    pairs = sum(1 for m in release.measurements if len(m.clique) == 2 and set(m.clique) & set(targets))
    return [f"targets: {', '.join(targets)} (every (attribute, target) pair measured first; "
            f"{pairs} measurements of target pairs in all, initialisation and rounds)"]


def analysis_lines(release: Any) -> list[str]:
    """One line naming the regression the release serves (`aim.analysis`; none without)."""
    record = getattr(release, "analysis", None)
    if record is None:
        return []
    spec, name = record.spec, record.estimator.get("class", "a DD-SSP estimator")
    return [f"analysis: {spec.kind} regression of {spec.target!r} on {len(spec.features)} attributes ({name}), "
            f"{record.steps} private Newton steps with {100 * record.share:g}% of the budget; fit the same estimator "
            "settings on this release for refined coefficients and intervals"]


def release_rules(release: Any) -> list[dict]:
    """The public rules (over codes, `marginals.rules`) the release's model keeps ([] when none)."""
    return [dict(r) for r in (release.config.get("mechanism") or {}).get("constraints") or []]


def rule_lines(release: Any, width: int = 110) -> list[str]:
    """One line per public rule the model keeps as structural zeros (none without rules)."""
    rules = release_rules(release)
    if not rules:
        return []
    head = (f"public rules: {len(rules)} (structural zeros: the model gives what they forbid probability 0, "
            "so no synthetic row breaks them; public, no budget)")
    texts = [describe(r) for r in rules]
    return [head] + [f"  rule {i}: {t if len(t) <= width else t[: width - 3] + '...'}" for i, t in enumerate(texts, 1)]


def excluded_lines(release: Any) -> list[str]:
    """The rows a release's spec leaves out ("drop" rules), one line per public statement
    (`marginals.Discretizer.excluded`); a line saying none are when the spec has no such rule."""
    disc = release.discretizer
    if disc is None:
        return []
    statements = disc.excluded()
    if not statements:
        return ["  rows left out: none (the spec has no \"drop\" rule)"]
    return [f"  rows left out: {x['statement']}" for x in statements]


def threshold_lines(release: Any) -> list[str]:
    """The delta that thresholded histograms (DP spec inference) add to a `Release`'s ledger, as ledger lines."""
    spec = spec_config(release.config)
    reserved = 0.0 if spec is None else spec.threshold_delta
    ledger = release.ledger
    if not reserved or ledger.delta is None:
        return []
    used = math.fsum(c.params.get("delta", 0.0) for c in ledger.charges)
    return [f"  thresholded histograms (DP spec): delta {used:.3g} of {reserved:.3g} reserved; the release is "
            f"(eps = {ledger.epsilon():.6g}, delta = {ledger.delta + reserved:g})-DP"]
