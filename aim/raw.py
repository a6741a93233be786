"""From a raw table to a release and readable synthetic rows in one call: `synthesize`.

    release, synthetic = synthesize(pd.read_csv("raw.csv"), epsilon=1.0)

The spec that turns raw values into codes is public by construction: either given (``spec``),
or drafted from a public ``schema`` (`marginals.spec.public`) with whatever it leaves open
inferred from the rows under DP (`marginals.spec.infer`), charged to the same ledger as AIM.

Budget. The user's (epsilon, delta) is split once, before any row is read:

- ``threshold_delta`` = `THRESHOLD_DELTA_SHARE` x delta is reserved for the thresholded category
  histograms (only when a column may need one), the rest is the ledger's conversion delta;
- the ledger's rho = cdp_rho(epsilon, delta - threshold_delta); the spec may spend ``spec_share``
  of it; AIM runs at the epsilon of what is left (rounded down), so its charges fit;
- the release's ledger holds the spec's charges (labels ``spec <column>: ...``) followed by AIM's,
  and the run asserts they stay within rho; its config records AIM's own configuration and the
  split (`aim.release_config.SpecConfig`). By approximate-zCDP composition (see
  `marginals.spec.infer`) the release is (epsilon, delta)-DP.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from marginals.spec.discretize import Discretizer
from marginals.privacy import BUDGET_RTOL, Accountant, cdp_eps, cdp_rho, check_delta
from marginals.randomness import check_seed
from marginals.dataset import Dataset
from marginals.units import check_unit, split_unit
from marginals.spec.infer import infer_spec
from marginals.spec.public import DEFAULT_BINS, draft_spec, spec_gaps

from .mechanism import AIM
from .release import Release
from .release_config import SpecConfig, build_config
from .targets import check_targets

#: default share of the privacy budget (rho) the DP spec inference may spend.
SPEC_SHARE = 0.2
#: share of delta reserved for the thresholded category histograms (when a column may need one).
THRESHOLD_DELTA_SHARE = 0.1


def aim_epsilon(rho: float, delta: float) -> float:
    """The largest epsilon (from cdp_eps, nudged down) whose AIM budget cdp_rho(epsilon, delta) fits in ``rho``."""
    eps = cdp_eps(rho, delta)
    while cdp_rho(eps, delta) > rho:
        eps = math.nextafter(eps, 0.0)
    return eps


def _seeds(insecure_seed: int | None) -> tuple[int | None, int | None]:
    """Two independent test seeds (spec, AIM) from one, so the two noise streams never coincide."""
    if insecure_seed is None:
        return None, None
    a, b = np.random.SeedSequence(check_seed(insecure_seed, "insecure_seed")).generate_state(2)
    return int(a), int(b)


def _public_spec(spec: Any) -> Discretizer:
    if isinstance(spec, Discretizer):
        return spec
    if isinstance(spec, Mapping):
        return Discretizer.from_spec(spec)
    return Discretizer.load(spec)


def _check_targets(targets: Any, columns) -> None:
    """AIM's ``targets`` checked against the spec's public column names, before any row is read."""
    unknown = [t for t in check_targets(targets) if t not in columns]
    if unknown:
        raise ValueError(f"targets {unknown} are not columns of the spec (raw column names): {list(columns)}")


def with_rules(disc: Discretizer, rules: Any) -> Discretizer:
    """``disc`` with public ``rules`` (raw values, `marginals.spec.rules`) added to its own; SpecError
    naming the rule when one does not fit the spec."""
    if not rules:
        return disc
    if not isinstance(rules, list):
        raise TypeError(f"rules must be a list of rules (JSON objects), got {type(rules).__name__}")
    spec = disc.to_spec()
    return Discretizer({**spec, "rules": list(spec.get("rules", [])) + list(rules)})


def _rule_options(disc: Discretizer, aim_options: dict) -> dict:
    """AIM's options with the spec's rules (over codes) added to any ``constraints`` given."""
    if not disc.rules:
        return aim_options
    return {**aim_options, "constraints": tuple(aim_options.get("constraints") or ()) + tuple(disc.rules)}


def synthesize(data: pd.DataFrame, epsilon: float, delta: float = 1e-9, *, spec: Any = None, schema: Any = None,
               spec_share: float = SPEC_SHARE, bins: int = DEFAULT_BINS, rows: int | None = None,
               numeric: str = "uniform", insecure_seed: int | None = None, sample_seed: Any = None,
               show_private_values: bool = False, rules: Any = None, unit: str | None = None,
               max_rows_per_unit: int | None = None, analysis: Any = None, **aim_options) -> tuple[Release, pd.DataFrame]:
    """Run AIM on a raw DataFrame and return (release, readable synthetic rows).

    ``spec``: a public spec (dict, path or `Discretizer`); otherwise ``schema`` (public; default the
    column names) is completed under DP with ``spec_share`` of the budget. ``rows``, ``numeric`` and
    ``sample_seed`` go to `Release.synthetic_data`; other keywords to `AIM` (``targets``: raw column
    names, checked against the spec's columns before any row is read). ``rules`` (and a spec's or
    schema's ``"rules"``): public rules in raw values (`marginals.spec.rules`), free, kept by the
    model as structural zeros, so no synthetic row breaks them; stored with the release's spec. ``insecure_seed``:
    tests only (the release is then marked not private). Cells are keyed by their own value whatever
    dtype pandas gave the column (`marginals.cell_keys`; read CSVs with
    ``marginals.dataset.read_csv_file(path, text=True)`` to keep ids above 2^53 exact). A spec rule
    that fails raises before any budget is spent, naming the column and the rule (values and counts
    only with ``show_private_values``, for the data holder). ``unit`` / ``max_rows_per_unit``:
    person-level privacy (a column of ``data`` and k; see the module docstring). ``analysis``: a DD-SSP
    estimator whose regression the release serves (`aim.analysis`; ``analysis_share`` of the budget).
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"synthesize expects a pandas DataFrame of raw values, got {type(data).__name__}")
    check_delta(delta)
    cdp_rho(epsilon, delta)  # validates epsilon before any row is read
    if not (0 < spec_share < 1):
        raise ValueError(f"spec_share must lie in (0, 1), got {spec_share}")
    if spec is not None and schema is not None:
        raise ValueError("give spec (complete and public) or schema (completed under DP), not both")
    if isinstance(schema, Mapping) and "rules" in schema:  # applied once the spec is complete
        schema, rules = {k: v for k, v in schema.items() if k != "rules"}, list(schema["rules"]) + list(rules or [])
    privacy_unit = check_unit(unit, max_rows_per_unit)
    units = None
    if privacy_unit is not None:
        data, units = split_unit(data, privacy_unit.column)
    partial = None if spec is not None else draft_spec(schema if schema is not None else
                                                       [str(c) for c in data.columns], bins)
    if aim_options.get("targets") is not None:
        _check_targets(aim_options["targets"], _public_spec(spec).domain.attrs if spec is not None else list(partial["columns"]))
    if spec is not None or not any(spec_gaps(partial).values()):
        disc = with_rules(_public_spec(spec if spec is not None else partial), rules)
        disc = disc.with_exclusions()  # its "drop" rules, stated
        if privacy_unit is not None and privacy_unit.column in disc.domain:
            raise ValueError(f"the unit column {privacy_unit.column!r} is a column of the spec: it would be released")
        codes = disc.transform_df(data.set_axis([str(c) for c in data.columns], axis=1), extra="drop",
                                  show_private_values=show_private_values)
        unit_options = {} if privacy_unit is None else {"unit": unit, "max_rows_per_unit": max_rows_per_unit}
        release = AIM(epsilon, delta, insecure_seed=insecure_seed, **unit_options, **_rule_options(disc, aim_options)).run(
            Dataset(codes, disc.domain), units=None if units is None else units[codes.index.to_numpy()], analysis=analysis,
            spec=disc)
    elif privacy_unit is not None:
        raise ValueError("person-level privacy (a unit) needs a public spec, or a schema that leaves nothing to "
                         "infer: the DP spec inference is priced for one row; give the categories and bounds")
    else:
        release = _synthesize_inferred(data, epsilon, delta, partial, spec_share, bins, insecure_seed, aim_options,
                                       show_private_values, rules, analysis)
    return release, release.synthetic_data(rows, rng=sample_seed, numeric=numeric)


def _synthesize_inferred(data: pd.DataFrame, epsilon: float, delta: float, partial: dict, spec_share: float,
                         bins: int, insecure_seed: int | None, aim_options: dict, show: bool = False,
                         rules: Any = None, analysis: Any = None) -> Release:
    """The DP spec inference and AIM on one ledger (see the module docstring); the public ``rules``
    are compiled against the inferred spec (a rule that cuts a DP bin stops the run before AIM)."""
    gaps = spec_gaps(partial)
    thresholds = any(g and partial["columns"][c].get("type") != "numeric" for c, g in gaps.items())
    threshold_delta = delta * THRESHOLD_DELTA_SHARE if thresholds else 0.0
    ledger = Accountant.from_epsilon(epsilon, delta - threshold_delta)
    spec_seed, aim_seed = _seeds(insecure_seed)
    disc = infer_spec(data, ledger, spec_share * ledger.rho, threshold_delta, schema=partial, bins=bins, rng=spec_seed,
                      show_private_values=show)
    disc = with_rules(disc, rules)
    spec_rho = ledger.spent
    coded = disc.transform(data.set_axis([str(c) for c in data.columns], axis=1), extra="drop",
                           show_private_values=show)
    eps_aim = aim_epsilon(ledger.remaining, ledger.delta)
    inner = AIM(eps_aim, ledger.delta, insecure_seed=aim_seed, **_rule_options(disc, aim_options)).run(
        coded, analysis=analysis, spec=disc)
    for c in inner.ledger.charges:
        ledger.charge(c.rho, c.label, c.mechanism, **c.params)
    assert ledger.spent <= ledger.rho * (1 + BUDGET_RTOL), "privacy ledger exceeds the budget"
    split = SpecConfig(epsilon=float(epsilon), delta=float(delta), threshold_delta=threshold_delta,
                       aim_epsilon=eps_aim, spec_share=float(spec_share), spec_rho=spec_rho)
    config = build_config(inner.mechanism_config(insecure_seed=aim_seed), split)
    rounds = [{**r, "rho_used": r["rho_used"] + spec_rho} if "rho_used" in r else r for r in inner.rounds]
    return Release(domain=inner.domain, measurements=inner.measurements, model=inner.model, ledger=ledger,
                   rounds=rounds, config=config, private=inner.private and insecure_seed is None,
                   spec=disc.to_spec(), analysis=inner.analysis)
