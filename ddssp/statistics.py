"""Sufficient statistics Z^T Z of the encoded table, computed from pairwise marginals.

Proposition 3.2 of Ferrando & Sheldon: the block of Z^T Z for attributes (j, k) is
``A_j mu_jk A_k^T`` with ``mu_jk`` the (m_j x m_k) count marginal and ``mu_jj = diag(mu_j)``.
The intercept (a constant-1 "attribute") contributes ``mu_j A_j^T`` against attribute j and the
total n against itself. Z = [X, y], so Z^T Z holds X^T X, X^T y and y^T y.

The input is a `marginals.source.MarginalSource` (``.domain``, ``.total``, ``.marginals(cliques)``
returning counts with axes in the order asked): `marginals.Dataset` gives exact marginals; an AIM
release (a `ModelSource`) gives its model's, and pairs outside its cliques are flagged as inferred.
All pairs and one-way marginals are requested in a single call so the source can batch them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from marginals import Dataset
from marginals.source import MarginalSource, ModelSource, implements, implements_member, protocol_members

from .encoding import Encoding

#: how many uncovered pairs the coverage warning names.
WARN_EXAMPLES = 3


class InferredPairsWarning(UserWarning):
    """Some attribute pairs of Z^T Z lie in no model clique: their marginals are inferred, not measured."""


@dataclass(frozen=True, eq=False)
class SufficientStatistics:
    """X^T X, X^T y, y^T y and the row count n of an encoded table (columns as ``feature_names``)."""

    XtX: np.ndarray
    Xty: np.ndarray
    yty: float
    n: float
    feature_names: tuple[str, ...]


def _blocks(encoding: Encoding) -> list[tuple[str, np.ndarray]]:
    """(attribute, A) for every attribute block of Z, in column order (target last)."""
    return [(f.attr, f.matrix) for f in encoding.features] + [(encoding.target, encoding.target_encoding.matrix)]


def _check_source(source: Any, encoding: Encoding) -> None:
    if not implements(source, MarginalSource):
        missing = [n for n in protocol_members(MarginalSource) if not implements_member(source, n)]
        raise TypeError(f"a marginal source needs .domain, .total and .marginals(cliques); "
                        f"{type(source).__name__} lacks .{', .'.join(missing)}")  # fmt: skip
    for attr in encoding.feature_attrs + (encoding.target,):
        if attr not in source.domain:
            raise ValueError(
                f"attribute {attr!r} of the encoding is not in the source's domain {list(source.domain.attrs)}"
            )
        if source.domain[attr] != encoding.domain[attr]:
            raise ValueError(
                f"attribute {attr!r} has {source.domain[attr]} levels in the source "
                f"but {encoding.domain[attr]} in the encoding"
            )


def uncovered_pairs(pairs: Sequence[tuple[str, str]], cliques: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """The pairs not contained in any of ``cliques``."""
    clique_sets = [frozenset(c) for c in cliques]
    return [p for p in pairs if not any(set(p) <= c for c in clique_sets)]


def _warn_inferred(source: Any, pairs: list[tuple[str, str]]) -> None:
    if not implements(source, ModelSource):
        return  # rows: every marginal is exact
    missing = uncovered_pairs(pairs, source.cliques)
    given = source.given if implements_member(source, "given") else None  # a source conditioned on a target
    where = f"any model clique holding {given!r} (the fit conditions on it)" if given else "any model clique"
    if missing:
        examples = ", ".join(f"({a}, {b})" for a, b in missing[:WARN_EXAMPLES])
        warnings.warn(
            f"{len(missing)} of {len(pairs)} attribute pairs needed for Z^T Z are not inside {where}: "
            f"their marginals are inferred by the model rather than measured (e.g. {examples})",
            InferredPairsWarning,
            stacklevel=5,  # the caller of .fit(...)
        )


def gram_from_marginals(source: Any, encoding: Encoding) -> tuple[np.ndarray, float]:
    """(Z^T Z, n) from a marginal source; Z = [intercept?, X, y] in the encoding's column order."""
    _check_source(source, encoding)
    blocks = _blocks(encoding)
    attrs = [a for a, _ in blocks]
    pairs = [(attrs[i], attrs[j]) for i in range(len(attrs)) for j in range(i + 1, len(attrs))]
    singles = [(a,) for a in attrs]
    _warn_inferred(source, pairs)
    tables = source.marginals(pairs + singles)
    if len(tables) != len(pairs) + len(singles):
        raise ValueError(f"the source returned {len(tables)} marginals for {len(pairs) + len(singles)} requested")
    pair_tables = dict(zip(pairs, tables[: len(pairs)]))
    one_way = {a: np.asarray(t, dtype=np.float64) for a, t in zip(attrs, tables[len(pairs):])}
    for a, t in one_way.items():
        if t.shape != (encoding.domain[a],):
            raise ValueError(
                f"the source's one-way marginal of {a!r} has shape {t.shape}, expected ({encoding.domain[a]},)"
            )
    n = float(np.mean([t.sum() for t in one_way.values()]))
    if not (n > 0 and np.isfinite(n)):
        raise ValueError(f"the marginals describe an empty table (total {n}); cannot fit a regression")

    widths = [A.shape[0] for _, A in blocks]
    offset = 1 if encoding.intercept else 0
    starts = np.concatenate([[offset], offset + np.cumsum(widths)]).astype(int)
    size = starts[-1]
    gram = np.zeros((size, size))
    if encoding.intercept:
        gram[0, 0] = n
    for i, (a, A) in enumerate(blocks):
        si = slice(starts[i], starts[i + 1])
        mu = one_way[a]
        gram[si, si] = (A * mu) @ A.T
        if encoding.intercept:
            gram[0, si] = A @ mu
            gram[si, 0] = gram[0, si]
        for j in range(i + 1, len(blocks)):
            b, B = blocks[j]
            table = np.asarray(pair_tables[(a, b)], dtype=np.float64)
            if table.shape != (A.shape[1], B.shape[1]):
                raise ValueError(
                    f"the source's marginal of ({a}, {b}) has shape {table.shape}, expected {(A.shape[1], B.shape[1])}"
                )
            sj = slice(starts[j], starts[j + 1])
            gram[si, sj] = A @ table @ B.T
            gram[sj, si] = gram[si, sj].T
    return gram, n


def sufficient_statistics(source: Any, encoding: Encoding) -> SufficientStatistics:
    """X^T X, X^T y, y^T y and n from a marginal source (exact for a `Dataset`)."""
    gram, n = gram_from_marginals(source, encoding)
    p = encoding.n_features
    return SufficientStatistics(
        XtX=gram[:p, :p].copy(),
        Xty=gram[:p, p].copy(),
        yty=float(gram[p, p]),
        n=n,
        feature_names=encoding.feature_names,
    )


def statistics_from_frame(df: pd.DataFrame, encoding: Encoding) -> SufficientStatistics:
    """Sufficient statistics of a (synthetic) table of codes, via its exact marginals."""
    attrs = encoding.feature_attrs + (encoding.target,)
    missing = [a for a in attrs if a not in df.columns]
    if missing:
        raise ValueError(f"the table lacks the column(s) {missing}")
    domain = encoding.domain.project(attrs)
    return sufficient_statistics(Dataset(df[list(attrs)], domain), encoding)
