"""How the report reads rows: a `Dataset` of codes; a DataFrame of codes for a release without a
spec; a DataFrame of raw values for a release with a spec, encoded by the spec's discretizer
(columns the spec does not name are ignored). For raw private rows it also says what the
encoding did (`Encoding`: true counts, NOT private — for the data holder's diagnostic only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from marginals.dataset import Dataset
from marginals.domain import Domain
from marginals.spec.discretize import OTHER_LABEL, Discretizer

from .types import Encoding

if TYPE_CHECKING:  # pragma: no cover
    from ..release import Release


def as_dataset(data: Dataset | pd.DataFrame, domain: Domain, what: str) -> Dataset:
    """``data`` (codes) as a `Dataset` over ``domain``, its columns in the domain's order."""
    if isinstance(data, pd.DataFrame):
        return Dataset(data, domain)
    if not isinstance(data, Dataset):
        raise TypeError(f"{what} must be a marginals.Dataset or a pandas DataFrame, got {type(data).__name__}")
    for attr in domain.attrs:
        if attr not in data.domain or data.domain[attr] != domain[attr]:
            found = data.domain[attr] if attr in data.domain else "absent"
            raise ValueError(f"{what}: attribute {attr!r} has {found} levels in the data but {domain[attr]} "
                             "in the release")
    return data.project(domain.attrs)


def read_rows(release: "Release", data: Dataset | pd.DataFrame, what: str) -> tuple[Dataset, Encoding | None]:
    """``data`` as codes over the release's domain, and (raw rows of a release with a spec) what the
    spec's rules did to them."""
    disc = release.discretizer
    if disc is None or not isinstance(data, pd.DataFrame):
        return as_dataset(data, release.domain, what), None
    codes = disc.transform_df(data, extra="drop")
    report = disc.last_report
    encoding = Encoding(int(report["rows"]), len(codes), {k: dict(v) for k, v in report["columns"].items()},
                        unseen_values(disc.to_spec(), data))
    return Dataset(codes, disc.domain), encoding


def unseen_values(spec: Mapping[str, Any], raw: pd.DataFrame, most: int = 8) -> dict[str, list[tuple[str, int]]]:
    """Per categorical column, the ``most`` most frequent raw values outside its released categories
    (and aliases), with their counts: what became ``<other>`` or left its row out. NOT private."""
    found: dict[str, list[tuple[str, int]]] = {}
    for name, column in spec["columns"].items():
        if column["type"] != "categorical":
            continue
        counts = raw[name].value_counts(dropna=False)
        alone = Discretizer({"columns": {name: {**column, "unseen": "other", "missing": "level"}},
                             "missing_markers": spec.get("missing_markers", [])})
        codes = alone.transform_df(pd.DataFrame({name: counts.index.to_numpy(dtype=object)}))[name].to_numpy()
        other = alone.labels(name).index(OTHER_LABEL)
        found[name] = [(str(v), int(c)) for v, c, code in zip(counts.index, counts.to_numpy(), codes)
                       if code == other][:most]
    return found
