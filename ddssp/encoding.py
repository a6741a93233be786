"""Numerical encodings of discrete attributes: one matrix ``A_j`` (p_j x m_j) per attribute.

A record's level ``l`` of attribute ``j`` is encoded as column ``A_j[:, l]`` (the image of its
one-hot vector), so the encoded row is the concatenation of those columns (Ferrando & Sheldon,
section 3.1). Everything here depends only on the public `Domain`, never on private rows:
one-hot blocks (first level dropped as reference, or all kept), numeric scalars (codes scaled
to [-1, 1], raw codes, or user-given values), the target (linear: numeric; logistic: -1/+1)
and an optional intercept column (the encoding of "no attribute", a constant 1).

Which features are numeric: an explicit ``categorical`` list names the one-hot ones (all others
numeric). Without one (None, the default), the domain's public order metadata decides
(`marginals.Domain.ordinal`; a spec declares its numeric columns ordered): ordinal attributes are
numeric, nominal ones one-hot. An ordinal attribute whose last levels are unordered extras (a
spec's ``<other>`` / ``<missing>`` after the bins) is "mixed": one numeric column for the ordered
levels (scaled over them alone; 0 at the extra levels) plus one indicator column per extra level,
so the extras neither sit at the top of the scale nor lose the bins' order. ``EncodingOptions(knots=K)``
adds K hinge columns to every numeric feature (a piecewise-linear function of its level,
`ddssp.ordinal`): a non-linear effect in a few columns instead of a one-hot block. A domain that says
nothing about order is one-hot everywhere, and `build_encoding` warns `EncodingDefaultWarning`.

The row-norm bounds of Prop. 3.1 follow from the matrices: ||x||^2 <= sum_j max_l ||A_j[:, l]||^2,
which is max|v_j|^2 for a scalar attribute, 1 for a one-hot block and 1 for the intercept.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from marginals import Dataset, Domain
from marginals.limits import check_cells

from .ordinal import ordinal_matrix, usable_knots

#: name of the intercept column in `Encoding.feature_names`.
INTERCEPT = "(intercept)"

#: categorical (one-hot) attributes of the bundled data sets; all other features are numeric.
CATEGORICAL_PRESETS: dict[str, tuple[str, ...]] = {
    "adult": ("workclass", "education", "marital-status", "occupation", "relationship", "race", "native-country"),
    "acs-income-lin": ("COW", "MAR", "RELP", "RAC1P"),
    "acs-employment": ("MAR", "RELP", "CIT", "MIL", "ANC", "RAC1P"),
}

TASKS = ("linear", "logistic")


class EncodingDefaultWarning(UserWarning):
    """``categorical=None`` on a domain that says nothing about which attributes are ordered: every
    feature is one-hot encoded (declare the ordinal attributes, or pass ``categorical=[...]``)."""


def categorical_preset(name: str) -> tuple[str, ...]:
    """The categorical attributes the paper one-hot encodes for a bundled data set."""
    try:
        return CATEGORICAL_PRESETS[name]
    except KeyError:
        raise ValueError(f"no categorical preset {name!r}; known: {sorted(CATEGORICAL_PRESETS)}") from None


@dataclass(frozen=True)
class EncodingOptions:
    """How attributes become numbers (hyperparameters, validated when an `Encoding` is built).

    Attributes:
        drop: "first" drops the first level of every one-hot block (the reference level, as in
            the paper); None keeps all levels.
        numeric: "scaled" maps codes to [-1, 1] (v_l = 2l/(m-1) - 1, a 1-level domain maps to 0);
            "raw" keeps the codes 0..m-1.
        values: user-given value per level for some numeric attributes (or the linear target),
            overriding ``numeric`` for them.
        intercept: add a constant-1 column (the paper has none).
        knots: hinge columns per numeric feature (0: none, one column each): a piecewise-linear
            function of the level with this many equally spaced interior knots (`ddssp.ordinal`; at
            most levels - 2; not for attributes given ``values`` nor for the target).
    """

    drop: str | None = "first"
    numeric: str = "scaled"
    values: Mapping[str, Sequence[float]] | None = None
    intercept: bool = False
    knots: int = 0


@dataclass(frozen=True, eq=False)
class AttributeEncoding:
    """One attribute's encoding: ``matrix`` (p_j x m_j) and the names of its p_j features."""

    attr: str
    kind: str  # "onehot", "numeric" or "mixed" (numeric over the ordered levels + hinges + extra-level indicators)
    matrix: np.ndarray
    names: tuple[str, ...]
    levels: tuple[int, ...] = ()  # the code each indicator feature stands for (the last len(levels) names)

    def labelled(self, labels: Sequence[str]) -> tuple[str, ...]:
        """The feature names with indicator levels named by ``labels[code]`` (``workclass=Private``, ``age=<missing>``)."""
        head = self.names[: len(self.names) - len(self.levels)]
        return head + tuple(f"{self.attr}={labels[level]}" for level in self.levels)

    @property
    def width(self) -> int:
        return self.matrix.shape[0]

    @property
    def max_sq_norm(self) -> float:
        """Largest squared norm of an encoded level (this block's share of the ||x||^2 bound)."""
        if self.matrix.size == 0:
            return 0.0
        return float(np.max(np.sum(self.matrix**2, axis=0)))


def scaled_values(levels: int) -> np.ndarray:
    """Codes 0..m-1 mapped linearly onto [-1, 1]; a single level maps to 0."""
    if levels == 1:
        return np.zeros(1)
    return 2.0 * np.arange(levels) / (levels - 1) - 1.0


def onehot_matrix(levels: int, drop_first: bool) -> np.ndarray:
    """The one-hot encoding matrix, optionally without the row of the first (reference) level."""
    eye = np.eye(levels)
    return eye[1:] if drop_first else eye


def _numeric_values(attr: str, levels: int, options: EncodingOptions) -> np.ndarray:
    if options.values is not None and attr in options.values:
        values = np.asarray(options.values[attr], dtype=np.float64)
        if values.shape != (levels,):
            raise ValueError(
                f"values for {attr!r}: expected {levels} numbers (one per level), got shape {values.shape}"
            )
        if not np.all(np.isfinite(values)):
            raise ValueError(f"values for {attr!r}: all values must be finite")
        return values
    if options.numeric == "scaled":
        return scaled_values(levels)
    return np.arange(levels, dtype=np.float64)


def _check_options(options: EncodingOptions, domain: Domain, categorical: set[str]) -> None:
    if options.drop not in ("first", None):
        raise ValueError(f"drop must be 'first' or None, got {options.drop!r}")
    if options.numeric not in ("scaled", "raw"):
        raise ValueError(f"numeric must be 'scaled' or 'raw', got {options.numeric!r}")
    if isinstance(options.knots, bool) or not isinstance(options.knots, (int, np.integer)) or options.knots < 0:
        raise ValueError(f"knots must be an integer >= 0, got {options.knots!r}")
    for attr in options.values or {}:
        if attr not in domain:
            raise ValueError(f"values given for {attr!r}, which is not in the domain {list(domain.attrs)}")
        if attr in categorical:
            raise ValueError(f"values given for {attr!r}, which is categorical (one-hot)")


@dataclass(frozen=True, eq=False)
class Encoding:
    """The full encoding of a table: features (in domain order), the target and an optional intercept.

    Columns of the encoded X are ``[intercept?] + features``; ``y`` is the encoded target.
    """

    domain: Domain
    target: str
    task: str
    features: tuple[AttributeEncoding, ...]
    target_encoding: AttributeEncoding
    intercept: bool
    feature_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        names = ((INTERCEPT,) if self.intercept else ()) + tuple(n for f in self.features for n in f.names)
        object.__setattr__(self, "feature_names", names)

    @property
    def n_features(self) -> int:
        """Number of encoded feature columns p (intercept included)."""
        return len(self.feature_names)

    @property
    def feature_attrs(self) -> tuple[str, ...]:
        """The attributes used as features (domain order, target excluded)."""
        return tuple(f.attr for f in self.features)

    def norm_bounds(self) -> tuple[float, float]:
        """(||X||, ||Y||): bounds on any encoded feature row's L2 norm and on |y| (Prop. 3.1)."""
        sq = math.fsum(f.max_sq_norm for f in self.features) + (1.0 if self.intercept else 0.0)
        return math.sqrt(sq), math.sqrt(self.target_encoding.max_sq_norm)

    def encode_features(self, df: pd.DataFrame) -> np.ndarray:
        """X (n x p): row i is the concatenation of A_j[:, code_ij]; extra columns are ignored."""
        codes = read_codes(df, self.domain, self.feature_attrs)
        blocks = [np.ones((len(df), 1))] if self.intercept else []
        blocks += [f.matrix.T[codes[f.attr]] for f in self.features]
        return np.hstack(blocks) if blocks else np.zeros((len(df), 0))

    def encode_target(self, df: pd.DataFrame) -> np.ndarray:
        """y (n,): the encoded target column."""
        codes = read_codes(df, self.domain, (self.target,))[self.target]
        return self.target_encoding.matrix[0, codes]

    def encode(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) of a table of integer codes."""
        return self.encode_features(df), self.encode_target(df)

    def decode_target(self, values: np.ndarray) -> np.ndarray:
        """Map encoded target values back to the continuous code scale (piecewise linear, extrapolated)."""
        levels = self.target_encoding.matrix[0]
        values = np.asarray(values, dtype=np.float64)
        if levels.size == 1:
            return np.zeros_like(values)
        codes = np.arange(levels.size, dtype=np.float64)
        if np.all(np.diff(levels) < 0):
            levels, codes = levels[::-1], codes[::-1]
        elif not np.all(np.diff(levels) > 0):
            raise ValueError(
                f"target {self.target!r}: its level values are not monotone in the code, so they cannot be inverted"
            )
        seg = np.clip(np.searchsorted(levels, values), 1, levels.size - 1)
        x0, x1, c0, c1 = levels[seg - 1], levels[seg], codes[seg - 1], codes[seg]
        return c0 + (values - x0) * (c1 - c0) / (x1 - x0)


def build_encoding(
    domain: Domain,
    target: str,
    task: str = "linear",
    categorical: Sequence[str] | None = None,
    options: EncodingOptions | None = None,
) -> Encoding:
    """Build the encoding of every non-target attribute of ``domain`` plus the target.

    ``categorical`` lists the one-hot attributes (all others numeric). None: the domain's order
    metadata decides (ordinal numeric, nominal one-hot; see the module docstring); a domain without
    it is one-hot everywhere and warns `EncodingDefaultWarning`.
    """
    options = EncodingOptions() if options is None else options
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a marginals.Domain, got {type(domain).__name__}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if target not in domain:
        raise ValueError(f"target {target!r} is not in the domain; attributes are {list(domain.attrs)}")
    feature_attrs = [a for a in domain.attrs if a != target]
    if categorical is None:
        cat = _default_onehot(domain, feature_attrs)
        ordered = dict(domain.ordinal or ())  # the numeric features' ordered levels (then extra levels)
    else:
        cat, ordered = _explicit_onehot(domain, target, categorical), {}
    _check_options(options, domain, cat)
    # several columns (hinges, extra-level indicators) for a numeric attribute without user values
    multi = {a: ordered.get(a, domain[a]) for a in feature_attrs if a not in cat and a not in (options.values or {})
             and (ordered.get(a, domain[a]) < domain[a] or usable_knots(ordered.get(a, domain[a]), options.knots))}
    check_fit_cells(domain, target, list(cat | set(multi)))  # an upper bound: those blocks counted as one-hot
    features = []
    for attr in feature_attrs:
        m = domain[attr]
        if attr in cat:
            drop = options.drop == "first"
            matrix = onehot_matrix(m, drop)
            levels = tuple(range(1 if drop else 0, m))
            names = tuple(f"{attr}={level}" for level in levels)
            features.append(AttributeEncoding(attr, "onehot", matrix, names, levels))
        elif attr in multi:
            features.append(mixed_encoding(attr, m, multi[attr], options))
        else:
            matrix = _numeric_values(attr, m, options)[None, :]
            features.append(AttributeEncoding(attr, "numeric", matrix, (attr,)))
    target_enc = _target_encoding(domain, target, task, options)
    if categorical is None and domain.ordinal is None and feature_attrs:
        _warn_all_onehot(domain, feature_attrs)
    return Encoding(domain, target, task, tuple(features), target_enc, bool(options.intercept))


def mixed_encoding(attr: str, levels: int, ordered: int, options: EncodingOptions) -> AttributeEncoding:
    """A numeric attribute in several columns (`ddssp.ordinal`): its value over the ordered codes
    ``0 .. ordered-1`` (``options.numeric``), ``options.knots`` hinges, and one indicator per extra
    unordered level (codes ``ordered .. levels-1``, 0 in the other rows). Scaled, every level's
    squared norm is at most 1 + knots (a one-hot block's is 1: its Prop. 3.1 share)."""
    matrix = ordinal_matrix(levels, ordered, options.knots, options.numeric == "raw")
    knots = usable_knots(ordered, options.knots)
    extra = tuple(range(ordered, levels))
    head = ((attr,) if ordered > 1 else ()) + tuple(f"{attr}>knot{k}" for k in range(1, knots + 1))
    return AttributeEncoding(attr, "mixed", matrix, head + tuple(f"{attr}={level}" for level in extra), extra)


def _explicit_onehot(domain: Domain, target: str, categorical: Sequence[str]) -> set[str]:
    """The one-hot features of an explicit ``categorical`` list, after checking its names."""
    if isinstance(categorical, str):
        raise TypeError("categorical must be a list of attribute names (use categorical_preset(name) for a preset)")
    unknown = [a for a in categorical if a not in domain]
    if unknown:
        raise ValueError(f"categorical attribute(s) {unknown} not in the domain; attributes are {list(domain.attrs)}")
    if target in categorical:
        raise ValueError(f"the target {target!r} cannot also be a categorical feature")
    return set(categorical)


def _default_onehot(domain: Domain, features: Sequence[str]) -> set[str]:
    """The one-hot features of ``categorical=None``: the domain's nominal ones; all of them when the
    domain says nothing about order."""
    if domain.ordinal is None:
        return set(features)
    ordinal = {a for a, _ in domain.ordinal}
    return {a for a in features if a not in ordinal}


def _warn_all_onehot(domain: Domain, features: Sequence[str]) -> None:
    """One `EncodingDefaultWarning` for a fit whose features are all one-hot for lack of order metadata."""
    warnings.warn(
        f"categorical=None and the domain says nothing about which attributes are ordered, so every feature is "
        f"one-hot encoded ({len(features)} attribute(s), {sum(domain[a] for a in features)} levels): ordered "
        "attributes (age bins, years, counts) fit better as numbers scaled to [-1, 1]. Declare them in the "
        "domain: Domain(..., ordinal=[...]) or domain.with_ordinal([...]); in domain.json, "
        '{"attributes": {"age": 10, ...}, "ordinal": ["age", ...]} (a spec declares its numeric columns '
        "ordered). Or give the one-hot attributes explicitly, categorical=[...] (all others numeric; "
        "dp-marginals fit --categorical or --preset)", EncodingDefaultWarning, stacklevel=3,
    )  # fmt: skip


def _target_encoding(domain: Domain, target: str, task: str, options: EncodingOptions) -> AttributeEncoding:
    m = domain[target]
    if task == "logistic":
        if m != 2:
            raise ValueError(
                f"logistic target {target!r} must have exactly 2 levels (codes 0/1), but the domain gives it {m}: "
                "recode it to two levels, or fit through a logistic estimator with the spec, which leaves out the "
                "rows of a spec's <other>/<missing> levels (ddssp.target_levels)"
            )
        if options.values is not None and target in options.values:
            raise ValueError(f"values cannot be given for the logistic target {target!r} (it is encoded -1/+1)")
        values = np.array([-1.0, 1.0])
    else:
        values = _numeric_values(target, m, options)
    matrix = values[None, :]
    matrix.flags.writeable = False
    return AttributeEncoding(target, "numeric", matrix, (target,))


def read_codes(df: pd.DataFrame, domain: Domain, attrs: Sequence[str]) -> dict[str, np.ndarray]:
    """The integer code arrays of ``attrs`` in ``df``, validated against ``domain`` by `marginals.Dataset`."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame of integer codes, got {type(df).__name__}")
    columns = {str(c): c for c in df.columns}
    missing = [a for a in attrs if a not in columns]
    if missing:
        raise ValueError(f"the table lacks the column(s) {missing} needed by the model")
    if not attrs:
        return {}
    table = Dataset(df[[columns[a] for a in attrs]].set_axis(list(attrs), axis=1), domain.project(attrs))
    return {a: table.column(a).astype(np.intp) for a in attrs}


def fit_cells(domain: Domain, target: str, categorical: Sequence[str] | None) -> int:
    """Cells a DD-SSP fit on ``domain`` allocates (an upper bound): every 1- and 2-way marginal,
    each one-hot block's identity matrix and the Gram matrix of the encoded columns (None: every
    feature counted as one-hot, the widest default)."""
    levels = {a: int(domain[a]) for a in domain.attrs}
    onehot = [a for a in levels if a != target and (categorical is None or a in categorical)]
    total = sum(levels.values())
    marginals = total + (total**2 - sum(m * m for m in levels.values())) // 2
    encoded = sum(levels[a] for a in onehot) + (len(levels) - len(onehot)) + 1  # + intercept
    return marginals + sum(levels[a] ** 2 for a in onehot) + encoded**2


def check_fit_cells(domain: Domain, target: str, categorical: Sequence[str] | None) -> None:
    """Refuse (`TooLargeError`, a ValueError) a domain whose fit would allocate too much, before allocating."""

    check_cells(fit_cells(domain, target, categorical), "a DD-SSP fit on this domain")
