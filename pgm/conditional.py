"""Sampling from a model conditioned on evidence: codes given for some attributes.

Two kinds of evidence, two exact algorithms:

- **One evidence for every row** (`condition`, `sample_given`): a weight per level of each
  evidence attribute (1 for an allowed code, 0 for a ruled-out one; a weight in (0, 1) is soft
  evidence). Its log is added to one potential clique holding the attribute (a new one-attribute
  clique when none does), so the conditioned model is the model times the evidence indicators,
  renormalised: p(x | e) = p(x) w(x) / p(e). Belief propagation on the same junction tree
  calibrates it, and the ordinary sampler (`pgm.sampling`) draws from it. The attributes are
  conditioned on one at a time: the mass of each one's weights under the model conditioned on
  the ones before is p(e_i | e_<i), so their product p(e) comes out exactly and a zero names the
  attribute that empties the model. The conditioned model's total is ``total * p(e)``: the
  expected number of matching rows.
- **One evidence per row** (`impute`: a table of codes, NaN where a cell is to be drawn): rows
  are grouped by which attributes they give (one group for a table without NaN). For a group
  giving the attributes E, the others are eliminated first (greedy, fewest cells), E last: read
  backwards that perfect elimination order starts with E, and each other attribute's neighbours
  at its elimination (its parents) are given or drawn before it, so p(x_i | everything before)
  = p(x_i | parents), a table of the unconditioned model. The rows' given values are pinned and
  the rest drawn column by column with the sampler's systematic sampling per parent group
  (`pgm.sampling.sample_in_order`): no belief propagation per row or per distinct evidence, and
  each row is an exact draw of p(rest | its evidence). A row whose evidence has probability zero
  is found afterwards: every completion of it has a -inf potential (the model is exp of the
  summed potentials, positive wherever they are finite), and it is an error.
  The pinned order's tables hold the given attributes as axes and can grow large (adult, half the
  columns given: 30M cells); the other exact way, `pgm.row_evidence`, slices the potentials at each
  distinct evidence and samples on the junction tree of the remaining attributes. Each group of
  rows takes the one that touches fewer cells (`_pattern_method`, weighed by measured speed).

Randomness follows the sampler convention (`marginals.randomness.sampling_rng`): a Generator, an
int seed (reproducible rows) or None.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from marginals.domain import Domain, code_dtype
from marginals.randomness import SamplingSeed, sampling_rng

from .junction_tree import _interaction_graph
from .row_evidence import reduced_tree, sample_rows_given, unique_rows
from .sampling import sample_in_order, sample_rows


class ZeroProbabilityError(ValueError):
    """Evidence the model gives probability zero: nothing can be sampled conditioned on it."""


def code_weights(domain: Domain, given: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Evidence in codes as 0/1 weights per level: ``{attr: code}`` or ``{attr: iterable of codes}``
    (e.g. a list or ``range(2, 5)``); ValueError for an unknown attribute or a code out of range."""
    if not isinstance(given, Mapping):
        raise TypeError(f"given must be a mapping attribute -> code(s), got {type(given).__name__}")
    weights = {}
    for attr, value in given.items():
        if attr not in domain:
            raise ValueError(f"given: unknown attribute {attr!r}; the domain has {list(domain.attrs)}")
        size = domain[attr]
        codes = [value] if np.ndim(value) == 0 and not isinstance(value, (range, set, frozenset)) else list(value)
        bad = [c for c in codes if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer))
               or not 0 <= c < size]
        if bad or not codes:
            what = f"code {bad[0]!r}" if bad else "an empty list"
            raise ValueError(f"given[{attr!r}]: {what} is not a code of {attr!r} (integers 0..{size - 1})")
        w = np.zeros(size)
        w[np.asarray(codes, dtype=np.int64)] = 1.0
        weights[attr] = w
    return weights


def _check_weights(domain: Domain, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for attr, w in weights.items():
        if attr not in domain:
            raise ValueError(f"evidence: unknown attribute {attr!r}; the domain has {list(domain.attrs)}")
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (domain[attr],) or not np.all((w >= 0) & (w <= 1)):
            raise ValueError(f"evidence[{attr!r}]: needs {domain[attr]} weights in [0, 1], got shape {w.shape}")
        out[attr] = w
    return out


def _times_weights(model: "Model", attr: str, weights: np.ndarray, total: float) -> "Model":
    """``model`` with log(weights) on ``attr`` added to its smallest potential clique holding it (a
    new clique ``(attr,)`` when none does), total ``total``, on the same junction tree."""
    cliques = list(model.cliques)
    potentials = [model.potentials[c].values for c in cliques]
    holders = [k for k, c in enumerate(cliques) if attr in c]
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)
    if holders:
        k = min(holders, key=lambda j: (model.domain.size(cliques[j]), j))
        shape = [weights.size if a == attr else 1 for a in cliques[k]]
        potentials[k] = potentials[k] + log_w.reshape(shape)
    else:
        cliques.append((attr,))
        potentials.append(log_w)
    return type(model)(model.domain, cliques, potentials, total, tree=model.tree)  # (pgm.model imports this module)


def condition(model: "Model", weights: Mapping[str, np.ndarray]) -> tuple["Model", float]:
    """(the model conditioned on the evidence ``weights`` — per attribute, one weight in [0, 1] per
    level — with total ``model.total * p(e)``, and p(e)); `ZeroProbabilityError` when p(e) = 0."""
    weights = _check_weights(model.domain, weights)
    current, prob = model, 1.0
    for k, (attr, w) in enumerate(weights.items()):
        marginal = current.project([attr]).values
        mass = marginal.sum()
        share = float(marginal @ w / mass) if mass > 0 else 0.0
        if not share > 0:
            before = f" once {list(weights)[:k]} are given" if k else ""
            raise ZeroProbabilityError(f"the evidence on {attr!r}{before} has probability zero under the model: "
                                       "nothing can be sampled conditioned on it")
        prob *= share
        current = _times_weights(current, attr, w, model.total * prob)
        current.beliefs  # calibrated here: an error belongs to this attribute
    return current, prob


def sample_given(model: "Model", n: int | None, given: Mapping[str, Any], rng: SamplingSeed = None) -> pd.DataFrame:
    """``n`` rows (default: round(total * p(given))) of ``model`` conditioned on ``given`` (codes, as
    `code_weights`), drawn by the ordinary sampler from the conditioned model."""
    conditioned, _ = condition(model, code_weights(model.domain, given))
    return sample_rows(conditioned, n, rng)


def pinned_order(model: "Model", given: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """(attribute, parents) for the attributes not in ``given``, in sampling order: the reverse of a
    greedy (fewest cells) elimination of them before ``given``; parents in domain order."""
    domain = model.domain
    sizes = dict(zip(domain.attrs, domain.shape))
    rank = {a: k for k, a in enumerate(domain.attrs)}
    adjacency = {a: set(nb) for a, nb in _interaction_graph(domain, model.cliques).items()}
    free = [a for a in domain.attrs if a not in given]
    steps = []
    while free:
        best = min(free, key=lambda a: (math.prod([sizes[b] for b in adjacency[a]], start=sizes[a]), rank[a]))
        free.remove(best)
        nbrs = adjacency.pop(best)
        for b in nbrs:
            adjacency[b].discard(best)
            adjacency[b].update(c for c in nbrs if c != b)
        steps.append((best, tuple(sorted(nbrs, key=rank.get))))
    return steps[::-1]


def _given_codes(domain: Domain, given: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(given columns in domain order, their codes as int64 (0 where missing), known-cell mask);
    ValueError for an unknown column or a cell that is neither NaN nor a code."""
    if not isinstance(given, pd.DataFrame):
        raise TypeError(f"given must be a pandas DataFrame, got {type(given).__name__}")
    names = [str(c) for c in given.columns]
    unknown = [c for c in names if c not in domain]
    if unknown or len(set(names)) != len(names):
        what = f"unknown column(s) {unknown}" if unknown else "repeated column names"
        raise ValueError(f"given: {what}; the domain has {list(domain.attrs)}")
    attrs = [a for a in domain.attrs if a in names]
    frame = given.set_axis(names, axis=1)
    codes = np.zeros((len(given), len(attrs)), dtype=np.int64)
    known = np.zeros(codes.shape, dtype=bool)
    for j, a in enumerate(attrs):
        try:
            values = pd.to_numeric(frame[a], errors="raise").to_numpy(np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise ValueError(f"given[{a!r}]: codes must be numbers (NaN where the cell is to be drawn)") from None
        known[:, j] = ~np.isnan(values)
        v = values[known[:, j]]
        if not np.all((v == np.round(v)) & (v >= 0) & (v < domain[a])):
            raise ValueError(f"given[{a!r}]: a cell is not a code of {a!r} (integers 0..{domain[a] - 1}, or NaN)")
        codes[known[:, j], j] = v.astype(np.int64)
    return attrs, codes, known


def impossible_rows(model: "Model", columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Which complete rows (codes of every attribute) have probability zero: a -inf potential."""
    n = len(next(iter(columns.values())))
    bad = np.zeros(n, dtype=bool)
    for clique, factor in model.potentials.items():
        if np.isneginf(factor.values).any():
            flat = np.ravel_multi_index(tuple(np.asarray(columns[a], dtype=np.int64) for a in clique), factor.values.shape)
            bad |= np.isneginf(factor.values.ravel()[flat])
    return bad


def _pattern_method(model: "Model", fixed: Mapping[str, np.ndarray]) -> tuple[str, Any]:
    """("pinned", sampling order) or ("rows", reduced tree) for rows giving ``fixed``: whichever
    touches fewer cells, the pinned order's tables or distinct evidence x the reduced tree's cells
    (at `ROWS_COST` the cell, measured); never pinned tables above `PINNED_MAX_CELLS` (the model's
    query cache keeps them)."""
    pinned = tuple(fixed)
    order = pinned_order(model, pinned)
    sizes = dict(zip(model.domain.attrs, model.domain.shape))
    table_cells = sum(math.prod(sizes[a] for a in (x,) + parents) for x, parents in order)
    tree = reduced_tree(model, pinned)
    distinct = len(unique_rows([np.asarray(v, dtype=np.int64) for v in fixed.values()], [sizes[a] for a in pinned])[0])
    row_cells = distinct * (0 if tree is None else tree.size_cells)
    if table_cells <= PINNED_MAX_CELLS and table_cells <= ROWS_COST * row_cells:
        return "pinned", order
    return "rows", tree


#: time per cell of the per-row algorithm against the pinned order's, per table cell (adult and
#: acs-employment at eps 1, 100k rows giving half the columns: benchmarks/results/conditional_sampling)
ROWS_COST = 1 / 3
#: the largest pinned-order tables (cells, summed) worth building for one group of rows
PINNED_MAX_CELLS = 1 << 23


class _QueryCache:
    """Copies of the model sharing its calibrated beliefs, for the pinned groups' table queries: the
    groups of one call share the queries' cache (similar groups share work), and a copy is let go
    once the tables asked of it pass `CACHE_CELLS` (the caller's model keeps none of them)."""

    def __init__(self, model: "Model") -> None:
        self.base, self.copy, self.cells = model, None, 0

    def model(self, order: list[tuple[str, tuple[str, ...]]]) -> "Model":
        sizes = dict(zip(self.base.domain.attrs, self.base.domain.shape))
        cells = sum(math.prod(sizes[a] for a in (x,) + parents) for x, parents in order)
        if self.copy is None or self.cells + cells > CACHE_CELLS:
            base = self.base
            self.copy, self.cells = type(base)(base.domain, base.cliques, [f.values for f in base.potentials.values()],
                                               base.total, tree=base.tree, beliefs=base.beliefs), 0
        self.cells += cells
        return self.copy


#: the table cells one copy of the model answers before it is let go with its cache
CACHE_CELLS = 1 << 24


def _draw_pattern(model: "Model", fixed: dict[str, np.ndarray], rng: np.random.Generator, method: str,
                  cache: _QueryCache) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Codes of every attribute for rows giving ``fixed``; the rows found impossible (None: check later)."""
    pinned = tuple(fixed)
    chosen, plan = _pattern_method(model, fixed) if method == "auto" else (method, None)
    if chosen == "rows":
        tree = plan if method == "auto" else reduced_tree(model, pinned)
        drawn, bad = sample_rows_given(model, tree, fixed, rng)
        return {**fixed, **drawn}, bad
    order = plan if method == "auto" else pinned_order(model, pinned)
    block = sample_in_order(cache.model(order), fixed, order, rng)
    return {a: block[a].to_numpy() for a in model.domain.attrs}, None


def impute(model: "Model", given: pd.DataFrame, rng: SamplingSeed = None, method: str = "auto") -> pd.DataFrame:
    """One row per row of ``given`` (codes; NaN marks a cell to draw; absent columns are drawn):
    its given cells kept, the others drawn from ``model`` conditioned on them (module docstring).
    Codes in domain order, ``given``'s index; `ZeroProbabilityError` for impossible evidence.
    ``method`` ("auto", "pinned", "rows") is for tests and benchmarks."""
    if method not in ("auto", "pinned", "rows"):
        raise ValueError(f"method must be 'auto', 'pinned' or 'rows', got {method!r}")
    rng = sampling_rng(rng, "rng")
    domain = model.domain
    attrs, codes, known = _given_codes(domain, given)
    n = len(given)
    out = {a: np.zeros(n, dtype=code_dtype(domain[a])) for a in domain.attrs}
    bad, cache = np.zeros(n, dtype=bool), _QueryCache(model)
    patterns, which = unique_rows(list(known.T), [2] * len(attrs)) if n and attrs else (np.ones((1, 0), bool), np.zeros(n, int))
    for p, pattern in enumerate(patterns):
        rows = np.flatnonzero(which == p)
        pinned = tuple(a for a, k in zip(attrs, pattern) if k)
        if not len(rows):
            continue
        if pinned:
            fixed = {a: codes[rows, attrs.index(a)].astype(out[a].dtype) for a in pinned}
            block, impossible = _draw_pattern(model, fixed, rng, method, cache)
        else:
            frame, impossible = sample_rows(model, len(rows), rng), np.zeros(len(rows), dtype=bool)
            block = {a: frame[a].to_numpy() for a in domain.attrs}
        for a in domain.attrs:
            out[a][rows] = block[a]
        bad[rows] = impossible_rows(model, block) if impossible is None else impossible
    if bad.any():
        raise ZeroProbabilityError(f"given: {int(bad.sum())} row(s) hold evidence of probability zero under the "
                                   f"model (the first: index {given.index[np.argmax(bad)]!r})")
    return pd.DataFrame(out, index=given.index, columns=list(domain.attrs), copy=False)
