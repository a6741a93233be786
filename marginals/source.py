"""`MarginalSource`: the one contract between the packages — anything that answers count-marginal
queries over a public `Domain`.

Three kinds of object implement it, checked structurally with ``implements(x, MarginalSource)``
(static attribute look-up: unlike ``isinstance`` on a runtime protocol under Python 3.11, it never
evaluates a property, which on a `DaskDataset` would start a pass over the data):

- private rows (`RowSource`): `Dataset`, `DaskDataset` — exact counts, what a mechanism measures;
  ``weighted`` says whether rows carry weights (then a row's contribution to a count is not 1 and
  the sensitivity a mechanism derives for unit counts does not hold);
- fitted models (`ModelSource`): `pgm.Model`, `aim.Release` and its views — counts of the model;
  marginals inside ``cliques`` are fitted directly, the others are inferred by the model; they
  also sample ``synthetic_data``;
- released measurements (`MeasuredSource`): a `Release` (and its views) also carries the noisy
  measurements with their known noise scale.

Counts come back as arrays with axes in the order asked; ``total`` is the (possibly noisy or
weighted) number of rows they describe. Sources answer a whole list of cliques in one call so
that they can share work (one pass over the rows, one calibrated tree).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, Sequence

import numpy as np
import pandas as pd

from .domain import Domain


class MarginalSource(Protocol):
    """Answers count marginals over ``domain``: ``marginals(cliques)`` and the ``total`` count."""

    @property
    def domain(self) -> Domain: ...

    @property
    def total(self) -> float: ...

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]: ...


class RowSource(MarginalSource, Protocol):
    """Private rows: exact counts; ``weighted`` is True when rows carry weights (count sensitivity != 1)."""

    @property
    def weighted(self) -> bool: ...

    @property
    def records(self) -> int: ...


class ModelSource(MarginalSource, Protocol):
    """A fitted model: marginals inside ``cliques`` are fitted, the rest inferred; samples rows."""

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]: ...

    def synthetic_data(self, n: int | None = None, rng: Any = None) -> pd.DataFrame: ...


class MeasuredSource(ModelSource, Protocol):
    """A model released with its noisy measurements (each with its known noise scale ``sigma``)."""

    @property
    def measurements(self) -> list: ...


def as_marginal_source(source: Any, domain: Domain | None = None) -> MarginalSource:
    """``source`` as a `MarginalSource`: a DataFrame of codes becomes a `Dataset` over ``domain``."""
    if isinstance(source, pd.DataFrame):
        from .dataset import Dataset

        if domain is None:
            raise ValueError("a DataFrame of codes needs its public domain: pass domain=...")
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a marginals.Domain, got {type(domain).__name__}")
        cols = [str(c) for c in source.columns]
        if all(a in cols for a in domain.attrs):  # extra columns are ignored, missing ones reported by Dataset
            source = source.set_axis(cols, axis=1)[list(domain.attrs)]
        return Dataset(source, domain)
    if implements(source, MarginalSource):
        return source
    raise TypeError(
        f"expected a marginal source (a release, a pgm.Model, a marginals.Dataset or DaskDataset) "
        f"or a DataFrame of codes with domain=..., got {type(source).__name__}"
    )


_MISSING = object()


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The public attribute names a protocol class (and its protocol bases) declares."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if getattr(klass, "_is_protocol", False) and klass is not Protocol:
            names.update(n for n in vars(klass) if not n.startswith("_"))
            names.update(n for n in getattr(klass, "__annotations__", {}) if not n.startswith("_"))
    return tuple(sorted(names))


def implements_member(source: Any, name: str) -> bool:
    """True when ``source`` has attribute ``name`` (looked up statically: no property runs)."""
    return inspect.getattr_static(source, name, _MISSING) is not _MISSING


def implements(source: Any, protocol: type) -> bool:
    """True when ``source`` has every member of ``protocol`` (looked up statically: no property runs)."""
    return all(implements_member(source, n) for n in protocol_members(protocol))


def is_rows(source: Any) -> bool:
    """True for private rows (`RowSource`): what mechanisms measure, never a released model."""
    return implements(source, RowSource) and not implements(source, ModelSource)


def check_unweighted(source: RowSource, who: str) -> None:
    """Refuse weighted rows: a unit-count sensitivity does not hold for them."""
    if source.weighted:
        raise ValueError(f"{who}: the dataset has row weights, whose sensitivity is not 1; pass an unweighted dataset")
