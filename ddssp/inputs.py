"""What the estimators accept, resolved against public information only.

Fitting takes one of
- a marginal source (`marginals.source.MarginalSource`: a release, a `pgm.Model`, a `Dataset`,
  a `DaskDataset`) — its domain is public by construction (a release's) or given (a Dataset's);
- a DataFrame holding the features and the target, with its public ``domain``;
- ``X`` and ``y`` (DataFrames, Series or arrays) with their public ``domain``.

``domain`` is the public description of the columns: a `marginals.Domain` (integer codes), a
`marginals.Discretizer` (raw values, coded by its spec; coefficients and classes get its labels)
or an int ``k`` (every column holds the codes 0..k-1; a logistic target 0/1). Levels are never
inferred from the rows: a level seen only in private data must not shape what is published.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from sklearn.utils import check_array
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_non_negative, column_or_1d

from marginals import DataError, Dataset, Discretizer, Domain
from marginals.source import as_marginal_source, implements_member
from marginals.spec.discretize import drop_causes

DomainLike = Domain | Discretizer | int | None


@dataclass(frozen=True, eq=False)
class FitInput:
    """A fit's marginal source, its input columns (in order), target and spec (or None)."""

    source: Any
    features: tuple[str, ...]
    target: str
    discretizer: Discretizer | None
    named: bool  # the columns have names the user gave (feature_names_in_ is set)


def _levels(domain: Any) -> int:
    if isinstance(domain, bool) or not isinstance(domain, (int, np.integer)) or domain < 1:
        raise TypeError(
            "domain must be a marginals.Domain, a marginals.Discretizer or an int number of levels >= 1, "
            f"got {type(domain).__name__} {domain!r}"
        )
    return int(domain)


def _named(X: Any) -> bool:
    return isinstance(X, pd.DataFrame) and len(X.columns) > 0 and all(isinstance(c, str) for c in X.columns)


def sub_discretizer(disc: Discretizer, columns: Sequence[str]) -> Discretizer:
    """The spec restricted to ``columns`` (in that order), to code raw tables that hold only them."""
    spec = disc.to_spec()
    missing = [c for c in columns if c not in spec["columns"]]
    if missing:
        raise ValueError(f"the spec has no column(s) {missing}; it describes {list(spec['columns'])}")
    return Discretizer({**spec, "columns": {c: spec["columns"][c] for c in columns}})


def coded_table(df: pd.DataFrame, domain: DomainLike, target: str, target_levels: int | None,
                exact: bool = False) -> tuple[Any, Discretizer | None]:
    """(a `Dataset` of ``df``'s codes, the `Discretizer` or None) for a table holding the target.

    ``exact``: every column of ``df`` is an attribute (fit(X, y)); otherwise columns the domain
    does not name are ignored and every domain attribute is needed (a whole table)."""
    if domain is None:
        raise ValueError("a DataFrame of codes needs its public domain: construct the estimator with domain=... (a "
                         "Domain, a Discretizer or an int number of levels); levels are never inferred from the rows")  # fmt: skip
    cols = [str(c) for c in df.columns]
    if isinstance(domain, Discretizer):
        disc = sub_discretizer(domain, cols) if exact else domain
        codes = disc.transform_df(df, extra="drop")
        if len(codes) != len(df):  # no count: it is private
            raise DataError(f"the spec leaves row(s) out ({drop_causes(disc.last_report)}); fit on rows it codes")
        return Dataset(codes, disc.domain), domain
    if not isinstance(domain, Domain):
        k = _levels(domain)
        domain = Domain(tuple(cols), tuple(target_levels if c == target and target_levels else k for c in cols))
    elif exact:
        domain = domain.project(cols)
    return as_marginal_source(df, domain), None


def _attrs(domain: DomainLike) -> tuple[str, ...] | None:
    """The attributes a public domain names (None for an int number of levels)."""
    if isinstance(domain, Discretizer):
        return domain.domain.attrs
    return domain.attrs if isinstance(domain, Domain) else None


def _target_name(target: str | None, X: Any, y: Any, domain: DomainLike) -> str:
    if target is not None:
        return str(target)
    if isinstance(y, pd.Series) and isinstance(y.name, str):
        return y.name
    attrs = _attrs(domain)
    if attrs is not None and _named(X):
        rest = [a for a in attrs if a not in set(X.columns)]
        if len(rest) == 1:
            return rest[0]
    if attrs is None:
        return "y"
    raise ValueError("cannot tell which column of the domain y is: give target=... (or y as a named Series)")


def _feature_names(X: Any, target: str, domain: DomainLike, width: int) -> tuple[str, ...]:
    if _named(X):
        names = tuple(X.columns)
        if target in names:
            raise ValueError(f"X holds the target column {target!r}; pass it as y only")
        return names
    attrs = _attrs(domain)
    names = tuple(f"x{i}" for i in range(width)) if attrs is None else tuple(a for a in attrs if a != target)
    if len(names) != width:
        raise ValueError(f"X has {width} columns but the domain has {len(names)} features {list(names)} besides "
                         f"the target {target!r}; pass X as a DataFrame with named columns")  # fmt: skip
    return names


def as_2d(X: Any, raw: bool) -> Any:
    """``X`` as a DataFrame (kept) or a 2-d array: numeric codes, or any values when ``raw`` (a spec codes them).
    Sparse, complex, 1-d and empty inputs are refused (`sklearn.utils.check_array`)."""
    if isinstance(X, pd.DataFrame):
        if X.shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        return X
    X = check_array(X, accept_sparse=False, dtype=None if raw else "numeric", ensure_all_finite=False)
    if not raw:
        check_non_negative(X, "X (integer codes)")
    return X


def check_target(y: Any, logistic: bool, raw: bool) -> np.ndarray:
    """``y`` as a 1-d array (a column vector warns); a logistic target of codes must be binary."""
    y = column_or_1d(y, warn=True)
    if logistic and not raw:
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind == "continuous":
            raise ValueError("Unknown label type: continuous; a logistic target holds the codes 0/1")
        if kind != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {kind}.")
    return y


def xy_table(X: Any, y: Any, target: str | None, domain: DomainLike, logistic: bool) -> tuple[pd.DataFrame, str, bool]:
    """(one DataFrame holding X's columns and y as the target column, the target's name, X was named)."""
    raw = isinstance(domain, Discretizer)
    y_values = check_target(y, logistic, raw)
    X = as_2d(X, raw)
    if len(y_values) != X.shape[0]:
        raise ValueError("X and y have different numbers of rows (counts not quoted: the rows are private)")
    name = _target_name(target, X, y, domain)
    features = _feature_names(X, name, domain, X.shape[1])
    if isinstance(X, pd.DataFrame):
        table = X.set_axis(list(features), axis=1).reset_index(drop=True)
    else:
        table = pd.DataFrame(X, columns=list(features))
    table[name] = y_values
    return table, name, _named(X)


def resolve_fit(X: Any, y: Any, target: str | None, domain: DomainLike, logistic: bool) -> FitInput:
    """The marginal source, columns, target and spec of a fit (see the module docstring)."""
    if y is None:
        if target is None:
            raise ValueError("target= is required to fit on a table or a release: construct the estimator with "
                             "target='<column>' (and, for a DataFrame of codes, domain=<its public Domain>), or call fit(X, y)")
        if isinstance(X, pd.DataFrame):
            source, disc = coded_table(X, domain, target, 2 if logistic else None)
        else:
            source = as_marginal_source(X, None)
            disc = source.discretizer if implements_member(source, "discretizer") else None
        named = True
    else:
        table, target, named = xy_table(X, y, target, domain, logistic)
        source, disc = coded_table(table, domain, target, 2 if logistic else None, exact=True)
    if target not in source.domain:
        raise ValueError(f"target {target!r} is not in the domain; attributes are {list(source.domain.attrs)}")
    features = tuple(a for a in source.domain.attrs if a != target)
    return FitInput(source, features, target, disc, named)


def predict_table(X: Any, features: Sequence[str], named: bool, raw: bool, who: str) -> pd.DataFrame:
    """The feature columns of ``X`` by name (a named fit; extra columns ignored) or by position."""
    if named and _named(X):
        missing = [a for a in features if a not in X.columns]
        if missing:
            raise ValueError(f"the table lacks the column(s) {missing} needed by the model")
        return X[list(features)]
    X = as_2d(X, raw)
    if X.shape[1] != len(features):
        raise ValueError(f"X has {X.shape[1]} features, but {who} is expecting {len(features)} features as input")
    if isinstance(X, pd.DataFrame):
        return X.set_axis(list(features), axis=1)
    return pd.DataFrame(X, columns=list(features))
