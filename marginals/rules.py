"""Public rules over a coded domain: the combinations that cannot occur (structural zeros).

A rule is public knowledge about the population (e.g. a husband is male, ``education-num`` is
a function of ``education``), never learned from private rows: it costs no privacy budget and
may be stored in a release. Over the integer codes of a `Domain` a rule is a JSON object:

- ``{"if": {"age": [0, 1]}, "then": {"marital-status": [2]}}``: rows whose ``age`` code is 0 or 1
  must have ``marital-status`` 2 (several attributes under "if" all hold; under "then" all must hold);
- ``{"forbid": {"relationship": [2], "sex": [0]}}``: this combination of codes never occurs
  (one attribute alone forbids its levels);
- ``{"function": {"from": "education", "to": "education-num", "map": [[0, 12], [1, 9], ...]}}``:
  ``to`` is the function ``map`` of ``from`` (pairs [from code, to code], or an object
  ``{"0": 12, ...}``; codes of ``from`` the map leaves out are unconstrained).

An optional ``"name"`` (text) labels the rule in messages and summaries. `compile_rules` checks
the rules against a domain (an unknown attribute or code is a ValueError naming the rule) and
turns each into a `StructuralZero`: a boolean table over the rule's attributes (in domain
order), False on the cells it forbids. The model gives those cells probability exactly 0
(`pgm.estimate`'s ``zeros``), so no synthetic row breaks a rule. Rules in raw values (categories,
numeric conditions) live in a discretization spec (`marginals.spec.rules`), which compiles them
to this form.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .domain import Domain

#: the keys that say what kind a rule is (exactly one per rule).
RULE_KINDS = ("if", "forbid", "function")


@dataclass(frozen=True, eq=False)
class StructuralZero:
    """The cells one rule forbids: ``allowed`` (bool, axes in ``attrs`` order, the domain's) is
    False on them; ``rule`` describes the rule for messages."""

    attrs: tuple[str, ...]
    allowed: np.ndarray
    rule: str


def describe(rule: Mapping[str, Any], number: int | None = None) -> str:
    """A short text naming a rule: its ``name`` or its JSON (with its number in the list, 1-based)."""
    text = rule.get("name") if isinstance(rule, Mapping) and isinstance(rule.get("name"), str) else None
    if text is None:
        text = json.dumps({k: v for k, v in rule.items() if k != "name"}) if isinstance(rule, Mapping) else repr(rule)
    return text if number is None else f"rule {number} ({text})"


def _codes(value: Any, where: str) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(c, bool) or not isinstance(c, numbers.Integral) for c in items):
        raise ValueError(f"{where}: codes must be an integer or a non-empty list of integers, got {value!r}")
    return sorted({int(c) for c in items})


def _condition(value: Any, where: str) -> dict[str, list[int]]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"{where}: must be a non-empty object attribute -> codes, got {value!r}")
    return {str(a): _codes(c, f"{where} {a!r}") for a, c in value.items()}


def _map_pairs(raw: Any, where: str) -> list[list[int]]:
    pairs = list(raw.items()) if isinstance(raw, Mapping) else raw
    if not isinstance(pairs, list) or not pairs or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
        raise ValueError(f"{where}: 'map' must be a non-empty list of [from, to] code pairs or an object, got {raw!r}")
    out = {}
    for key, target in pairs:
        key = int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else key
        (k,), (t,) = _codes(key, f"{where} map key"), _codes(target, f"{where} map value")
        if out.get(k, t) != t:
            raise ValueError(f"{where}: 'map' sends code {k} to two codes ({out[k]} and {t})")
        out[k] = t
    return [[k, out[k]] for k in sorted(out)]


def check_rule(rule: Any, where: str = "rule") -> dict[str, Any]:
    """One coded rule, checked for shape (not against a domain) and normalised (codes sorted, map
    as sorted pairs), JSON-able."""
    if not isinstance(rule, Mapping):
        raise TypeError(f"{where}: a rule must be a JSON object, got {type(rule).__name__}")
    kinds = [k for k in RULE_KINDS if k in rule]
    allowed = {"if": {"if", "then"}, "forbid": {"forbid"}, "function": {"function"}}.get(kinds[0] if kinds else "", set())
    unknown = sorted(set(rule) - allowed - {"name"})
    if len(kinds) != 1 or unknown or (kinds == ["if"] and "then" not in rule):
        raise ValueError(f"{where}: a rule is one of {{'if': ..., 'then': ...}}, {{'forbid': ...}} or "
                         f"{{'function': ...}} (plus an optional 'name'), got keys {sorted(rule)}")
    out: dict[str, Any] = {}
    if "name" in rule:
        if not isinstance(rule["name"], str):
            raise ValueError(f"{where}: 'name' must be text, got {rule['name']!r}")
        out["name"] = rule["name"]
    if kinds == ["if"]:
        out["if"], out["then"] = _condition(rule["if"], f"{where} 'if'"), _condition(rule["then"], f"{where} 'then'")
        both = sorted(set(out["if"]) & set(out["then"]))
        if both:
            raise ValueError(f"{where}: attribute(s) {both} appear under both 'if' and 'then'")
    elif kinds == ["forbid"]:
        out["forbid"] = _condition(rule["forbid"], f"{where} 'forbid'")
    else:
        out["function"] = _function(rule["function"], f"{where} 'function'")
    return out


def _function(spec: Any, where: str) -> dict[str, Any]:
    if not isinstance(spec, Mapping) or set(spec) != {"from", "to", "map"}:
        raise ValueError(f"{where}: must be an object with exactly 'from', 'to' and 'map' (a coded rule needs the "
                         f"public map), got {spec!r}")
    a, b = spec["from"], spec["to"]
    if not (isinstance(a, str) and isinstance(b, str)) or a == b:
        raise ValueError(f"{where}: 'from' and 'to' must be two different attribute names, got {a!r}, {b!r}")
    return {"from": a, "to": b, "map": _map_pairs(spec["map"], where)}


def check_rules(rules: Any, name: str = "constraints") -> tuple[dict[str, Any], ...]:
    """A list of coded rules, each checked and normalised (see `check_rule`)."""
    if isinstance(rules, (str, bytes, Mapping)) or not isinstance(rules, Sequence):
        raise TypeError(f"{name} must be a list of rules (JSON objects), got {type(rules).__name__}")
    return tuple(check_rule(r, f"{name}: {describe(r, i + 1)}") for i, r in enumerate(rules))


def _attrs_of(rule: Mapping[str, Any]) -> list[str]:
    if "function" in rule:
        return [rule["function"]["from"], rule["function"]["to"]]
    return list(rule.get("if", {})) + list(rule.get("then", {})) + list(rule.get("forbid", {}))


def _indicator(domain: Domain, attrs: tuple[str, ...], attr: str, codes: list[int], where: str) -> np.ndarray:
    """A boolean table over ``attrs`` (broadcast shape) true where ``attr`` takes one of ``codes``."""
    bad = [c for c in codes if not 0 <= c < domain[attr]]
    if bad:
        raise ValueError(f"{where}: code {bad[0]} of {attr!r} is outside its {domain[attr]} levels")
    vec = np.zeros(domain[attr], dtype=bool)
    vec[codes] = True
    return vec.reshape([domain[a] if a == attr else 1 for a in attrs])


def _all(domain: Domain, attrs: tuple[str, ...], cond: Mapping[str, list[int]], where: str) -> np.ndarray:
    table = np.ones([1] * len(attrs), dtype=bool)
    for attr, codes in cond.items():
        table = table & _indicator(domain, attrs, attr, codes, where)
    return table


def compile_rule(domain: Domain, rule: Mapping[str, Any], where: str) -> StructuralZero:
    """One checked rule as the cells it forbids (ValueError naming the rule on an unknown attribute
    or code, or a rule that forbids every combination of its attributes)."""
    unknown = [a for a in _attrs_of(rule) if a not in domain]
    if unknown:
        raise ValueError(f"{where}: unknown attribute {unknown[0]!r} (the domain has {list(domain.attrs)})")
    attrs = domain.canonical(_attrs_of(rule))
    shape = domain.project(attrs).shape
    if "forbid" in rule:
        forbidden = _all(domain, attrs, rule["forbid"], where)
    elif "if" in rule:
        forbidden = _all(domain, attrs, rule["if"], where) & ~_all(domain, attrs, rule["then"], where)
    else:
        fn = rule["function"]
        keys, targets = (np.array([p[i] for p in fn["map"]]) for i in (0, 1))
        for attr, codes in ((fn["from"], keys), (fn["to"], targets)):
            _indicator(domain, attrs, attr, sorted(set(codes.tolist())), where)  # the range check
        table = np.zeros((domain[fn["from"]], domain[fn["to"]]), dtype=bool)
        table[keys] = True
        table[keys, targets] = False
        forbidden = table if attrs == (fn["from"], fn["to"]) else table.T
    allowed = ~np.broadcast_to(forbidden, shape)
    if not allowed.any():
        raise ValueError(f"{where}: forbids every combination of {list(attrs)}")
    return StructuralZero(attrs, np.ascontiguousarray(allowed), describe(rule))


def compile_rules(domain: Domain, rules: Any, name: str = "constraints") -> list[StructuralZero]:
    """Coded rules checked against ``domain``, one `StructuralZero` each (see the module docstring)."""
    checked = check_rules(rules, name)
    return [compile_rule(domain, r, f"{name}: {describe(r, i + 1)}") for i, r in enumerate(checked)]


def violations(codes: Mapping[str, Any], zeros: Sequence[StructuralZero]) -> np.ndarray:
    """Per row (``codes``: a DataFrame or mapping column -> integer codes), whether it lands on a
    cell some rule forbids."""
    broken = None
    for z in zeros:
        cols = [np.asarray(codes[a], dtype=np.int64) for a in z.attrs]
        hit = ~z.allowed[tuple(cols)]
        broken = hit if broken is None else broken | hit
    if broken is None:
        first = next(iter(codes), None)
        return np.zeros(0 if first is None else len(np.asarray(codes[first])), dtype=bool)
    return broken
