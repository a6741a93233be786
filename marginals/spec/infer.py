"""Completing a spec from the private rows under differential privacy, charged to an `Accountant`.

`infer_spec` starts from the public draft (`marginals.spec.public.draft_spec`) and infers, per
column, only what the schema leaves open; a column the schema describes fully costs nothing.
The budget ``rho`` is split over the columns to infer in two rounds: each untyped column's type
profile first (`PROFILE_SHARE` of an equal part), then the rest by the (declared or noisy) types,
a numeric column weighing `NUMERIC_WEIGHT` categorical ones (`_plan`: public information and noisy
outputs only). Neighbouring tables differ by one
row (added or removed), and a row holds one value per column, so every histogram below has L2
sensitivity 1. Only noisy counts are read after the measurement; nothing else from the rows
reaches the spec (no un-noised category, minimum, maximum or quantile).

Every step reads a cell only through its canonical key (`marginals.spec.columns.series_keys`,
rules in `marginals.cell_keys`): a function of that cell alone, the same whatever dtype pandas
gave the column, so a row added to the table changes its own key and no other (the type profile,
the category histogram and the numeric histogram below each move by one count). Every "error"
rule of the schema is checked on the rows before anything is charged (`check_rules`).

- Type (when the schema gives none): the counts (missing, number, text) with discrete Gaussian
  noise (`marginals.mechanisms.measure_counts`); numeric when the noisy number count exceeds the
  noisy text count.
- Numeric bounds, bin edges and the density inside the bins: a DP hierarchical histogram on a
  public tree over the number line (`marginals.spec.tree`, three levels, each of L2 sensitivity 1),
  edges at its quantiles with a bin for every large atom such as exact zeros
  (`marginals.spec.density`). Text in an inferred numeric column is missing.
- Categories: a thresholded histogram. The noisy count X_k + Z_k of every *observed* value k
  (Z_k discrete Gaussian with variance parameter s^2, `marginals.exact`) is released when it
  reaches the threshold tau. With a seeded (test) source each key's noise has its own stream (`keyed_noise`), so two
  neighbouring tables draw the same noise for the keys they share.

  Why it is private. If the added row's value k is already observed, the key set is the same and
  only X_k moves by 1: the Gaussian mechanism, 1/(2 s^2)-zCDP, and thresholding is
  post-processing. If k is new, the output on the larger table is the output on the smaller one,
  plus k with probability q = P(1 + Z >= tau): M(D') = (1 - q) M(D) + q Q, which is
  delta-approximate zCDP (Bun & Steinke 2016, Def. 8.1) whenever q <= delta.

  The threshold. The discrete Gaussian's moment generating function is at most that of N(0, s^2)
  (Canonne, Kamath & Steinke 2020), so P(Z >= m) <= exp(-m^2 / (2 s^2)) (Chernoff). Hence

      tau = 1 + ceil(s * sqrt(2 ln(1 / delta)))   gives   q = P(Z >= tau - 1) <= delta,

  and a value held by a single row is released with probability at most delta
  (`category_threshold`; tests check it against the exact pmf).

  The ledger records each such charge as ``thresholded_discrete_gaussian`` with its ``delta``;
  approximate zCDP composes by adding the rhos and the deltas, so a run is
  (cdp_eps(rho_total, delta_ledger), delta_ledger + sum of these deltas)-DP
  (`aim.raw.synthesize` reserves that sum inside the user's delta).

  The ``<other>`` level: every inferred categorical column gets one (``"unseen": "other"``), so a
  row whose value was not released is kept as ``<other>``, never dropped. The choice depends on no
  row, so it costs no budget. A schema closes a column by declaring ``"unseen": "drop"`` on it:
  rows outside the released categories are then left out, and the spec says so (``excluded``).

Missing values: every inferred column gets a missing level (``"missing": "level"``), whatever
the rows hold. Deciding it from a noisy missing count would drop the rows of every column whose
missing count fell under the noise (at a small spec budget, hundreds of rows), and the best one
could then say is a bound of several sigma on them; a level that is always there drops nothing
and costs nothing, at the price of a level that may stay (nearly) empty. A schema that knows a
column has no missing values says ``"missing": "error"`` (checked on the rows before any budget
is spent), or ``"drop"`` to leave such rows out.

No row is left out silently. Only a rule the schema declares (``"unseen": "drop"`` on a
categorical column, ``"missing": "drop"``; on the column itself: an inferred column does not take
the schema's top-level rules, which apply to declared columns) leaves rows out; each such rule gives a public
statement in the spec's ``"excluded"`` list (`marginals.spec.discretize.Discretizer.excluded`),
which says which rows and that their number is not released (no true count is ever written).

A column whose histogram keeps nothing (no value frequent enough for the budget) is left out of
the spec with a `SpecInferenceWarning`.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from . import columns as spec_columns
from ..cell_keys import key_numbers
from ..dataset import DataError
from .discretize import Discretizer
from ..exact import discrete_gaussian, discrete_gaussian_scalar, noise_variance
from ..maps import GaussianMap
from ..mechanisms import COUNT_SENSITIVITY, measure_counts
from ..privacy import Accountant, BudgetExceeded
from ..randomness import InsecureRandom, RandomSource, noise_source
from .columns import OTHER_LABEL, SpecError, compile_column, markers
from . import density
from .tree import measure_shape
from .public import DEFAULT_BINS, draft_spec, spec_gaps

#: share of an untyped column's equal part of rho spent on deciding its type (3 counts over all rows).
PROFILE_SHARE = 0.05
#: a numeric column's weight in the split of rho after the type profiles (a categorical one weighs 1):
#: its bounds, edges and density take three measurements on a tree (`marginals.spec.tree`).
NUMERIC_WEIGHT = 2.0
THRESHOLD_MECHANISM = "thresholded_discrete_gaussian"
_INTEGER = re.compile(r"-?\d{1,15}")


class SpecInferenceWarning(UserWarning):
    """A column was left out of an inferred spec: nothing in it passed the noise threshold."""


def category_threshold(variance: Fraction | float, delta: float) -> int:
    """tau = 1 + ceil(s sqrt(2 ln(1/delta))) for noise variance parameter s^2: a count of 1 reaches
    tau with probability at most delta (see the module docstring)."""
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    reach = math.sqrt(2 * float(variance) * math.log(1 / delta)) * (1 + 1e-12)  # rounded up: never below the bound
    return 1 + math.ceil(reach)


@dataclass(frozen=True)
class _Context:
    accountant: Accountant
    source: RandomSource
    rho: dict  # per column to infer, after its type profile
    kinds: dict  # per column to infer: 'numeric' or 'categorical'
    delta: float  # per categorical histogram
    markers: tuple
    bins: int


def _sigma(rho: float) -> float:
    return GaussianMap(COUNT_SENSITIVITY).sigma(rho)


def infer_spec(data: pd.DataFrame, accountant: Accountant, rho: float, delta: float = 0.0, schema: Any = None,
               bins: int = DEFAULT_BINS, rng: RandomSource | int | None = None,
               show_private_values: bool = False) -> Discretizer:
    """A `Discretizer` for ``data``: what ``schema`` (public; default: the table's column names)
    declares, the rest inferred under DP for at most ``rho`` (zCDP) plus ``delta`` for the
    category thresholds, charged to ``accountant`` (see the module docstring). Every "error" rule
    of the schema is checked on the rows first: a failing run charges nothing (its message names
    the column and the rule; private values only with ``show_private_values``). ``rng``: None
    (secure, the default) or, for tests only, an insecure seed."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"infer_spec expects a pandas DataFrame, got {type(data).__name__}")
    df = data.set_axis([str(c) for c in data.columns], axis=1)
    partial = draft_spec(schema if schema is not None else list(df.columns), bins)
    absent = [c for c in partial["columns"] if c not in df.columns]
    if absent:
        raise DataError(f"{len(absent)} schema column(s) missing from the table: {absent}")
    todo = [c for c, gap in spec_gaps(partial).items() if gap]
    check_rules(df, partial, todo, show_private_values)
    if not todo:
        return Discretizer(partial).with_exclusions()
    thresholded = [c for c in todo if partial["columns"][c].get("type") != "numeric"]
    _check_budget(accountant, rho, delta, thresholded)
    start = _Context(accountant, noise_source(rng, "rng"), {}, {}, delta / max(1, len(thresholded)),
                     tuple(partial["missing_markers"]), bins)
    ctx = _plan(df, partial, todo, rho, start)
    columns = {}
    for name, col in partial["columns"].items():
        done = _infer_column(name, df[name], col, ctx) if name in todo else col
        if done is None:
            warnings.warn(f"column {name!r}: no value passed the noise threshold of the DP spec inference; the column "
                          "is left out (declare its categories or bounds, or give the spec a larger budget)",
                          SpecInferenceWarning, stacklevel=2)
            continue
        columns[name] = done
    if not columns:
        raise ValueError("the DP spec inference kept no column: declare categories / bounds in a schema, or give "
                         "the spec a larger share of the budget")
    note = (f"declared: {[c for c in columns if c not in todo]}; inferred under DP (rho = {rho:.6g}, "
            f"delta = {delta:.3g}): {[c for c in columns if c in todo]}")
    done = Discretizer({**{k: v for k, v in partial.items() if k != "columns"}, "note": note, "columns": columns})
    return done.with_exclusions()  # every "drop" rule, stated in the spec ("excluded")


_PLACEHOLDER = "\x00placeholder"


def check_rules(df: pd.DataFrame, partial: dict, todo: list, show: bool = False) -> None:
    """Check every "error" rule a partial spec fixes on the rows, before any budget is spent:
    complete columns run as they will; inferred ones check their declared ``"missing": "error"``
    and ``"non_numeric": "error"``; ``"unseen": "error"`` on inferred categories is refused (rare
    values are left out by design, so it would fail on the noise)."""
    defaults = {k: partial[k] for k in ("unseen", "missing", "missing_markers")}
    for name, col in partial["columns"].items():
        if name in todo:
            if col.get("unseen") == "error":
                raise SpecError(f"column {name!r}: \"unseen\": \"error\" needs declared categories (inferred "
                                "categories leave rare values out by design); use \"other\" or \"drop\"")
            col = {k: v for k, v in col.items() if k not in ("lo", "hi", "bins", "edges", "aliases")}
            col.setdefault("missing", "level")  # inferred: a level, never an error unless declared
            if col.setdefault("type", "categorical") == "categorical":
                col.update(categories=[_PLACEHOLDER], unseen="other")
            else:
                col.update(lo=0, hi=1, bins=1)
        compile_column(name, col, defaults)[0].encode(df[name], show)


def _check_budget(accountant: Accountant, rho: float, delta: float, thresholded: list) -> None:
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be a marginals.Accountant, got {type(accountant).__name__}")
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"rho must be a finite number > 0 to infer a spec, got {rho}")
    if not accountant.can_afford(rho):
        raise BudgetExceeded(f"the spec inference needs rho={rho:.6g}, but only {accountant.remaining:.6g} remains")
    if thresholded and not (0 < delta < 1):
        raise ValueError(f"columns {thresholded} need categories from a thresholded histogram: give delta in (0, 1) "
                         f"(got {delta}), or declare their categories or type 'numeric' in the schema")


def _plan(df: pd.DataFrame, partial: dict, todo: list, rho: float, ctx: _Context) -> _Context:
    """Profile every untyped column (`PROFILE_SHARE` of an equal part of ``rho`` each), then split the
    rest over the columns by their (declared or noisy) types, a numeric column weighing `NUMERIC_WEIGHT`:
    the split reads public information and noisy outputs only."""
    kinds = {}
    for name in todo:
        col = partial["columns"][name]
        kinds[name] = col.get("type")
        if kinds[name] is None:
            marks = markers(list(col.get("missing_markers", ctx.markers)), f"column {name!r}")
            _, missing, values = _parse(df[name], marks)
            kinds[name] = _profile(name, values, missing, rho * PROFILE_SHARE / len(todo), ctx)
    rest = rho * (1 - PROFILE_SHARE * sum(partial["columns"][c].get("type") is None for c in todo) / len(todo))
    weights = {c: NUMERIC_WEIGHT if k == "numeric" else 1.0 for c, k in kinds.items()}
    total = sum(weights.values())
    return replace(ctx, rho={c: rest * w / total for c, w in weights.items()}, kinds=kinds)


def _infer_column(name: str, s: pd.Series, col: dict, ctx: _Context) -> dict | None:
    """One column's spec: its declared keys plus what the noisy measurements give (None: nothing kept)."""
    marks = markers(list(col.get("missing_markers", ctx.markers)), f"column {name!r}")
    keys, missing, values = _parse(s, marks)
    rho, kind = ctx.rho[name], ctx.kinds[name]
    if kind == "categorical":
        return _categorical(name, keys, missing, col, rho, ctx)
    return _numeric(name, values, missing, col, rho, ctx)


def _parse(s: pd.Series, marks: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, missing, number) of every value, as the Discretizer reads them: each a function of
    the cell alone (`marginals.spec.columns.series_keys`), whatever dtype pandas gave the column."""
    keys = spec_columns.series_keys(s)  # looked up at call time: one keying function for the engine
    missing = pd.isna(keys) | pd.Series(keys, dtype=object).isin(list(marks)).to_numpy()
    keys = np.where(missing, None, keys)
    return keys, missing, key_numbers(keys)


def _profile(name: str, values: np.ndarray, missing: np.ndarray, rho: float, ctx: _Context) -> str:
    """'numeric' or 'categorical' from the noisy counts of (missing, number, text) values."""
    number = ~missing & np.isfinite(values)
    counts = np.array([missing.sum(), number.sum(), (~missing & ~number).sum()], dtype=np.int64)
    m = measure_counts(counts, (name,), _sigma(rho), ctx.source, ctx.accountant, label=f"spec {name}: type profile")
    return "numeric" if m.noisy_counts[1] > m.noisy_counts[2] else "categorical"


#: a seeded source gives each key its own noise stream up to this many keys (one exact draw each,
#: about 0.5 ms); beyond, one batch in sorted key order (tests only: the secure path is a batch anyway).
KEYED_MAX = 512


def keyed_noise(source: RandomSource, variance: Fraction, labels: list[bytes]) -> np.ndarray:
    """One discrete Gaussian draw per label, i.i.d. From a secure source: plain independent draws.
    From a seeded (test) source: each label's draw comes from its own stream, seeded by one word of
    the source and the label (up to `KEYED_MAX` labels), so a key's noise does not depend on which
    other keys exist, and the source moves on by one word whatever the data: neighbouring tables
    replay the same noise on the keys they share. The noise distribution, hence the privacy
    argument, is the same either way."""
    if source.private:
        return discrete_gaussian(source, variance, len(labels))
    salt = source.uint64(1).tobytes()
    if len(labels) > KEYED_MAX:
        return discrete_gaussian(InsecureRandom(int.from_bytes(salt, "little"), warn=False), variance, len(labels))
    out = np.empty(len(labels), dtype=np.int64)
    for i, label in enumerate(labels):
        seed = int.from_bytes(hashlib.sha256(salt + label).digest()[:16], "little")
        out[i] = discrete_gaussian_scalar(InsecureRandom(seed, warn=False), variance)
    return out


def _thresholded_histogram(name: str, keys: list[str], counts: np.ndarray, rho: float,
                           ctx: _Context) -> tuple[np.ndarray, float, int]:
    """(noisy counts, sigma, tau): discrete Gaussian noise on every key's count (`keyed_noise`),
    charged with its delta."""
    variance = noise_variance(_sigma(rho))
    tau = category_threshold(variance, ctx.delta)
    sigma = float(variance) ** 0.5
    ctx.accountant.charge(float(GaussianMap(COUNT_SENSITIVITY).rho_exact(variance)), f"spec {name}: categories",
                          THRESHOLD_MECHANISM, sigma=sigma, sensitivity=COUNT_SENSITIVITY, threshold=tau,
                          delta=ctx.delta)
    labels = [b"k" + k.encode("utf-8", "surrogatepass") for k in keys]
    return counts + keyed_noise(ctx.source, variance, labels), sigma, tau


def _category_values(keys: list[str]) -> list:
    """Released keys sorted, as integers when every one is an integer."""
    if keys and all(_INTEGER.fullmatch(k) for k in keys):
        return sorted(int(k) for k in keys)
    return sorted(keys)


def _categorical(name: str, keys: np.ndarray, missing: np.ndarray, col: dict, rho: float, ctx: _Context) -> dict | None:
    observed = pd.Series(keys[~missing], dtype=object).value_counts(sort=False).sort_index()
    noisy, sigma, tau = _thresholded_histogram(name, list(observed.index), observed.to_numpy(np.int64), rho, ctx)
    reserved = ("", OTHER_LABEL)  # never categories: blank text and the other level's own label go to <other>
    kept = (noisy >= tau) & ~np.isin(observed.index.to_numpy(dtype=object), reserved)
    if not kept.any():
        return None
    released = [str(k) for k in observed.index[kept]]
    out = {**col, "type": "categorical", "categories": _category_values(released)}
    out.setdefault("unseen", "other")  # data-independent: no measurement, no budget (a schema may close the column)
    out.setdefault("missing", "level")  # always (see the module docstring): no row dropped for a missing value
    out.setdefault("note", f"categories from a thresholded DP histogram (noise sigma {sigma:.4g}, threshold {tau}); "
                           "rarer values " + ("map to <other>" if out["unseen"] == "other" else "are left out"))
    return out


def _numeric(name: str, values: np.ndarray, missing: np.ndarray, col: dict, rho: float, ctx: _Context) -> dict | None:
    shape = measure_shape(name, values, missing | np.isnan(values), rho, ctx.source, ctx.accountant)
    if shape is None:
        return None
    integer = col.get("integer", shape.integer)
    pieces = _as_kind(shape.pieces, shape.integer, integer)
    if not len(pieces):
        return None
    edges = density.edges(pieces, integer, col.get("bins", ctx.bins))
    pieces = pieces[(pieces[:, 0] >= edges[0]) & (pieces[:, 1] <= edges[-1])]
    out = {k: v for k, v in col.items() if k not in ("bins", "lo", "hi")}
    out.update(type="numeric", edges=edges, integer=integer,
               density=[[density.plain_number(lo), density.plain_number(hi), float(f"{w / pieces[:, 2].sum():.4g}")] for lo, hi, w in pieces])
    out.setdefault("non_numeric", "missing")
    out.setdefault("missing", "level")  # always (see the module docstring)
    out.setdefault("note", "bounds, bin edges and the density inside the bins from a DP hierarchical histogram on a "
                           f"public tree over the number line (level-1 noise sigma {shape.sigma:.4g})")
    return out


def _as_kind(pieces: np.ndarray, found: bool, integer: bool) -> np.ndarray:
    """Pieces read as the declared kind: integer ranges as stretches [low, high + 1), or intervals as their integers."""
    low, high, weight = pieces.T
    if found == integer:
        return pieces
    if not integer:
        return np.column_stack([low, high + (high > low), weight])
    first, last = np.ceil(low), np.where(low == high, low, np.ceil(high) - 1)
    keep = (first <= last) & ((low != high) | (low == first))
    return np.column_stack([first, last, weight])[keep]

