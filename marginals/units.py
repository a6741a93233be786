"""Person-level privacy: the privacy unit and the bound on its rows (contribution bounding).

By default the privacy unit is one row: neighbouring tables differ by one added or removed row.
With a unit column (``unit="person_id"``) and a bound k (``max_rows_per_unit``), neighbouring
tables differ by *all the rows of one unit* (one value of the unit column). A unit may hold any
number of rows in the input; `bound_rows` keeps at most k of them before anything is counted.

Bounding rule: every row gets the keyed hash h(key, hash(unit id), i), where i is the row's
occurrence index within its unit (0 for its first row in the input order, 1 for the second, ...),
and a unit keeps the k rows with the smallest hash. The rows a unit keeps depend on its own rows
and the key only, never on another unit, so adding or removing one unit adds or removes at most k
rows of the bounded table and changes nothing else. The key (two 64-bit words) is drawn from the
run's noise source (the operating system's secure source by default, the seeded one in tests) and
never stored or returned: without it, which of a unit's rows were kept cannot be predicted.

Sensitivity: after bounding, one unit holds at most k rows, so a count marginal moves by at most
k in L1 and k in L2 (the worst case puts all k rows in one cell; spread over cells the L2 change
is smaller). A Gaussian measurement of scale sigma then costs k^2 / (2 sigma^2) zCDP, and AIM's
selection score w_r (||x_r - x^_r||_1 - c) moves by at most w_r k: the exponential mechanism's
sensitivity is k max w_r (`aim.mechanism`). ``PrivacyUnit.sensitivity`` is that k.

What is private: the unit ids and how many rows the bound dropped (it depends on the rows). The
unit column itself is never part of the domain, of the spec or of synthetic rows; nothing here
reports a count. Missing unit ids (NaN, None, empty text) are refused: a row without an id cannot
be bounded (as its own unit it could belong to anyone; as one shared unit it would silently merge
strangers), and the error names the column only (`DataError`: no count, no row).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .dataset import DataError, Dataset
from .randomness import RandomSource

__all__ = ["PrivacyUnit", "bound_dataset", "bound_rows", "check_unit", "split_unit", "unit_ids", "unit_key"]

@dataclass(frozen=True)
class PrivacyUnit:
    """The privacy unit of a release: the rows sharing a value of ``column``, at most ``max_rows`` of them."""

    column: str
    max_rows: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_rows", _checked(self.column, self.max_rows)[1])

    @property
    def sensitivity(self) -> int:
        """The L1 and L2 sensitivity of a count marginal of the bounded table: k = ``max_rows``."""
        return self.max_rows

    def describe(self) -> str:
        """The unit in words, e.g. "privacy unit: one person_id (all rows with one value of column
        'person_id'), up to 4 rows each"."""
        rows = "1 row" if self.max_rows == 1 else f"{self.max_rows} rows"
        return (f"privacy unit: one {self.column} (all rows with one value of column {self.column!r}), "
                f"up to {rows} each (rows beyond that are dropped)")

    def to_dict(self) -> dict:
        """The JSON form a ledger and a release record."""
        return {"column": self.column, "max_rows": self.max_rows}

    @classmethod
    def from_dict(cls, data: Any) -> "PrivacyUnit":
        """Read `to_dict`'s output back (checked)."""
        if not isinstance(data, dict) or set(data) != {"column", "max_rows"}:
            raise ValueError(f"a privacy unit is {{'column': ..., 'max_rows': ...}}, got {data!r}")
        return cls(data["column"], data["max_rows"])


def check_unit(unit: Any, max_rows: Any) -> PrivacyUnit | None:
    """The privacy unit of ``unit`` (a column name) and ``max_rows`` (k >= 1), or None when both are
    None (one row is the unit). Both or neither must be given: the bound is a privacy parameter
    the data holder chooses, so it has no default."""
    if unit is None and max_rows is None:
        return None
    return PrivacyUnit(*_checked(unit, max_rows))


def _checked(unit: Any, max_rows: Any) -> tuple[str, int]:
    if unit is None:
        raise ValueError("max_rows_per_unit needs unit (the column that identifies a person or other privacy unit)")
    if not isinstance(unit, str) or not unit.strip():
        raise TypeError(f"unit must be a non-empty column name (str), got {unit!r}")
    if max_rows is None:
        raise ValueError(f"unit={unit!r} needs max_rows_per_unit: the number of rows a unit may contribute "
                         "(rows beyond it are dropped; the noise grows in proportion to it)")
    if isinstance(max_rows, bool) or not isinstance(max_rows, numbers.Integral):
        raise TypeError(f"max_rows_per_unit must be an integer, got {max_rows!r}")
    if max_rows < 1:
        raise ValueError(f"max_rows_per_unit must be >= 1, got {max_rows}")
    return unit, int(max_rows)


def unit_ids(values: Any, column: str, rows: int | None = None) -> np.ndarray:
    """The unit id of every row as an array, after checking there is one per row (``rows``) and
    none is missing (NaN, None or empty text): a `DataError` naming ``column`` (no count, no row).
    Ids are compared as given: read a CSV's unit column as text, so that no id's value depends on
    what type other rows give the column (7 and "7" are two units)."""
    if isinstance(values, pd.DataFrame):
        if column not in [str(c) for c in values.columns]:
            raise ValueError(f"unit column {column!r} is not a column of the table: {[str(c) for c in values.columns]}")
        values = values.set_axis([str(c) for c in values.columns], axis=1)[column]
    if not isinstance(values, pd.Series):
        if np.ndim(values) != 1:
            raise ValueError(f"unit ids ({column!r}) must be one value per row (a 1-D array or Series)")
        values = pd.Series(np.asarray(values))
    series = values
    if rows is not None and len(series) != rows:
        raise ValueError(f"unit ids ({column!r}): expected one per row ({rows} rows), got {len(series)}")
    missing = series.isna().to_numpy().copy()
    if not pd.api.types.is_numeric_dtype(series.dtype):  # text ids: empty (or blank) text is missing
        blank = series.astype(object).str.strip().eq("")
        missing |= blank.fillna(False).to_numpy(dtype=bool)
    if missing.any():
        raise DataError(f"unit column {column!r}: missing unit id(s) (NaN, None or empty); every row needs the id "
                        "of its unit", detail=f"unit column {column!r}: {int(missing.sum())} missing id(s)")
    return series.to_numpy()


def split_unit(data: pd.DataFrame, column: str) -> tuple[pd.DataFrame, np.ndarray]:
    """(``data`` without the unit ``column``, on a positional index; the unit id of every row, checked
    by `unit_ids`): the unit column never goes further than this."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame holding the unit column, got {type(data).__name__}")
    names = [str(c) for c in data.columns]
    if column not in names:
        raise ValueError(f"unit column {column!r} is not a column of the data: {names}")
    data = data.set_axis(names, axis=1).reset_index(drop=True)
    return data.drop(columns=[column]), unit_ids(data[column], column)


def unit_key(source: RandomSource) -> np.ndarray:
    """A fresh bounding key: two 64-bit words from the run's noise source (never stored)."""
    return np.asarray(source.uint64(2), dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit finaliser (xor-shift-multiply; splitmix64's), elementwise."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def row_hashes(ids: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit code of every row, keyed hash of (unit id, occurrence index within the unit))."""
    codes, _ = pd.factorize(ids, sort=False)
    occurrence = pd.Series(codes).groupby(codes).cumcount().to_numpy(dtype=np.uint64)
    base = pd.util.hash_array(np.asarray(ids, dtype=object) if ids.dtype == object else ids, categorize=True)
    with np.errstate(over="ignore"):
        h = _mix(np.asarray(base, dtype=np.uint64) ^ key[0])
        h = _mix(h + occurrence * np.uint64(0x9E3779B97F4A7C15) + key[1])
    return codes, h


def bound_rows(ids: np.ndarray, max_rows: int, key: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows kept: in each unit, the ``max_rows`` rows with the smallest keyed
    hash (all of them when it has fewer). Vectorized; depends on each unit's own rows only."""
    ids = np.asarray(ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=bool)
    codes, h = row_hashes(ids, np.asarray(key, dtype=np.uint64))
    order = np.lexsort((h, codes))  # by unit, then by hash within the unit
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    rank = np.arange(len(ids)) - np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
    keep = np.zeros(len(ids), dtype=bool)
    keep[order[rank < max_rows]] = True
    return keep


def bound_dataset(dataset: Any, ids: Any, unit: PrivacyUnit, source: RandomSource) -> Any:
    """``dataset`` (a `marginals.Dataset`) with at most ``unit.max_rows`` rows per unit (`bound_rows`,
    key from ``source``); ``ids``: the unit id of every row (checked by `unit_ids`). The unit
    column is never an attribute of the result. How many rows were dropped is not reported."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"person-level privacy needs the rows in memory (a marginals.Dataset), got "
                        f"{type(dataset).__name__}")
    if unit.column in dataset.domain:
        raise ValueError(f"the unit column {unit.column!r} is an attribute of the domain: it would be released; "
                         "give its ids separately (units=...) and leave it out of the domain")
    keep = bound_rows(unit_ids(ids, unit.column, len(dataset)), unit.max_rows, unit_key(source))
    if keep.all():
        return dataset
    return Dataset.from_codes([dataset.column(a)[keep] for a in dataset.domain.attrs], dataset.domain)
