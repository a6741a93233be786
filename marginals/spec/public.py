"""Drafting a discretization spec from public information only: column names, types, declared
categories and bounds. Nothing here reads a private row.

A *schema* is one of:

- a list of column names (types and values unknown);
- ``{"columns": {name: type or partial column spec}}`` (or a list of names / ``{"name": ...}``
  objects), with optional top-level ``missing_markers``, ``unseen``, ``missing``, ``note``; a
  type is ``"categorical"`` / ``"numeric"`` or a common alias (``"string"``, ``"integer"``, ...);
- a Frictionless Table Schema: ``{"fields": [{"name", "type", "constraints": {"enum", "minimum",
  "maximum"}}], "missingValues": [...]}``.

`draft_spec` turns it into a *partial spec*: the `marginals.Discretizer` format, where a column
may lack its type, its categories or its bounds. A numeric column with public bounds and no bin
count gets ``bins`` equal bins. By default missing values get their own level and values outside
declared categories go to ``<other>`` (top-level ``"missing": "level"``, ``"unseen": "other"``):
no row is left out unless the schema says ``"drop"``. `spec_gaps` says what each column still lacks: the user fills it
in by hand, or `marginals.spec.infer.infer_spec` infers it under differential privacy.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from ..files import read_json
from .columns import KEYS, MISSING_OPTIONS, SpecError, compile_column

#: markers read as missing unless the schema lists its own (blank, "NA", "null", ... are missing anyway:
#: `marginals.cell_keys.MISSING_TEXT`).
DEFAULT_MISSING_MARKERS = ("?",)
DEFAULT_BINS = 10
_TYPE_ALIASES = {
    "categorical": "categorical", "category": "categorical", "string": "categorical", "str": "categorical",
    "nominal": "categorical", "boolean": "categorical", "bool": "categorical", "text": "categorical",
    "numeric": "numeric", "number": "numeric", "float": "numeric", "continuous": "numeric",
    "integer": "numeric", "int": "numeric",
}
_INTEGER_TYPES = ("integer", "int")
_TOP = ("missing_markers", "unseen", "missing", "note")


def _column_type(name: str, raw: Any) -> str:
    if not isinstance(raw, str) or raw.lower() not in _TYPE_ALIASES:
        raise SpecError(f"column {name!r}: unknown type {raw!r}; use one of {sorted(set(_TYPE_ALIASES))}")
    return _TYPE_ALIASES[raw.lower()]


def _partial_column(name: str, raw: Any) -> dict:
    """One schema column as a partial column spec (type words normalised, integer types marked)."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping):
        raise SpecError(f"column {name!r}: expected a type name or a JSON object, got {raw!r}")
    col = {k: v for k, v in raw.items() if k != "name"}
    if "type" in col:
        word = col["type"]
        col["type"] = _column_type(name, word)
        if isinstance(word, str) and word.lower() in _INTEGER_TYPES:
            col.setdefault("integer", True)
    return col


def _frictionless(schema: Mapping) -> dict:
    """A Frictionless Table Schema as our schema format (name, type, enum, minimum/maximum)."""
    columns = {}
    for field in schema["fields"]:
        if not isinstance(field, Mapping) or not isinstance(field.get("name"), str):
            raise SpecError(f"schema 'fields': each field needs a string 'name', got {field!r}")
        col: dict[str, Any] = {}
        if "type" in field and field["type"] not in ("any",):
            col["type"] = field["type"]
        cons = field.get("constraints", {}) or {}
        if "enum" in cons:
            col["type"], col["categories"] = "categorical", list(cons["enum"])
        elif "minimum" in cons and "maximum" in cons:
            col["lo"], col["hi"] = cons["minimum"], cons["maximum"]
        columns[field["name"]] = _partial_column(field["name"], col)
    out: dict[str, Any] = {"columns": columns}
    if "missingValues" in schema:
        out["missing_markers"] = [m for m in schema["missingValues"] if m != ""]
    return out


def read_schema(schema: Any) -> dict:
    """Any accepted schema form (or a path to its JSON file) as ``{"columns": {name: partial}, ...}``."""
    if isinstance(schema, (str, os.PathLike)):
        path = schema
        try:
            return read_schema(read_json(path, "schema"))
        except SpecError as exc:
            raise SpecError(f"{path}: {exc}") from None
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    if isinstance(schema, Mapping) and "fields" in schema:
        return _frictionless(schema)
    if isinstance(schema, (list, tuple)):
        schema = {"columns": list(schema)}
    if not isinstance(schema, Mapping) or "columns" not in schema:
        raise SpecError("a schema is a list of column names, an object with 'columns', or a Frictionless 'fields' list")
    unknown = sorted(set(schema) - set(_TOP) - {"columns", "version"})
    if unknown:
        raise SpecError(f"schema: unknown top-level key(s) {unknown}; allowed: {sorted(_TOP) + ['columns']}")
    raw = schema["columns"]
    if isinstance(raw, Mapping):
        columns = {str(k): _partial_column(str(k), v) for k, v in raw.items()}
    elif isinstance(raw, (list, tuple)):
        items = [(c, None) if isinstance(c, str) else (c.get("name") if isinstance(c, Mapping) else None, c) for c in raw]
        if any(not isinstance(n, str) or not n for n, _ in items):
            raise SpecError("schema 'columns': each entry must be a name or an object with a string 'name'")
        columns = {n: _partial_column(n, c) for n, c in items}
        if len(columns) != len(items):
            raise SpecError("schema 'columns': a column name is repeated")
    else:
        raise SpecError(f"schema 'columns' must be an object or a list, got {type(raw).__name__}")
    if not columns:
        raise SpecError("the schema names no columns")
    return {**{k: schema[k] for k in _TOP if k in schema}, "columns": columns}


def spec_gaps(spec: Mapping) -> dict[str, list[str]]:
    """What each column of a (partial) spec still lacks: ``"type"``, ``"categories"`` or
    ``"bounds"`` (``lo``/``hi`` or ``edges``); an empty list means the column is complete."""
    gaps = {}
    for name, col in spec["columns"].items():
        kind = col.get("type")
        if kind is None:
            gaps[name] = ["type"]
        elif kind == "categorical":
            gaps[name] = [] if "categories" in col else ["categories"]
        else:
            gaps[name] = [] if "edges" in col or {"lo", "hi", "bins"} <= set(col) else ["bounds"]
    return gaps


def _check_partial(name: str, col: dict, defaults: dict) -> None:
    """Validate a partial column with the complete-spec rules, placeholders standing in for the gaps."""
    kind = col.get("type")
    if kind is None:
        extra = sorted(set(col) - {"missing", "missing_markers", "note", "bins"})
        if extra:
            raise SpecError(f"column {name!r}: key(s) {extra} need a 'type'")
        return
    if kind == "numeric" and ("lo" in col) != ("hi" in col):
        raise SpecError(f"column {name!r}: give both 'lo' and 'hi' (public bounds), or neither")
    filled = dict(col)
    if kind == "categorical" and "categories" not in col:
        if "aliases" in col:
            raise SpecError(f"column {name!r}: 'aliases' need declared 'categories'")
        filled["categories"] = ["placeholder"]
    elif kind == "numeric" and "edges" not in col and "lo" not in col:
        k = filled.get("bins", 1)
        filled.update(lo=0, hi=k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else 1, bins=k)
    compile_column(name, filled, defaults)


def draft_spec(schema: Any, bins: int = DEFAULT_BINS) -> dict:
    """A partial spec from a public schema (see the module docstring): every column that the schema
    describes fully is a valid `Discretizer` column; `spec_gaps` lists the others' gaps."""
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be an integer >= 1, got {bins!r}")
    parsed = read_schema(schema)
    spec: dict[str, Any] = {
        "version": 1,
        "note": parsed.get("note", "drafted from a public schema; fill in what spec_gaps lists, or infer it under DP"),
        "unseen": parsed.get("unseen", "other"),
        "missing": parsed.get("missing", "level"),  # by default no row is left out for a missing value
        "missing_markers": list(parsed.get("missing_markers", DEFAULT_MISSING_MARKERS)),
        "columns": {},
    }
    if spec["missing"] not in MISSING_OPTIONS:
        raise SpecError(f"schema: 'missing' must be one of {list(MISSING_OPTIONS)}, got {spec['missing']!r}")
    defaults = {k: spec[k] for k in ("unseen", "missing", "missing_markers")}
    for name, col in parsed["columns"].items():
        col = json.loads(json.dumps(col))
        unknown = sorted(set(col) - KEYS.get(col.get("type"), KEYS["numeric"] | KEYS["categorical"]))
        if unknown:
            raise SpecError(f"column {name!r}: unknown key(s) {unknown}")
        if col.get("type") == "numeric" and "lo" in col and "hi" in col and "edges" not in col:
            col.setdefault("bins", bins)
        _check_partial(name, col, defaults)
        spec["columns"][name] = col
    return spec
