"""`Dataset`: a validated integer-coded table over a `Domain` — the only holder of private rows.

Validation happens once, here, at the boundary: every problem names the column, how many
values are affected and an example (value and row). Rows are never dropped, clipped or
reordered; columns are stored in domain order, each in the smallest unsigned dtype that fits.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from .domain import Domain, code_dtype
from .tables import count_tables


class DataError(ValueError):
    """Raised when a table does not match its domain (the message says where and how).

    The message names the column and the rule, never a private cell value or an exact count of
    rows; ``detail`` holds those (for the data holder: ``dp-marginals --show-private-values``
    prints it to stderr), or None."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


def _example(mask: np.ndarray, values: np.ndarray, index: pd.Index) -> str:
    pos = int(np.flatnonzero(mask)[0])
    return f"e.g. {_plain(values[pos])!r} at row {_plain(index[pos])!r}"


def _plain(value: object) -> object:
    """A numpy scalar as the Python scalar it holds (so messages read ``-1``, not ``np.int64(-1)``)."""
    return value.item() if isinstance(value, np.generic) else value


#: problems a code column can have, in the order they are reported.
PROBLEM_KINDS = ("missing", "non-integer", "outside")
#: (column, kind) -> (count, first position, value at that position)
Problems = dict[tuple[str, str], tuple[int, int, Any]]


def note_problem(found: Problems, column: str, kind: str, mask: np.ndarray, raw: np.ndarray) -> None:
    """Record in ``found`` how many entries ``mask`` flags, and the first one."""
    if mask.any():
        pos = int(np.flatnonzero(mask)[0])
        found[column, kind] = (int(mask.sum()), pos, _plain(raw[pos]))


def column_codes(name: str, series: pd.Series, levels: int) -> tuple[np.ndarray | None, Problems]:
    """The column as compact codes (None when invalid) and its problems: missing values,
    non-integer values, codes outside 0..levels-1. Shared by `Dataset` and `DaskDataset`."""
    raw = series.to_numpy()
    if raw.dtype == bool:
        raw = raw.astype(np.int64)
    found: Problems = {}
    if raw.dtype.kind in "iu":
        ints = raw
    else:
        missing = pd.isna(series).to_numpy()
        numeric = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
        note_problem(found, name, "missing", missing, raw)
        note_problem(found, name, "non-integer", bad & ~missing, raw)
        ints = numeric
    if len(ints) and not (ints.min() >= 0 and ints.max() <= levels - 1):  # NaN fails both tests
        note_problem(found, name, "outside", (ints < 0) | (ints > levels - 1), raw)
    if found:
        return None, found
    return ints.astype(code_dtype(levels), copy=False), found


def problem_error(name: str, levels: int, kind: str, count: int, value: Any, row: Any) -> DataError:
    """The `DataError` for one column problem (see `column_codes`): the rule in the message, the
    count and the first offending value with its row in ``detail``."""
    what = {"missing": "missing value(s) (NaN/None)", "non-integer": "non-integer or infinite value(s)"}.get(
        kind, f"value(s) outside the codes 0..{levels - 1}"
    )
    return DataError(f"column {name!r}: {what}", detail=f"column {name!r}: {count} {what}, e.g. {value!r} at row {row!r}")


def _validate_column(name: str, series: pd.Series, levels: int) -> np.ndarray:
    """Return the column as compact codes, or raise `DataError` naming its first problem."""
    codes, found = column_codes(name, series, levels)
    for kind in PROBLEM_KINDS:
        if (name, kind) in found:
            count, pos, value = found[name, kind]
            raise problem_error(name, levels, kind, count, value, _plain(series.index[pos]))
    assert codes is not None
    return codes


def check_columns(names: Iterable[object], domain: Domain, weight_column: str | None = None) -> list[str]:
    """The column names as strings, after checking they are unique and exactly the domain's
    attributes (plus ``weight_column`` if given; it must be present and not an attribute)."""
    columns = [str(c) for c in names]
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})
        raise DataError(f"duplicate column(s) {dup}")
    if weight_column is not None:
        if weight_column in domain:
            raise DataError(f"weight column {weight_column!r} is a domain attribute")
        if weight_column not in columns:
            raise DataError(f"weight column {weight_column!r} missing from the table (columns: {columns})")
    unknown = [c for c in columns if c not in domain and c != weight_column]
    missing = [a for a in domain.attrs if a not in columns]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"{len(unknown)} unknown column(s) not in the domain: {unknown}")
        if missing:
            parts.append(f"{len(missing)} domain attribute(s) missing from the table: {missing}")
        raise DataError("; ".join(parts))
    return columns


def read_csv_file(path: str | os.PathLike, text: bool = False, **read_csv_kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` with every problem of the file itself reported as a `DataError` that
    names the file: empty, binary or non-UTF-8 content, unparsable rows, and (with a header row)
    repeated column names, which pandas would silently rename ``age``, ``age.1``.

    ``text=True`` is the reader for raw data: no type inference across rows, every cell the string
    in the file (an empty cell is ``""``; which text means missing is decided per cell by
    `marginals.cell_keys`), bytes that are not UTF-8 kept as ``\\xNN`` escapes in their own cell
    (the file is not refused for them: one row must not decide whether the others are read). The
    default (``text=False``) is pandas's typed reading, for tables of integer codes."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    if not head.strip():
        raise DataError(f"{path}: empty file (expected a CSV with a header row)")
    if b"\x00" in head:
        raise DataError(f"{path}: not a CSV file (binary content)")
    if not text:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
                raise DataError(f"{path}: not a CSV file (not UTF-8 text at byte {exc.start})") from None
    as_text = {"dtype": str, "keep_default_na": False, "na_filter": False, "encoding_errors": "backslashreplace"}
    kwargs = {**read_csv_kwargs, **as_text} if text else read_csv_kwargs
    try:
        if kwargs.get("header", "infer") is not None and kwargs.get("names") is None:
            first = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False,
                                skiprows=kwargs.get("skiprows"),
                                encoding_errors=kwargs.get("encoding_errors", "strict"),
                                skipinitialspace=kwargs.get("skipinitialspace", False))
            names = [str(v) for v in first.iloc[0]] if len(first) else []
            if len(set(names)) != len(names):
                dup = sorted({c for c in names if names.count(c) > 1})
                raise DataError(f"{path}: duplicate column(s) {dup}")
        return pd.read_csv(path, **kwargs)
    except DataError:
        raise
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty file (no columns to read)") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a CSV file (not UTF-8 text at byte {exc.start})") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"{path}: not a readable CSV file ({' '.join(str(exc).split())})") from None
    except (ValueError, OSError) as exc:  # anything else pandas raises about the file: still name it
        raise DataError(f"{path}: not a readable CSV file ({' '.join(str(exc).split())})") from None


class Dataset:
    """An integer-coded table whose columns follow a `Domain`.

    Example:
        >>> df = pd.DataFrame({"b": [0, 2, 1], "a": [1, 0, 1]})
        >>> ds = Dataset(df, Domain(("a", "b"), (2, 3)))
        >>> ds.marginal(("b", "a")).shape
        (3, 2)
    """

    def __init__(self, df: pd.DataFrame, domain: Domain, weights: Sequence[float] | None = None) -> None:
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"Dataset expects a pandas DataFrame, got {type(df).__name__}")
        columns = check_columns(df.columns, domain)
        if len(df) == 0:
            raise DataError("empty table: 0 rows (a dataset needs at least one row)")
        renamed = df.set_axis(columns, axis=1)
        self.domain = domain
        self._codes = tuple(_validate_column(a, renamed[a], domain[a]) for a in domain.attrs)
        self.weights = None if weights is None else self._check_weights(weights, len(df))

    @staticmethod
    def _check_weights(weights: Sequence[float], n: int) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,):
            raise DataError(f"weights: expected one value per row, got shape {w.shape} for another number of rows")
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise DataError("weights: negative or non-finite value(s)", detail=(
                f"weights: {int(bad.sum())} negative or non-finite value(s), e.g. {_plain(w[pos])!r} at row {pos}"))
        return w

    @classmethod
    def from_csv(cls, path: str | os.PathLike, domain: Domain, **read_csv_kwargs) -> "Dataset":
        """Read a CSV with a header row; columns may come in any order. Errors name the file."""
        df = read_csv_file(path, **read_csv_kwargs)
        try:
            return cls(df, domain)
        except DataError as exc:
            raise DataError(f"{path}: {exc}", detail=exc.detail) from None

    @classmethod
    def from_codes(cls, codes: Iterable[np.ndarray], domain: Domain) -> "Dataset":
        """A Dataset from code arrays, one per domain attribute in domain order; they pass through a
        DataFrame and are validated like any other table."""
        arrays = [np.asarray(c) for c in codes]
        return cls(pd.DataFrame(dict(zip(domain.attrs, arrays))), domain)

    def __len__(self) -> int:
        return len(self._codes[0])

    @property
    def records(self) -> int:
        """Number of rows."""
        return len(self)

    @property
    def weighted(self) -> bool:
        """True when rows carry weights (counts are weight sums; count sensitivity is not 1)."""
        return self.weights is not None

    @property
    def total(self) -> float:
        """The number of rows, or the sum of the row weights."""
        return float(len(self)) if self.weights is None else float(self.weights.sum())

    def column(self, attr: str) -> np.ndarray:
        """The code array of one attribute (read-only view)."""
        arr = self._codes[self.domain.attrs.index(self.domain.check([attr])[0])].view()
        arr.flags.writeable = False
        return arr

    def to_df(self) -> pd.DataFrame:
        """The table as a DataFrame in domain order."""
        return pd.DataFrame({a: c for a, c in zip(self.domain.attrs, self._codes)})

    def project(self, attrs: Sequence[str]) -> "Dataset":
        """The table restricted to ``attrs`` (in the order given), weights kept."""
        attrs = self.domain.check(attrs)
        out = object.__new__(Dataset)
        out.domain = self.domain.project(attrs)
        out._codes = tuple(self._codes[self.domain.attrs.index(a)] for a in attrs)
        out.weights = self.weights
        return out

    def marginal(self, attrs: Sequence[str], weights: Sequence[float] | None = None) -> np.ndarray:
        """Dense table of counts over ``attrs``, axes in the order given."""
        return self.marginals([tuple(attrs)], weights=weights)[0]

    def marginals(
        self, cliques: Sequence[Sequence[str]], weights: Sequence[float] | None = None, n_jobs: int | None = None
    ) -> list[np.ndarray]:
        """Many marginals at once, sharing work (see `marginals.tables`).

        Counts are int64, or float64 when row weights are given (here or at construction).
        """
        axes = [self.domain.axes(tuple(cl)) for cl in cliques]
        w = self.weights if weights is None else self._check_weights(weights, len(self))
        return count_tables(self._codes, self.domain.shape, axes, weights=w, n_jobs=n_jobs)

    def __repr__(self) -> str:
        return f"Dataset({len(self)} rows, {len(self.domain)} attributes)"
