"""Data sets shipped inside the package, with loaders in the style of `sklearn.datasets`.

`load_adult` returns the discretized UCI Adult table (Becker and Kohavi, UCI Machine Learning
Repository, 1996, https://doi.org/10.24432/C5XW20, CC BY 4.0): 47,842 training and 1,000 test rows
of integer codes over a public 15-column domain. `adult_codebook` gives what the codes mean (the
category lists of the UCI documentation ``adult.names`` and the numeric bins, as a `Discretizer`
spec; ``load_adult(labels=True)`` decodes through it). The files (gzip CSV, ``domain.json`` and
``codebook.json``, about 290 KB, cited in ``marginals/data_files/adult/README.md``) are read through `importlib.resources`,
so the loaders work the same from a source checkout, an editable install and an installed wheel.
`demo_dataset` generates a small deterministic table with real dependencies. The team's larger
data sets (``../shared/data``, `benchmarks.data`) are for development and benchmarks.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset
from .domain import Domain
from .spec.discretize import Discretizer

#: the splits `load_adult` accepts ("all" is train followed by test).
SPLITS = ("train", "test", "all")
#: the default target of ``load_adult(return_X_y=True)`` (2 levels); ``education-num`` is the regression one.
ADULT_TARGET = "income>50K"


def _adult_file(name: str) -> Any:
    """The packaged file ``data_files/adult/<name>`` (a `importlib.resources` Traversable)."""
    return resources.files("marginals").joinpath("data_files", "adult", name)


def adult_domain() -> Domain:
    """The public domain of the Adult table: 15 attributes and their numbers of levels (2 to 42)."""
    with resources.as_file(_adult_file("domain.json")) as path:
        return Domain.load(path)


def adult_codebook() -> Discretizer:
    """What the Adult codes mean: a `Discretizer` over `adult_domain` whose labels are the categories of the
    UCI documentation (``adult.names``; "?", unknown, is the missing level) and the numeric bins [a, b)."""
    with resources.as_file(_adult_file("codebook.json")) as path:
        return Discretizer.load(path)


def _read_split(split: str, domain: Domain) -> pd.DataFrame:
    with _adult_file(f"{split}.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    return df[list(domain.attrs)]


def load_adult(
    split: str = "train", *, as_frame: bool = False, return_X_y: bool = False, target: str | None = None,
    labels: bool = False,
) -> Any:
    """The discretized UCI Adult table shipped with the package, as a validated `Dataset` (codes + `Domain`).

    Parameters
    ----------
    split : ``"train"`` (47,842 rows), ``"test"`` (1,000 held-out rows) or ``"all"`` (train then test,
        the 48,842 records of the UCI data set).
    as_frame : return a `pandas.DataFrame` of codes (columns in domain order) instead of a `Dataset`;
        with ``return_X_y``, return a DataFrame and a Series instead of numpy arrays.
    return_X_y : return ``(X, y)``: the other 14 columns and the ``target`` column.
    target : the column ``y`` holds (only with ``return_X_y``); default ``"income>50K"`` (2 levels),
        ``"education-num"`` (16 levels) is the usual regression target.
    labels : return readable values instead of codes (DataFrames, as ``as_frame=True``): the categories of
        ``adult.names`` ("?", unknown, as NaN), ``education-num`` as 1..16 and the other numeric columns as
        their bins, e.g. ``"[17, 19)"`` (`adult_codebook`).

    Source: Barry Becker and Ronny Kohavi, *Adult*, UCI Machine Learning Repository (1996),
    https://doi.org/10.24432/C5XW20 (CC BY 4.0); first used in R. Kohavi, "Scaling Up the Accuracy of
    Naive-Bayes Classifiers: a Decision-Tree Hybrid", KDD 1996. Discretized as in the public
    hd-datasets collection; the test rows are held out as in the DD-SSP paper's code (seed 242).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if target is not None and not return_X_y:
        raise ValueError("target selects the y column of return_X_y=True; give return_X_y=True too")
    domain = adult_domain()
    target = ADULT_TARGET if target is None else target
    if target not in domain:
        raise ValueError(f"target {target!r} is not a column of adult; columns are {list(domain.attrs)}")
    parts = [_read_split(s, domain) for s in (("train", "test") if split == "all" else (split,))]
    data = Dataset(pd.concat(parts, ignore_index=True), domain)  # validates every code against the domain
    if labels:
        df = adult_codebook().inverse_transform(data)
        return (df.drop(columns=[target]), df[target]) if return_X_y else df
    if not return_X_y:
        return data.to_df() if as_frame else data
    df = data.to_df()
    X, y = df.drop(columns=[target]), df[target]
    return (X, y) if as_frame else (X.to_numpy(dtype=np.int64), y.to_numpy(dtype=np.int64))


#: the shipped data sets by name (``dp-marginals synth --dataset NAME`` runs on the train split).
DATASETS = {"adult": load_adult}
#: their codebooks (a `Discretizer` whose labels say what the codes mean): synth writes labelled rows through them.
CODEBOOKS = {"adult": adult_codebook}


def demo_domain() -> Domain:
    """The fixed schema of the demo table."""
    return Domain(
        ("age", "education", "hours", "sector", "married", "children", "region", "income"),
        (8, 6, 5, 4, 2, 4, 7, 2),
    )


def demo_dataset(n: int = 20_000, seed: int = 0) -> Dataset:
    """A deterministic table with real dependencies (a random Bayesian network over the demo domain)."""
    domain = demo_domain()
    rng = np.random.default_rng(seed)
    parents = {  # each attribute depends on up to two earlier ones
        "education": ("age",),
        "hours": ("age", "education"),
        "sector": ("education",),
        "married": ("age",),
        "children": ("married", "age"),
        "region": ("sector",),
        "income": ("education", "hours"),
    }
    cols: dict[str, np.ndarray] = {}
    for attr, m in zip(domain.attrs, domain.shape):
        pa = parents.get(attr, ())
        n_groups = int(np.prod([domain[p] for p in pa])) if pa else 1
        cpt = rng.dirichlet(np.full(m, 0.6), size=n_groups)  # one conditional distribution per parent state
        group = np.zeros(n, dtype=np.int64)
        for p in pa:
            group = group * domain[p] + cols[p]
        cdf = np.cumsum(cpt, axis=1)[group]
        u = rng.random(n)[:, None]
        cols[attr] = np.minimum((u > cdf).sum(axis=1), m - 1)
    return Dataset(pd.DataFrame(cols), domain)
