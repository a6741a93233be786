"""Canonical keys: the text a raw cell is matched by, computed from that cell alone.

A raw table reaches the engine either as text (`marginals.dataset.read_csv_file` with
``text=True``: every cell a string) or as a DataFrame whose column types pandas chose by looking
at all the rows (``pd.read_csv`` infers ``bool``, ``int64``, ``float64`` or text per column, so one
added row such as ``maybe`` can turn every ``True`` into ``"true"``). A key that depended on the
column's type would let one row change the keys of all the others. Here every cell's key is a
function of the cell alone, and the same value gets the same key whatever type holds it:

- missing (key None): None, NaN, ``pd.NA``, ``pd.NaT``, and text that is blank after stripping or
  one of `MISSING_TEXT` (pandas's default NA strings, fixed here: ``NA``, ``N/A``, ``null``,
  ``None``, ``nan`` in any case, ...); a spec's ``missing_markers`` are matched on keys on top;
- booleans: ``True``, ``"true"``, ``"TRUE"``, ``" True "`` -> ``"true"`` (and ``"false"``): one
  spelling whatever the case; the words only (``1``, ``yes`` stay what they are);
- numbers by value (text in decimal or exponent notation, ints, floats, numpy scalars):
  integers exactly, written without sign ``+``, leading zeros or a decimal point (``"007"``,
  ``7.0``, ``"7.00"``, ``"7e0"`` -> ``"7"``; text and int columns never pass through float, so
  ``"9007199254740993"`` stays distinct from ``...992``; integers of more than `MAX_DIGITS` digits
  as ``d.ddde+N``, Python ints beyond 14,000 bits in hexadecimal ``0x...``); other numbers by
  their nearest float64, written as Python's shortest round-trip ``repr`` (``"4.50"``, ``4.5``
  -> ``"4.5"``; ``"1e-3"`` -> ``"0.001"``); a float that holds an integer is that integer (a
  float column has already lost what float64 cannot hold: read ids as text); infinities ->
  ``"inf"`` / ``"-inf"``; ``-0`` -> ``"0"``;
- text: stripped of surrounding whitespace, otherwise as is (any length); bytes are decoded as
  UTF-8, invalid bytes written as ``\\xNN`` escapes, as the text reader does (never an error);
- anything else: its ``str()``, read as text.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

#: text read as missing (after stripping): pandas's default NA strings, fixed so that the CSV reader
#: and a DataFrame from ``pd.read_csv`` agree; ``nan`` in any case is missing too.
MISSING_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                          "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
#: integers with more digits than this are keyed in exponent form (exact mantissa).
MAX_DIGITS = 4000
_INF = {"inf": "inf", "+inf": "inf", "-inf": "-inf", "infinity": "inf", "+infinity": "inf", "-infinity": "-inf"}
#: a number as text: decimal or exponent notation, ASCII digits, an exponent of at most 18 digits.
NUMBER_PATTERN = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,18})?"
_NUMBER = re.compile(r"(?P<sign>[+-]?)(?:(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]*))?|\.(?P<frac2>[0-9]+))"
                     r"(?:[eE](?P<exp>[+-]?[0-9]{1,18}))?")
_TWO53 = 2.0**53


def _number_key(m: re.Match, text: str) -> str:
    """The key of a number written as text (see the module docstring)."""
    frac = m["frac"] or m["frac2"] or ""
    digits = (m["int"] or "") + frac
    exponent = int(m["exp"] or 0) - len(frac)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped.lstrip("0")
    if not digits:
        return "0"
    sign = "-" if m["sign"] == "-" else ""
    if exponent >= 0:
        size = len(digits) + exponent
        if size <= MAX_DIGITS:
            return sign + digits + "0" * exponent
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e+{size - 1}"
    return float_key(float(text))


def float_key(x: float) -> str | None:
    """The key of a float: None for NaN, its integer when integral, else its shortest repr."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x.is_integer():
        if abs(x) < _TWO53:
            return str(int(x))
        return _number_key(_NUMBER.fullmatch(repr(x)), repr(x))
    return repr(x)


def int_key(i: int) -> str:
    """The key of an integer: its exact decimal text (exponent form beyond `MAX_DIGITS` digits)."""
    if i.bit_length() > 14_000:  # beyond Python's int -> str limit (4,300 digits): exact hexadecimal text
        return ("-0x" if i < 0 else "0x") + format(abs(i), "x")
    text = str(i)
    return text_key(text) if len(text) > MAX_DIGITS else text


def text_key(text: str) -> str | None:
    """The key of one text cell (see the module docstring)."""
    t = text.strip()
    if t in MISSING_TEXT:
        return None
    if len(t) <= 9:
        low = t.lower()
        if low in ("true", "false"):
            return low
        if low in _INF:
            return _INF[low]
        if low in ("nan", "+nan", "-nan"):
            return None
    m = _NUMBER.fullmatch(t)
    return _number_key(m, t) if m else t


def cell_key(value: Any) -> str | None:
    """The key of any one cell: text, bytes, bool, int, float, numpy scalar, missing (see the module docstring)."""
    if isinstance(value, str):
        return text_key(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return int_key(int(value))
    if isinstance(value, (float, np.floating)):
        return float_key(float(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return text_key(bytes(value).decode("utf-8", errors="backslashreplace"))
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return text_key(str(value))


def _float_keys(arr: np.ndarray) -> np.ndarray:
    """Keys of a float64 array (vectorized where the key is a machine integer)."""
    out = np.full(arr.shape, None, dtype=object)
    with np.errstate(invalid="ignore"):
        small = np.isfinite(arr) & (arr == np.floor(arr)) & (np.abs(arr) < _TWO53)
    out[small] = arr[small].astype(np.int64).astype(str).astype(object)
    rest = ~small & ~np.isnan(arr)
    if rest.any():
        uniques, inverse = np.unique(arr[rest], return_inverse=True)
        out[rest] = np.array([float_key(v) for v in uniques.tolist()], dtype=object)[inverse]
    return out


def _object_keys(values: np.ndarray) -> np.ndarray:
    """Keys of an object array: pure text by distinct value, anything else cell by cell."""
    out = np.full(len(values), None, dtype=object)
    missing = pd.isna(values)
    present = values[~missing]
    if pd.api.types.infer_dtype(present, skipna=False) == "string":  # str only: distinct strings are distinct values
        codes, uniques = pd.factorize(present)
        out[~missing] = np.array([text_key(u) for u in uniques], dtype=object)[codes]
        return out
    cache: dict = {}
    keys = []
    for v in present:
        try:
            slot = (type(v), v)
            key = cache[slot] if slot in cache else cache.setdefault(slot, cell_key(v))
        except TypeError:  # unhashable
            key = cell_key(v)
        keys.append(key)
    out[~missing] = np.array(keys + [None], dtype=object)[:-1]
    return out


def column_keys(s: pd.Series) -> np.ndarray:
    """The key of every cell of ``s`` (object array, None where missing); see the module docstring."""
    dtype = s.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return np.where(s.to_numpy(), "true", "false").astype(object)
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return s.to_numpy().astype(str).astype(object)
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        return _float_keys(s.to_numpy(dtype=np.float64))
    return _object_keys(s.to_numpy(dtype=object))


def key_numbers(keys: np.ndarray) -> np.ndarray:
    """The number each key stands for (float64; NaN for missing and text keys). A key is a number
    when its cell was a number: it matches `NUMBER_PATTERN` or is ``inf`` / ``-inf``."""
    out = np.full(len(keys), np.nan)
    present = ~pd.isna(keys)
    if not present.any():
        return out
    codes, uniques = pd.factorize(keys[present])
    numbers = np.array([_key_number(u) for u in uniques] + [np.nan], dtype=np.float64)[:-1]
    out[present] = numbers[codes]
    return out


def _key_number(key: str) -> float:
    if key in ("inf", "-inf") or _NUMBER.fullmatch(key):
        return float(key)
    return math.nan
