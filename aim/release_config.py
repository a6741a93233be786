"""The configuration a release records (``Release.config``): one JSON object with one part per
writer, each part the JSON form of a typed configuration::

    {"mechanism": {"name": "AIM", "epsilon": ..., "delta": ..., "workload": [...], ...},
     "spec": {"epsilon": ..., "delta": ..., "threshold_delta": ..., "aim_epsilon": ...,
              "spec_share": ..., "spec_rho": ...}}

- ``mechanism``: `aim.config.AIMConfig.to_dict` of the run (written by `aim.mechanism.AIM.run`:
  every hyperparameter, the workload resolved, never the seed); absent from a release built by
  hand.
- ``spec``: `SpecConfig.to_dict`, only when `aim.raw.synthesize` inferred the spec under DP: how
  it split the whole run's (epsilon, delta) between the spec and AIM. The mechanism part then
  holds AIM's own share (epsilon = ``aim_epsilon``, delta = the ledger's).

`build_config` assembles the parts, `check_config` validates the shape and every part, and
`mechanism_config`, `spec_config` and `run_budget` read them back typed. Format versions 2 and 3
stored one flat dict (AIM's fields with its name under ``mechanism``; for a raw run also the split,
with the whole run's epsilon and delta in place of AIM's): `from_flat` maps it to this shape.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, Mapping

from .config import MECHANISM, AIMConfig

#: the part written by the mechanism (`AIMConfig.to_dict`).
MECHANISM_PART = "mechanism"
#: the part written by the DP spec inference of a raw run (`SpecConfig.to_dict`).
SPEC_PART = "spec"
PARTS = (MECHANISM_PART, SPEC_PART)
#: keys of a flat (format version 2 or 3) configuration that only a raw run with DP spec inference wrote.
FLAT_SPEC_KEYS = ("threshold_delta", "aim_epsilon", "spec_share", "spec_rho")


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"spec config: {name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SpecConfig:
    """How a run that inferred its spec under DP (`aim.raw`) split its budget, checked when built.

    ``epsilon`` and ``delta``: the whole run's guarantee; ``threshold_delta``: the part of delta
    reserved for thresholded category histograms (the ledger holds the rest); ``aim_epsilon``:
    the epsilon AIM ran at; ``spec_share``: the share of rho the spec inference could spend;
    ``spec_rho``: the rho it spent.
    """

    epsilon: float
    delta: float
    threshold_delta: float
    aim_epsilon: float
    spec_share: float
    spec_rho: float

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _real(f.name, getattr(self, f.name)))
        ranges = (("epsilon", "> 0", self.epsilon > 0), ("delta", "in (0, 1)", 0 < self.delta < 1),
                  ("threshold_delta", "in [0, delta)", 0 <= self.threshold_delta < self.delta),
                  ("aim_epsilon", "> 0", self.aim_epsilon > 0), ("spec_share", "in (0, 1)", 0 < self.spec_share < 1),
                  ("spec_rho", ">= 0", self.spec_rho >= 0))
        for name, allowed, ok in ranges:
            if not ok:
                raise ValueError(f"spec config: {name} must lie {allowed}, got {getattr(self, name)!r}")

    def to_dict(self) -> dict[str, float]:
        """The JSON form a release stores (its ``spec`` config part)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SpecConfig":
        """Rebuild from `to_dict`'s output: exactly its keys, each checked."""
        if not isinstance(data, Mapping):
            raise TypeError(f"the spec config must be a mapping, got {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        missing, unknown = sorted(set(names) - set(data)), sorted(set(data) - set(names))
        if missing or unknown:
            raise ValueError(f"spec config: missing key(s) {missing}, unknown key(s) {unknown}")
        return cls(**{name: data[name] for name in names})


def build_config(mechanism: AIMConfig | None = None, spec: SpecConfig | None = None) -> dict[str, Any]:
    """A release's config from its typed parts (a part left None is absent)."""
    out: dict[str, Any] = {}
    if mechanism is not None:
        out[MECHANISM_PART] = mechanism.to_dict()
    if spec is not None:
        out[SPEC_PART] = spec.to_dict()
    return out


def mechanism_config(config: Mapping[str, Any], insecure_seed: int | None = None) -> AIMConfig:
    """The mechanism part as an `AIMConfig` (a float-noise run, ``exact_noise: false``, needs its
    ``insecure_seed`` given again); ValueError when the config has no mechanism part."""
    part = config.get(MECHANISM_PART)
    if part is None:
        raise ValueError("the release records no mechanism configuration (it was not made by AIM)")
    return AIMConfig.from_dict(part, insecure_seed=insecure_seed)


def spec_config(config: Mapping[str, Any]) -> SpecConfig | None:
    """The spec part as a `SpecConfig`, None when the spec was not inferred under DP by the run."""
    return SpecConfig.from_dict(config[SPEC_PART]) if SPEC_PART in config else None


def run_budget(config: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The whole run's (epsilon, delta): the spec part's when present, else the mechanism's
    (None, None without either)."""
    spec = spec_config(config)
    if spec is not None:
        return spec.epsilon, spec.delta
    part = config.get(MECHANISM_PART) or {}
    return part.get("epsilon"), part.get("delta")


def check_config(config: Any) -> None:
    """Check a release config's shape and parts (TypeError / ValueError naming the problem): only
    known parts; the mechanism part an AIM configuration, every field valid; the spec part a
    `SpecConfig` whose ``aim_epsilon`` is the mechanism part's epsilon."""
    if not isinstance(config, Mapping):
        raise TypeError(f"a release config must be a mapping, got {type(config).__name__}")
    unknown = sorted(set(config) - set(PARTS))
    if unknown:
        raise ValueError(f"unknown config part(s) {unknown}; a release config holds {list(PARTS)}")
    spec = spec_config(config)
    if MECHANISM_PART in config:
        _check_mechanism_part(config[MECHANISM_PART])
    if spec is None:
        return
    part = config.get(MECHANISM_PART)
    if part is None:
        raise ValueError("a spec config needs the mechanism config of the AIM run it made room for")
    if part.get("epsilon") != spec.aim_epsilon:
        raise ValueError(f"the mechanism's epsilon {part.get('epsilon')!r} is not the spec config's "
                         f"aim_epsilon {spec.aim_epsilon!r}")


def _check_mechanism_part(part: Any) -> None:
    if not isinstance(part, Mapping):
        raise TypeError(f"the mechanism config must be a mapping, got {type(part).__name__}")
    if part.get("name") != MECHANISM:
        raise ValueError(f"the mechanism config is not an AIM configuration (name {part.get('name')!r})")
    if not isinstance(part.get("exact_noise", True), bool):
        raise TypeError(f"exact_noise must be true or false, got {part.get('exact_noise')!r}")
    # every field as AIM would take it; a float-noise run is rebuilt only with its seed, which is never stored
    AIMConfig.from_dict({**part, "exact_noise": True})


def from_flat(flat: Any) -> Any:
    """A flat config of format versions 2 and 3 in this shape (anything but a mapping is returned
    as it is, for the file's checks to refuse)."""
    if not isinstance(flat, Mapping):
        return flat
    values, out = dict(flat), {}
    if any(key in values for key in FLAT_SPEC_KEYS):
        spec = {f.name: values[f.name] for f in fields(SpecConfig) if f.name in values}
        for key in FLAT_SPEC_KEYS:
            values.pop(key, None)
        # AIM ran at aim_epsilon, at the ledger's delta: the run's delta less what the thresholds reserved
        values["epsilon"] = spec.get("aim_epsilon")
        delta, reserved = spec.get("delta"), spec.get("threshold_delta", 0.0)
        reals = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (delta, reserved))
        values["delta"] = delta - reserved if reals else None
        out[SPEC_PART] = spec
    name = values.pop("mechanism", MECHANISM)
    if values:
        out = {MECHANISM_PART: {"name": name, **values}, **out}
    return out
