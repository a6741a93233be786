"""`AIMConfig`: the hyperparameters of one AIM run, validated once, and their release form.

`AIM(epsilon, delta, **hyperparameters)` builds one; `AIM.config` exposes it. A release stores
the configuration the run used as the mechanism part of its config (`to_dict`: the mechanism's
name and its own fields, the workload resolved against the domain, the public rules; see
`aim.release_config`) and
`from_dict` reads it back. ``insecure_seed`` is never serialised: anyone holding it could
subtract the noise. A seeded run is marked by the release's ``private: false`` instead, and the
seed has to be given again to rebuild a seeded configuration.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from marginals.privacy import check_epsilon_delta
from marginals.randomness import check_seed
from marginals.rules import check_rules
from marginals.units import PrivacyUnit, check_unit
from pgm.estimation import LOSS_WEIGHTS

from .analysis import check_analysis_share
from .targets import check_share, check_targets
from .workload import workload_items

#: `pgm.estimate` settings a run may change; iterations, tolerance, warm start and loss weight are AIM's own.
ESTIMATOR_OPTIONS = ("stepsize", "step_growth", "armijo", "momentum", "resume_stepsize")
#: the default delta of an AIM run.
DEFAULT_DELTA = 1e-9
#: the fields a configuration without targets leaves out of `AIMConfig.to_dict`.
TARGET_FIELDS = ("targets", "target_share")
#: the fields a row-level configuration (no privacy unit) leaves out of `AIMConfig.to_dict`.
UNIT_FIELDS = ("unit", "max_rows_per_unit")
#: the ``name`` of the mechanism part of a release's config (`AIMConfig.to_dict`).
MECHANISM = "AIM"


def _integer(name: str, value: Any, least: int, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    return int(value)


def _positive(name: str, value: Any, optional: bool = False, zero: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value}")
    return value


@dataclass(frozen=True)
class AIMConfig:
    """Hyperparameters of AIM (`aim.mechanism.AIM`), checked when built.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of the whole run.
        workload: (clique, weight) pairs or bare cliques (weight 1); default (None) all 2-way
            marginals with <= max_cells cells. A release stores the workload the run resolved.
        max_model_size: cap on the junction-tree size in MB (reached when the budget is spent).
        max_iters / tol: mirror-descent iterations and relative tolerance per round.
        round_work: cap on a round's estimation work, in junction-tree cells x iterations: a
            round on a model of C cells runs at most max(min_iters, round_work / C) iterations.
        final_iters / final_tol / final_work: iterations, tolerance and work cap (cells x
            iterations, never below 50 iterations) of the final estimation.
        rounds: T, the initial number of rounds (default 16 x number of attributes).
        max_cells: the cell cap of the default workload's marginals.
        loss_weight: `pgm.estimate`'s loss weighting (``"inverse_variance"`` or ``"inverse_sigma"``).
        estimator_options: extra mirror-descent settings for every `pgm.estimate` call (keys in
            `ESTIMATOR_OPTIONS`, e.g. ``{"momentum": 0.0, "step_growth": 1.01}`` for mbi's rule).
        anneal_iters: when set, a round whose fit says "anneal" is fitted on to this many
            iterations in total (work-capped like a round) and the test is repeated before sigma
            is halved.
        exact_noise: exact discrete Gaussian measurements (default); False adds float Gaussian
            noise and is allowed only with ``insecure_seed`` (sampler benchmarks).
        targets: attribute names a regression will predict (public): the run measures every
            (attribute, target) 2-way marginal first and its rounds favour what a regression on
            them needs (`aim.targets`); with a ``workload`` given, the rounds use that workload.
            Checked against the domain when the run starts. None (default): no targets.
        target_share: the share of rho, in (0, 1), the initial target-pair measurements spend
            (used only with ``targets``); None (default): `aim.targets.default_share`. A
            release records the share its run used.
        constraints: public rules over the domain's codes (`marginals.rules`: implications,
            forbidden combinations, functions): the cells they forbid get probability exactly 0 in
            every fit and their attribute sets join the model's cliques. Public: no budget, stored
            in the release. Checked against the domain when the run starts. None (default): none.
        analysis_share: the share of rho, in (0, 1), a run given ``analysis=`` (`AIM.run`) keeps for the
            Newton refinement of that regression (`aim.analysis`); None (default): 0.3 when an analysis
            is given. Written only when set (a release records the share its analysis used).
        unit / max_rows_per_unit: person-level privacy (`marginals.units`): the column of the rows
            given to `AIM.run` (``units=``) that identifies a person (or other privacy unit), and k,
            the most rows a unit may contribute (>= 1; rows beyond it are dropped by a keyed hash
            order that depends on the unit's own rows only). Both or neither; every count's
            sensitivity, hence the noise, is multiplied by k. None (default): one row is the unit.
        insecure_seed: tests and benchmarks only. None (the default) draws all noise from the
            operating system's secure source; an int seeds a replayable generator, warns, and
            marks the release not private. Never serialised, not shown in the repr.
    """

    epsilon: float
    delta: float = DEFAULT_DELTA
    workload: tuple[tuple[tuple[str, ...], float], ...] | None = None
    max_model_size: float = 80.0
    max_iters: int = 25
    tol: float | None = 1e-3
    round_work: float = 2e8
    min_iters: int = 10
    final_iters: int = 80
    final_tol: float | None = None
    final_work: float = 5e8
    rounds: int | None = None
    max_cells: int = 10_000
    loss_weight: str = "inverse_variance"
    estimator_options: Mapping[str, Any] = field(default_factory=dict)
    anneal_iters: int | None = 100
    exact_noise: bool = True
    targets: tuple[str, ...] | None = None
    target_share: float | None = None
    constraints: tuple[dict[str, Any], ...] | None = None
    analysis_share: float | None = None
    unit: str | None = None
    max_rows_per_unit: int | None = None
    insecure_seed: int | None = field(default=None, repr=False, metadata={"secret": True})

    def __post_init__(self) -> None:
        epsilon, delta = check_epsilon_delta(self.epsilon, self.delta)
        checked = {
            "epsilon": epsilon,
            "delta": delta,
            "workload": None if self.workload is None else workload_items(self.workload),
            "max_model_size": _positive("max_model_size (MB)", self.max_model_size),
            "max_iters": _integer("max_iters", self.max_iters, 0),
            "tol": _positive("tol", self.tol, optional=True, zero=True),
            "round_work": _positive("round_work", self.round_work),
            "min_iters": _integer("min_iters", self.min_iters, 0),
            "final_iters": _integer("final_iters", self.final_iters, 0),
            "final_tol": _positive("final_tol", self.final_tol, optional=True, zero=True),
            "final_work": _positive("final_work", self.final_work),
            "rounds": _integer("rounds", self.rounds, 1, optional=True),
            "max_cells": _integer("max_cells", self.max_cells, 1),
            "estimator_options": self._checked_options(),
            "anneal_iters": _integer("anneal_iters", self.anneal_iters, 0, optional=True),
            "targets": None if self.targets is None else check_targets(self.targets),
            "target_share": check_share(self.target_share),
            "constraints": None if self.constraints is None else check_rules(self.constraints),
            "analysis_share": check_analysis_share(self.analysis_share),
            "max_rows_per_unit": None if self.privacy_unit is None else self.privacy_unit.max_rows,
            "insecure_seed": None if self.insecure_seed is None else check_seed(self.insecure_seed, "insecure_seed"),
        }
        if self.loss_weight not in LOSS_WEIGHTS:
            raise ValueError(f"loss_weight must be one of {LOSS_WEIGHTS}, got {self.loss_weight!r}")
        if not isinstance(self.exact_noise, bool):
            raise TypeError(f"exact_noise must be True or False, got {self.exact_noise!r}")
        if not self.exact_noise and checked["insecure_seed"] is None:
            raise ValueError("exact_noise=False (float Gaussian noise) is for benchmarks only: it needs insecure_seed")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def privacy_unit(self) -> PrivacyUnit | None:
        """The run's privacy unit (None: one row); checks both or neither is set, k an integer >= 1."""
        return check_unit(self.unit, self.max_rows_per_unit)

    def _checked_options(self) -> dict[str, Any]:
        options = dict(self.estimator_options or {})
        unknown = sorted(set(options) - set(ESTIMATOR_OPTIONS))
        if unknown:
            raise ValueError(f"estimator_options: unknown key(s) {unknown}; allowed: {list(ESTIMATOR_OPTIONS)}")
        return dict(sorted(options.items()))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a release stores: ``name`` (the mechanism's) plus every field except
        ``insecure_seed``; ``targets`` and ``target_share`` only when targets are set, ``unit`` and
        ``max_rows_per_unit`` only with a unit (so a release without them reads with the versions
        before them, and their absence means none / one row)."""
        out: dict[str, Any] = {"name": MECHANISM}
        for f in fields(self):
            if f.metadata.get("secret") or (f.name in TARGET_FIELDS and self.targets is None) or (
                    f.name in UNIT_FIELDS and self.unit is None):
                continue  # a run without targets (or unit) writes what the versions before them wrote
            if f.name in ("constraints", "analysis_share") and getattr(self, f.name) is None:
                continue  # likewise a run without rules or analysis
            value = getattr(self, f.name)
            if f.name == "workload" and value is not None:
                value = [[list(clique), weight] for clique, weight in value]
            elif f.name == "constraints":
                value = [dict(rule) for rule in value]
            elif f.name == "targets" and value is not None:
                value = list(value)
            elif f.name == "estimator_options":
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, insecure_seed: int | None = None) -> "AIMConfig":
        """Rebuild a configuration from `to_dict`'s output (e.g. ``Release.config["mechanism"]``).

        A release never holds the seed: pass ``insecure_seed`` to rebuild a seeded configuration
        (required when the run used float noise, ``exact_noise: false``).
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"an AIM configuration must be a mapping, got {type(data).__name__}")
        values = dict(data)
        name = values.pop("name", MECHANISM)
        if name != MECHANISM:
            raise ValueError(f"not an AIM configuration (mechanism name {name!r})")
        if "insecure_seed" in values:
            raise ValueError("a stored configuration never holds insecure_seed; pass it as an argument")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown AIM configuration key(s) {unknown}")
        if "epsilon" not in values:
            raise ValueError("an AIM configuration needs epsilon")
        return cls(**values, insecure_seed=insecure_seed)
