"""Public rules in raw values (a spec's ``"rules"`` list), compiled to rules over codes.

A spec may declare what cannot occur, in the values of its columns (public knowledge, never
learned from rows: no budget is spent on them, and the release stores them with the spec)::

    "rules": [
      {"if": {"age": "<16"}, "then": {"marital-status": ["Never-married"]}},
      {"forbid": {"relationship": "Husband", "sex": "Female"}},
      {"function": {"from": "education", "to": "education-num", "map": {"Bachelors": 13, "HS-grad": 9}}}
    ]

Values per column: a categorical column takes a category (or alias) or a list of them, and
``"<other>"`` / ``"<missing>"`` for those levels. A numeric column takes a comparison
(``"<16"``, ``"<=16"``, ``">65"``, ``">=65"``, ``"==40"``), a number, a bin label (``"[17, 20)"``),
``"<missing>"``, or a list of these (their union). A function's ``map`` sends values of ``from``
(keys as above) to one value of ``to`` each; values of ``from`` it leaves out are unconstrained.
The rule is over the spec's levels: values outside a numeric column's edges are clipped into the
end bins before any rule applies.

A numeric condition must be a union of whole bins: one that cuts through a bin (``"<16"`` with a
bin [15, 20)) is refused, naming the rule and the bin, because decoded values are drawn inside
their bin, so forbidding part of a bin cannot keep every synthetic row within the rule (and
forbidding the whole bin would forbid values the rule allows). Put a bin edge at the threshold.
Likewise a number (or a function's value) must be a bin that holds that value alone (an integer
column with a bin per value, or a categorical column).

`compile_spec_rules` returns the rules over codes (`marginals.rules`), each named by its raw text.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping, Sequence

import numpy as np

from ..domain import Domain
from ..rules import RULE_KINDS, check_rule, compile_rule, describe
from .columns import MISSING_LABEL, OTHER_LABEL, Column, SpecError, fmt_number, integer_range, value_key

_COMPARISON = re.compile(r"^\s*(<=|>=|==|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


def _bin_bounds(col: Column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin: (lowest, highest, whether the highest is attained) of the values it holds."""
    if col.integer:
        low, high = integer_range(col.edges)
        return low, high, np.ones(len(low), dtype=bool)
    closed = np.zeros(len(col.edges) - 1, dtype=bool)
    closed[-1] = True  # the last bin is [a, b]
    return col.edges[:-1], col.edges[1:], closed


def _compare(col: Column, op: str, t: float, text: str, where: str) -> list[int]:
    """The bins whose every value satisfies ``op t``; SpecError when one holds values either side."""
    lo, hi, closed = _bin_bounds(col)
    if op == "==":
        ok_all, ok_any = (lo == t) & (hi == t) & closed, (lo <= t) & ((hi > t) | (closed & (hi == t)))
    elif op in ("<", "<="):
        strict = op == "<"
        ok_all = np.where(closed, hi < t if strict else hi <= t, hi <= t)
        ok_any = lo < t if strict else lo <= t
    else:
        strict = op == ">"
        ok_all = lo > t if strict else lo >= t
        ok_any = np.where(closed, hi > t if strict else hi >= t, hi > t)
    cut = np.flatnonzero(ok_any & ~ok_all)
    if cut.size:
        raise SpecError(f"{where}: {col.name!r} {text!r} cuts through the bin {col.values[cut[0]]} (decoded values "
                        "are drawn inside a bin, so a rule must cover whole bins): put a bin edge at "
                        f"{fmt_number(t)} in the spec, or change the condition")
    return np.flatnonzero(ok_all).tolist()


def _numeric_value(col: Column, value: Any, where: str) -> list[int]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise SpecError(f"{where}: {col.name!r}: {value!r} is not a finite number")
        return _compare(col, "==", float(value), f"=={fmt_number(value)}", where)
    if isinstance(value, str):
        if value in col.values:
            return [col.values.index(value)]
        match = _COMPARISON.match(value)
        if match:
            return _compare(col, match.group(1), float(match.group(2)), value, where)
    raise SpecError(f"{where}: {col.name!r} is numeric: a condition is a comparison ('<16', '>=65', '==40'), a "
                    f"number, a bin label such as {col.values[0]!r} or {MISSING_LABEL!r}, got {value!r}")


def _codes_of(col: Column, value: Any, where: str) -> list[int]:
    """The codes of ``col`` one raw value (or condition) of a rule stands for."""
    if value == MISSING_LABEL and col.missing_code is not None:
        return [col.missing_code]
    if value == OTHER_LABEL and col.other_code is not None:
        return [col.other_code]
    if col.kind == "numeric":
        return _numeric_value(col, value, where)
    key = value_key(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    idx = col.lookup.get_indexer([key])[0] if key is not None else -1
    if idx < 0:
        levels = [OTHER_LABEL] * (col.other_code is not None) + [MISSING_LABEL] * (col.missing_code is not None)
        raise SpecError(f"{where}: {value!r} is not a category or alias of {col.name!r}"
                        f"{' (nor ' + ', '.join(levels) + ')' if levels else ''}")
    return [int(col.lookup_codes[idx])]


def _value_set(columns: Mapping[str, Column], name: Any, value: Any, where: str) -> list[int]:
    if name not in columns:
        raise SpecError(f"{where}: unknown column {name!r} (the spec has {list(columns)})")
    items = value if isinstance(value, list) else [value]
    if not items:
        raise SpecError(f"{where}: {name!r}: an empty list of values")
    codes = sorted({c for item in items for c in _codes_of(columns[name], item, where)})
    if not codes:
        raise SpecError(f"{where}: {name!r} {value!r} matches no level of the column (a rule about values the "
                        "spec cannot hold): drop the rule or change the condition")
    return codes


def _condition(columns, cond: Any, where: str) -> dict[str, list[int]]:
    if not isinstance(cond, Mapping) or not cond:
        raise SpecError(f"{where}: a condition must be a non-empty object column -> value(s), got {cond!r}")
    return {name: _value_set(columns, name, value, where) for name, value in cond.items()}


def _function(columns, fn: Any, where: str) -> dict[str, Any]:
    if not isinstance(fn, Mapping) or set(fn) != {"from", "to", "map"} or not isinstance(fn["map"], Mapping):
        raise SpecError(f"{where}: 'function' needs exactly 'from', 'to' and 'map' (an object value of 'from' -> "
                        f"value of 'to': the public map), got {fn!r}")
    pairs = []
    for key, target in fn["map"].items():
        (to,) = _single(columns, fn["to"], target, where)
        pairs += [[c, to] for c in _value_set(columns, fn["from"], _key_value(columns, fn["from"], key), where)]
    return {"from": fn["from"], "to": fn["to"], "map": pairs}


def _single(columns, name: Any, value: Any, where: str) -> list[int]:
    codes = _value_set(columns, name, value, where)
    if len(codes) != 1:
        raise SpecError(f"{where}: the map's value {value!r} of {name!r} must be one level, it covers {len(codes)}")
    return codes


def _key_value(columns, name: Any, key: str) -> Any:
    """A JSON key (always text) of a map over a numeric column read as a number when it is one."""
    col = columns.get(name)
    if col is not None and col.kind == "numeric" and key not in col.values and not _COMPARISON.match(key):
        try:
            return float(key)
        except ValueError:
            return key
    return key


def _coded(columns: Mapping[str, Column], rule: Any, where: str) -> dict[str, Any]:
    if not isinstance(rule, Mapping) or sum(k in rule for k in RULE_KINDS) != 1:
        raise SpecError(f"{where}: a rule is one of {{'if': ..., 'then': ...}}, {{'forbid': ...}} or "
                        f"{{'function': ...}} (plus an optional 'name')")
    out: dict[str, Any] = {"name": rule["name"] if isinstance(rule.get("name"), str) else describe(rule)}
    for key, value in rule.items():
        if key in ("if", "then", "forbid"):
            out[key] = _condition(columns, value, f"{where} {key!r}")
        elif key == "function":
            out[key] = _function(columns, value, f"{where} 'function'")
        elif key != "name":
            out[key] = value  # refused by check_rule, naming the key
    return out


def compile_spec_rules(columns: Sequence[Column], domain: Domain, rules: Any) -> tuple[dict[str, Any], ...]:
    """A spec's ``"rules"`` over its compiled ``columns`` as rules over codes (`marginals.rules`),
    each checked against ``domain``; SpecError naming the rule on any problem."""
    if not isinstance(rules, list):
        raise SpecError(f"'rules' must be a list of rules, got {type(rules).__name__}")
    by_name = {c.name: c for c in columns}
    out = []
    for i, rule in enumerate(rules):
        where = f"rules: {describe(rule, i + 1)}"
        try:
            coded = check_rule(_coded(by_name, rule, where), where)
            compile_rule(domain, coded, where)
        except (TypeError, ValueError) as exc:
            raise SpecError(str(exc)) from None
        out.append(coded)
    return tuple(json.loads(json.dumps(out)))
