"""A logistic target's two classes, read off the public spec, and the fit's source conditioned on them.

A spec inferred from raw rows gives every column an ``<other>`` level (categories not released) and a
``<missing>`` level, after its regular levels. A logistic target whose spec gives exactly two regular
levels (plus any of those pseudo-levels) is fitted as a binary model on the rows whose target is one of
the two classes; rows whose target is ``<other>`` or ``<missing>`` are left out of the fit. The rule
reads only public levels, so it spends no budget: on a release, the conditioned marginals are
post-processing; on private rows, leaving a row out by a rule on its own target value keeps
neighbouring inputs neighbouring (a DP baseline's guarantee on the kept rows holds for the input).

`condition_on_classes` returns the source a fit reads: a `Dataset` filtered to the kept rows, or a
`ClassMarginals` (`ClassModel` for a fitted model) whose marginals query each clique together with
the target, slice the target to its classes and sum it out where it was not asked. Class codes are
0 and 1 in the conditioned domain (the regular levels come first, so they are unchanged). A fitted
model predicts only the two classes; its ``score`` counts a true ``<other>`` / ``<missing>`` as wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from marginals import Dataset, Discretizer, Domain
from marginals.source import ModelSource, implements, implements_member
from marginals.spec.discretize import MISSING_LABEL, OTHER_LABEL

PSEUDO_LABELS = (OTHER_LABEL, MISSING_LABEL)


@dataclass(frozen=True)
class TargetClasses:
    """A logistic target's classes: their codes in the spec's domain (``codes``) and labels."""

    target: str
    codes: tuple[int, ...]
    labels: tuple[str, ...]
    levels: int  # the target's number of levels in the spec's domain

    @property
    def conditioned(self) -> bool:
        """True when the spec gives the target levels besides its two classes (rows are left out)."""
        return self.levels != len(self.codes)


def pseudo_codes(labels: Sequence[str]) -> tuple[int, ...]:
    """The codes of the trailing ``<other>`` / ``<missing>`` levels of a spec column's ``labels``."""
    tail, end = [], len(labels)
    for label in (MISSING_LABEL, OTHER_LABEL):  # the spec appends <other>, then <missing>
        if end > 0 and labels[end - 1] == label:
            end -= 1
            tail.insert(0, end)
    return tuple(tail)


def target_classes(disc: Discretizer | None, domain: Domain, target: str) -> TargetClasses | None:
    """The two classes of a logistic target (None without a spec and with 2 levels: codes 0/1);
    ValueError, saying what to do, when the public levels do not give exactly two classes."""
    levels = int(domain[target])
    if disc is None:
        if levels != 2:
            raise ValueError(f"logistic target {target!r} must have exactly 2 levels (codes 0/1), but the domain gives "
                             f"it {levels}: recode it to 0/1 with a 2-level domain, or fit a linear model")  # fmt: skip
        return None
    labels = disc.labels(target)
    pseudo = set(pseudo_codes(labels))
    regular = tuple(c for c in range(levels) if c not in pseudo)
    if len(regular) != 2:
        shown = [labels[c] for c in regular]
        raise ValueError(
            f"logistic target {target!r} needs exactly 2 classes, but its spec gives {len(regular)} regular level(s) "
            f"{shown[:10]}{' ...' if len(shown) > 10 else ''} (besides <other>/<missing>): declare it in the schema as "
            "a categorical column with its two categories (or map values to two categories with \"aliases\"), or fit "
            "a linear model"
        )
    return TargetClasses(target, regular, tuple(labels[c] for c in regular), levels)


def _recode(codes: np.ndarray, kept: Sequence[int], levels: int) -> np.ndarray:
    """Class index of every code (-1 for a code that is not a class)."""
    lookup = np.full(levels, -1, dtype=np.int64)
    lookup[list(kept)] = np.arange(len(kept))
    return lookup[np.asarray(codes, dtype=np.intp)]


def class_index(codes: np.ndarray, classes: TargetClasses) -> np.ndarray:
    """The class index (0/1) of target codes of the spec's domain; -1 for ``<other>`` / ``<missing>``."""
    return _recode(codes, classes.codes, classes.levels)


def _kept_rows(table: pd.DataFrame, target: str, classes: TargetClasses) -> tuple[pd.DataFrame, np.ndarray]:
    index = class_index(table[target].to_numpy(), classes)
    keep = index >= 0
    out = table.loc[keep].reset_index(drop=True)
    out[target] = index[keep]
    return out, keep


def class_domain(domain: Domain, classes: TargetClasses) -> Domain:
    """``domain`` with the target's levels cut to its classes."""
    ordinal = None if domain.ordinal is None else [(a, k) for a, k in domain.ordinal if a != classes.target]
    return Domain(domain.attrs, tuple(len(classes.codes) if a == classes.target else domain[a] for a in domain.attrs),
                  ordinal)  # the features' order metadata kept (the target is encoded -1/+1)


class ClassMarginals:
    """A marginal source conditioned on a target's classes: each clique is queried with the target,
    the target sliced to its classes and summed out where it was not asked."""

    def __init__(self, source: Any, classes: TargetClasses) -> None:
        self.source = source
        self.classes = classes
        self.domain = class_domain(source.domain, classes)

    @property
    def given(self) -> str:
        """The conditioning attribute (marginals count only rows whose target is a class)."""
        return self.classes.target

    @property
    def total(self) -> float:
        """The classes' mass in the underlying source."""
        return float(self.marginals([(self.classes.target,)])[0].sum())

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Counts over ``cliques`` (axes in the order asked) of the rows whose target is a class."""
        target, kept = self.classes.target, list(self.classes.codes)
        asked = [tuple(self.domain.check(c)) for c in cliques]
        queries = [c if target in c else c + (target,) for c in asked]
        unique = list(dict.fromkeys(queries))
        tables = dict(zip(unique, self.source.marginals(unique)))
        out = []
        for c, q in zip(asked, queries):
            table = np.take(np.asarray(tables[q]), kept, axis=q.index(target))
            out.append(table if target in c else table.sum(axis=-1))
        return out


class ClassModel(ClassMarginals):
    """`ClassMarginals` of a fitted model (a release): ``cliques`` are its cliques holding the target
    (a pair is measured given the target when the triple is), synthetic rows are the model's rows whose
    target is a class (so fewer than asked)."""

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        """The model's cliques that hold the target."""
        return tuple(c for c in self.source.cliques if self.classes.target in c)

    def synthetic_codes(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """The model's synthetic rows (codes) whose target is a class, the target recoded 0/1."""
        draw = self.source.synthetic_codes if implements_member(self.source, "synthetic_codes") else self.source.synthetic_data
        return _kept_rows(draw(n=n, rng=rng), self.classes.target, self.classes)[0]

    def synthetic_data(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """As `synthetic_codes` (a conditioned model holds codes only)."""
        return self.synthetic_codes(n, rng)


def condition_on_classes(source: Any, classes: TargetClasses) -> Any:
    """``source`` restricted to the rows whose target is one of ``classes`` (target coded 0/1)."""
    if not classes.conditioned:
        return source
    if isinstance(source, Dataset):
        rows, keep = _kept_rows(source.to_df(), classes.target, classes)
        weights = None if source.weights is None else source.weights[keep]
        return Dataset(rows, class_domain(source.domain, classes), weights=weights)
    return ClassModel(source, classes) if implements(source, ModelSource) else ClassMarginals(source, classes)


def unconditioned(source: Any) -> Any:
    """The source a `ClassMarginals` conditions (``source`` itself otherwise)."""
    return source.source if isinstance(source, ClassMarginals) else source
