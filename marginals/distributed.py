"""`DaskDataset`: the contingency tables of `Dataset`, computed from a Dask DataFrame.

The private rows stay in their partitions (CSV or Parquet files, on one machine or a cluster):
every pass maps each partition to its code arrays, counts all requested tables there with the
numpy backend (`marginals.tables.count_tables`) and sums the per-partition tables with a tree
reduction, so one pass serves any number of cliques and the client only ever holds tables.

Validation follows `Dataset` (same checks, same wording; "row" is the 0-based position in the
whole table, partitions in order). It runs lazily, once, in one pass together with the row
count: on the first ``len()`` or on the first ``marginals()`` call, whose tables come from that
same pass. Later passes read only the columns they need and still refuse invalid codes.

dask is imported only when a `DaskDataset` is built (``pip install 'dp-marginals[dask]'``); the
active scheduler is used (a ``distributed.Client`` if one was created, else dask's default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .dataset import (
    PROBLEM_KINDS,
    DataError,
    Problems,
    check_columns,
    column_codes,
    note_problem,
    problem_error,
)
from .domain import Domain
from .tables import count_tables

INSTALL_HINT = "pip install 'dp-marginals[dask]'"
#: what pandas' read_csv parses as booleans by default
TRUE_TEXT, FALSE_TEXT = ("True", "TRUE", "true"), ("False", "FALSE", "false")


def _dask() -> tuple[Any, Any]:
    """(dask, dask.dataframe), imported on first use, or an ImportError naming the extra to install."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:
        raise ImportError(f"marginals.DaskDataset needs dask with dask.dataframe: {INSTALL_HINT}") from exc
    return dask, dd


# --- work done inside one partition (runs on the workers) --------------------------------------------------


@dataclass
class Partial:
    """What one partition (or a contiguous run of partitions) contributes to a pass."""

    rows: int
    problems: Problems = field(default_factory=dict)
    tables: list[np.ndarray] | None = None


def _parse_bool_text(series: pd.Series) -> pd.Series:
    """A text column whose values are all pandas' boolean literals (or missing) as 0/1, as read_csv would read it."""
    present = series[series.notna()]
    if len(present) == 0 or not present.isin(TRUE_TEXT + FALSE_TEXT).all():
        return series
    values = np.where(series.isin(TRUE_TEXT), 1.0, np.where(series.isin(FALSE_TEXT), 0.0, np.nan))
    return pd.Series(values if len(present) < len(series) else values.astype(np.int64), index=series.index)


def partition_codes(name: str, series: pd.Series, levels: int, text: bool = False) -> tuple[np.ndarray | None, Problems]:
    """One partition's column as codes and its problems (`marginals.dataset.column_codes`);
    ``text``: the column was read from CSV as text (see `DaskDataset.from_csv`)."""
    if text and series.dtype == object:
        series = _parse_bool_text(series)
    return column_codes(name, series, levels)


def weight_values(name: str, series: pd.Series) -> tuple[np.ndarray, Problems]:
    """One partition's weight column as float64 and its problems (missing, negative or non-finite)."""
    w = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    found: Problems = {}
    note_problem(found, name, "weights", ~np.isfinite(w) | (w < 0), series.to_numpy())
    return w, found


def count_partition(
    part: pd.DataFrame,
    attrs: tuple[str, ...],
    shape: tuple[int, ...],
    axes: list[tuple[int, ...]] | None,
    weight_column: str | None,
    text: bool = False,
) -> Partial:
    """Validate one partition's ``attrs`` and, when valid and ``axes`` is given, count its tables."""
    codes, problems = [], {}
    for a, m in zip(attrs, shape):
        col, found = partition_codes(a, part[a], m, text)
        codes.append(col)
        problems.update(found)
    w = None
    if weight_column is not None:
        w, found = weight_values(weight_column, part[weight_column])
        problems.update(found)
    tables = None
    if axes is not None and not problems:
        tables = count_tables(codes, shape, axes, weights=w, n_jobs=1)
    return Partial(len(part), problems, tables)


def combine(*parts: Partial) -> Partial:
    """Merge partials of consecutive partitions, in order: rows and tables add, first examples are kept."""
    out = Partial(0)
    valid = True
    for p in parts:
        for key, (count, pos, value) in p.problems.items():
            if key in out.problems:
                old = out.problems[key]
                out.problems[key] = (old[0] + count, old[1], old[2])
            else:
                out.problems[key] = (count, out.rows + pos, value)
        out.rows += p.rows
        if p.tables is None:
            valid = False
        elif valid:
            if out.tables is None:
                out.tables = [t.copy() for t in p.tables]  # never modify another task's result
            else:
                for acc, t in zip(out.tables, p.tables):
                    acc += t
    if not valid:
        out.tables = None
    return out


# --- the dataset (runs on the client) ------------------------------------------------------------------------


class DaskDataset:
    """An integer-coded table over a `Domain`, held as a Dask DataFrame; tables equal `Dataset`'s.

    Example:
        >>> import dask.dataframe as dd
        >>> df = pd.DataFrame({"a": [1, 0, 1, 1], "b": [0, 2, 1, 2]})
        >>> ds = DaskDataset(dd.from_pandas(df, npartitions=2), Domain(("a", "b"), (2, 3)))
        >>> ds.marginal(("b", "a")).tolist(), len(ds)
        ([[0, 1], [0, 1], [1, 1]], 4)
    """

    def __init__(
        self, ddf: Any, domain: Domain, weight_column: str | None = None, split_every: int = 8
    ) -> None:
        _, dd = _dask()
        if not isinstance(ddf, dd.DataFrame):
            hint = " (wrap it with dask.dataframe.from_pandas)" if isinstance(ddf, pd.DataFrame) else ""
            raise TypeError(f"DaskDataset expects a dask DataFrame, got {type(ddf).__name__}{hint}")
        if split_every < 2:
            raise ValueError(f"split_every must be >= 2, got {split_every}")
        columns = check_columns(ddf.columns, domain, weight_column)
        if columns != list(ddf.columns):
            ddf = ddf.rename(columns=dict(zip(ddf.columns, columns)))
        self.domain = domain
        self.weight_column = weight_column
        self.split_every = int(split_every)
        self._ddf = ddf
        self._rows: int | None = None  # set by the first (validating) pass
        self._total: float | None = None  # weighted total, computed on first use
        self._reread: Callable[[], Any] | None = None  # from_csv: re-read as text if parsing fails
        self._as_text = False  # True once that happened

    @classmethod
    def from_parquet(
        cls, path: Any, domain: Domain, weight_column: str | None = None, split_every: int = 8, **kw
    ) -> "DaskDataset":
        """Read Parquet file(s) or a folder of them with ``dask.dataframe.read_parquet(path, **kw)``."""
        _, dd = _dask()
        path = os.fspath(path) if isinstance(path, os.PathLike) else path
        return cls(dd.read_parquet(path, **kw), domain, weight_column, split_every)

    @classmethod
    def from_csv(
        cls, path_or_glob: Any, domain: Domain, weight_column: str | None = None, split_every: int = 8, **kw
    ) -> "DaskDataset":
        """Read CSV file(s) with a header row (a path, a glob or a list) with ``dask.dataframe.read_csv``.

        dask guesses dtypes from the first rows; when a later block does not parse that way
        (e.g. a NaN or a string below many integers), the file is re-read as text (once, for good)
        so that validation can name the column, the count and an example; a text block whose values
        in a column are all pandas' boolean literals reads as 0/1 then, as pandas reads it.
        """
        dask, dd = _dask()
        path = os.fspath(path_or_glob) if isinstance(path_or_glob, os.PathLike) else path_or_glob
        out = cls(dd.read_csv(path, **kw), domain, weight_column, split_every)
        if "dtype" not in kw:

            def as_text() -> Any:  # plain object columns: empty cells stay NaN, as pandas reads them
                with dask.config.set({"dataframe.convert-string": False}):
                    return dd.read_csv(path, dtype=object, **kw)

            out._reread = as_text
        return out

    @property
    def ddf(self) -> Any:
        """The underlying Dask DataFrame."""
        return self._ddf

    @property
    def weighted(self) -> bool:
        """True when counts are sums of ``weight_column`` (AIM refuses weighted data)."""
        return self.weight_column is not None

    @property
    def total(self) -> float:
        """The number of rows, or the sum of the weight column (a pass over the data, cached)."""
        if self.weight_column is None:
            return float(len(self))
        if self._total is None:
            self._total = float(self.marginals([self.domain.attrs[:1]])[0].sum())
        return self._total

    @property
    def npartitions(self) -> int:
        """Number of partitions of the underlying Dask DataFrame."""
        return int(self._ddf.npartitions)

    def __len__(self) -> int:
        if self._rows is None:
            self._run(self.domain.attrs, None)
        assert self._rows is not None
        return self._rows

    @property
    def records(self) -> int:
        """Number of rows (validates the table on first use)."""
        return len(self)

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Dense table of counts over ``attrs``, axes in the order given."""
        return self.marginals([tuple(attrs)])[0]

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many marginals in one pass over the data; int64 counts (float64 with a weight column).

        The first call (before any ``len()``) also validates every column in the same pass.
        """
        wanted = [self.domain.axes(tuple(cl)) for cl in cliques]
        if not wanted:
            return []
        if self._rows is None:
            read = self.domain.attrs
        else:  # only the columns the cliques use (Parquet then reads only those)
            used = sorted({a for ax in wanted for a in ax}) or [0]
            read = tuple(self.domain.attrs[a] for a in used)
        where = {self.domain.axes((a,))[0]: i for i, a in enumerate(read)}
        local = [tuple(where[a] for a in ax) for ax in wanted]
        tables = self._run(read, local)
        assert tables is not None
        return tables

    def _run(self, attrs: tuple[str, ...], axes: list[tuple[int, ...]] | None) -> list[np.ndarray] | None:
        """One pass over ``attrs`` (plus the weight column): raise on problems, else return the tables."""
        try:
            total = self._compute(attrs, axes)
        except (ValueError, TypeError) as exc:
            if isinstance(exc, DataError) or self._reread is None:
                raise
            self._ddf, self._reread, self._as_text = self._reread(), None, True  # validate the text instead
            total = self._compute(attrs, axes)
        self._raise_problems(total, full=attrs == self.domain.attrs)
        if attrs == self.domain.attrs:
            self._rows = total.rows
        return total.tables

    def _compute(self, attrs: tuple[str, ...], axes: list[tuple[int, ...]] | None) -> Partial:
        dask, _ = _dask()
        columns = list(attrs) + ([self.weight_column] if self.weight_column is not None else [])
        shape = tuple(self.domain[a] for a in attrs)
        count = dask.delayed(count_partition, pure=False)
        parts = [count(p, attrs, shape, axes, self.weight_column, self._as_text) for p in self._ddf[columns].to_delayed()]
        merge = dask.delayed(combine, pure=False)
        while len(parts) > 1:  # tree reduction, partitions kept in order
            parts = [merge(*parts[i : i + self.split_every]) for i in range(0, len(parts), self.split_every)]
        (total,) = dask.compute(parts[0])
        return total

    def _raise_problems(self, total: Partial, full: bool) -> None:
        """Raise the first problem in `Dataset`'s order: empty table, columns in domain order, weights."""
        if full and total.rows == 0:
            raise DataError("empty table: 0 rows (a dataset needs at least one row)")
        for a in self.domain.attrs:
            for kind in PROBLEM_KINDS:
                if (a, kind) in total.problems:
                    count, pos, value = total.problems[a, kind]
                    raise problem_error(a, self.domain[a], kind, count, value, pos)
        if self.weight_column is not None and (self.weight_column, "weights") in total.problems:
            count, pos, value = total.problems[self.weight_column, "weights"]
            what = f"weight column {self.weight_column!r}: missing, negative or non-finite value(s)"
            raise DataError(what, detail=f"{what}: {count}, e.g. {value!r} at row {pos}")

    def __repr__(self) -> str:
        rows = "?" if self._rows is None else str(self._rows)
        return f"DaskDataset({rows} rows, {len(self.domain)} attributes, {self.npartitions} partitions)"
