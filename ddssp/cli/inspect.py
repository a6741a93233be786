"""``dp-marginals inspect``: what a release holds and what it cost (privacy ledger, measurements,
model cliques, selection rounds), as text or one JSON object. It reads only the release."""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from aim import Release
from aim.views import analysis_lines, excluded_lines, release_targets, rule_lines, target_lines

from .common import load_release, subcommand


def release_report(release: Release) -> dict:
    """What a release holds and what it cost, as a JSON-able dict (used by ``inspect``)."""
    ledger = release.ledger
    return {
        "domain": release.domain.to_dict(),
        "privacy": {
            "rho_budget": ledger.rho,
            "rho_spent": ledger.spent,
            "epsilon": release.epsilon,
            "delta": release.delta,
            "charges": len(ledger.charges),
        },
        "measurements": [{"clique": list(m.clique), "sigma": float(m.sigma), "cells": int(np.size(m.noisy_counts))}
                         for m in release.measurements],
        "model": {"cliques": [list(c) for c in release.model.cliques], "size_mb": release.model.size_mb,
                  "total": release.model.total},
        "rounds": len(release.rounds),
        "annealed": sum(bool(r.get("annealed")) for r in release.rounds),
        "private": release.private,
        "config": {part: {k: v for k, v in values.items() if k != "workload"} for part, values in release.config.items()},
        "targets": release_targets(release),
        "workload_cliques": len(release.config.get("mechanism", {}).get("workload", [])),
        "excluded": [] if release.discretizer is None else release.discretizer.excluded(),
    }


def run(args: argparse.Namespace) -> int:
    """Run ``inspect``; returns the exit code."""
    release = load_release(args.release)
    report = release_report(release)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    status = "private" if release.private else "NOT PRIVATE (seeded noise source: tests/benchmarks only)"
    print(f"release {args.release}: {len(release.domain)} attributes, {status}")
    print("\n".join([*target_lines(release), *analysis_lines(release), *rule_lines(release), release.ledger.summary(), *release.threshold_lines(),
                     *excluded_lines(release)]))
    print(f"{report['rounds']} selection rounds ({report['annealed']} annealed); "
          f"workload of {report['workload_cliques']} cliques")
    print(f"model: {len(release.model.cliques)} cliques, {release.model.size_mb:.2f} MB, "
          f"estimated rows {release.model.total:,.0f}")
    print(f"{len(release.measurements)} measurements (clique, sigma, cells):")
    for m in report["measurements"]:
        print(f"  {','.join(m['clique']):<40} sigma={m['sigma']:10.3f}  {m['cells']:>7} cells")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``inspect`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "inspect", "ledger, measurements, model and rounds of a release",
                   "Print what a release holds and what it cost: the privacy ledger, measurements, "
                   "model cliques and selection rounds.")
    p.add_argument("release", metavar="NPZ", help="a release file written by synth")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=run)
