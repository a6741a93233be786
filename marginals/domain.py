"""The public schema of a discrete table: ordered attributes and their number of levels.

A `Domain` is public information: it must never be derived from private rows. Every
attribute takes integer codes ``0 .. m-1``. The domain order is the canonical column order
used everywhere (datasets, synthetic tables, releases).

A domain may also say which attributes are *ordinal* (their codes are ordered, like age bins or
years of schooling; the others are nominal), public metadata that encodings use to scale ordered
attributes as numbers instead of one-hot blocks (`ddssp.encoding`). ``ordinal`` maps each ordered
attribute to its number of ordered levels ``k``: codes ``0 .. k-1`` are ordered, codes ``k .. m-1``
are extra unordered levels (a spec's ``<other>`` / ``<missing>``). None (the default) means nothing
is known about order; a declaration (possibly empty) covers every attribute. It does not take part
in equality or hashing: two domains with the same attributes and levels are equal whatever they say
about order. In ``domain.json`` it is the optional extended form
``{"attributes": {"age": 32, "sex": 2, ...}, "ordinal": ["age"]}`` (or ``"ordinal": {"age": 30}``
for ordered levels followed by extra ones); the plain ``{"age": 32, "sex": 2}`` stays valid.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .files import read_json, write_text_atomic

#: most levels one attribute may have: a 1-way marginal of it is then at most 80 MB of float64.
#: A larger size is a mistake (e.g. an id column) and would only fail later in an allocation.
MAX_LEVELS = 10_000_000
#: the keys of the extended ``domain.json`` form (see the module docstring).
EXTENDED_KEYS = ("attributes", "ordinal")


class UnknownAttributeError(KeyError, ValueError):
    """A name that is not an attribute of the domain (bad input, not a programming error: it is
    a ValueError too, so callers that report bad input catch it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Domain:
    """Ordered attributes with their number of levels.

    ``ordinal`` (public metadata, not compared): None when nothing is known about order, else the
    ordered attributes, given as names (every level ordered) or a mapping name -> number of ordered
    leading levels, stored as ``((name, k), ...)`` in domain order (see the module docstring).

    Example:
        >>> d = Domain(("a", "b", "c"), (2, 3, 4), ordinal=["c"])
        >>> d.size(("a", "c"))
        8
        >>> d.project(("c", "a")).attrs, d.ordered_levels("c"), d.ordered_levels("a")
        (('c', 'a'), 4, None)
    """

    attrs: tuple[str, ...]
    shape: tuple[int, ...]
    ordinal: tuple[tuple[str, int], ...] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        attrs = tuple(self.attrs)
        shape = tuple(_levels(a, m) for a, m in zip(attrs, self.shape))
        if len(attrs) != len(tuple(self.shape)):
            raise ValueError(f"Domain: {len(attrs)} attributes but {len(shape)} sizes")
        if len(set(attrs)) != len(attrs):
            dup = sorted({a for a in attrs if attrs.count(a) > 1})
            raise ValueError(f"Domain: duplicate attribute names {dup}")
        for a in attrs:
            if not isinstance(a, str) or not a:
                raise ValueError(f"Domain: attribute names must be non-empty strings, got {a!r}")
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "shape", shape)
        # lookups every hot path makes (not fields: equality, hash and repr ignore them)
        object.__setattr__(self, "_position", {a: i for i, a in enumerate(attrs)})
        object.__setattr__(self, "_projections", {})
        object.__setattr__(self, "_checked", {})  # attribute tuple -> its cell count, once checked
        if self.ordinal is not None:
            object.__setattr__(self, "ordinal", _ordinal(self.ordinal, dict(zip(attrs, shape))))

    def __getstate__(self) -> dict:
        return {"attrs": self.attrs, "shape": self.shape, "ordinal": self.ordinal}  # the fields, not the caches

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_position", {a: i for i, a in enumerate(self.attrs)})
        object.__setattr__(self, "_projections", {})
        object.__setattr__(self, "_checked", {})

    @classmethod
    def from_dict(cls, sizes: Mapping[str, int], ordinal: Any = None) -> "Domain":
        """Build a domain from an ordered mapping attribute -> number of levels (and its ``ordinal``
        metadata: None, a list of names or a mapping name -> number of ordered levels)."""
        if not isinstance(sizes, Mapping):
            raise ValueError(f"a domain is a mapping attribute -> number of levels, got {type(sizes).__name__}")
        for a, m in sizes.items():
            if isinstance(m, (bool, float, str)) or not isinstance(m, (int, np.integer)):
                raise ValueError(f"attribute {a!r} has a non-integer size {m!r} (the number of levels must be a positive integer)")
        return cls(tuple(sizes.keys()), tuple(sizes.values()), ordinal)

    @classmethod
    def from_json(cls, raw: Any) -> "Domain":
        """Build a domain from the content of a ``domain.json`` file: the plain form (an object
        attribute -> number of levels) or the extended form ``{"attributes": {...}, "ordinal": [...]}``."""
        if not isinstance(raw, dict):
            raise ValueError(f"a domain file must hold a JSON object, got {type(raw).__name__}")
        if not isinstance(raw.get("attributes"), dict):  # a plain file's sizes are integers, never objects
            return cls.from_dict(raw)
        unknown = sorted(set(raw) - set(EXTENDED_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown} in the extended domain form; allowed: {list(EXTENDED_KEYS)}")
        return cls.from_dict(raw["attributes"], raw.get("ordinal"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Domain":
        """Read a ``domain.json`` file (a JSON object attribute -> number of levels, in order, or the
        extended form with ``"ordinal"``: see the module docstring). Sizes must be JSON integers (not
        ``1.5``, ``"3"`` or ``true``); a repeated key is refused."""
        raw = read_json(path, "domain file")
        try:
            return cls.from_json(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the domain as ``domain.json`` (atomic: a temporary file is renamed into place); the
        plain form when nothing is known about order, the extended form otherwise."""
        write_text_atomic(path, json.dumps(self.to_json()))

    def to_json(self) -> dict[str, Any]:
        """The content of ``domain.json``: `to_dict` when ``ordinal`` is None, else the extended form."""
        if self.ordinal is None:
            return self.to_dict()
        return {"attributes": self.to_dict(), "ordinal": self.ordinal_json()}

    def ordinal_json(self) -> list[str] | dict[str, int] | None:
        """``ordinal`` as JSON: a list of names when every level of each is ordered, else a mapping
        name -> number of ordered levels (None when nothing is known)."""
        if self.ordinal is None:
            return None
        if all(k == self[a] for a, k in self.ordinal):
            return [a for a, _ in self.ordinal]
        return dict(self.ordinal)

    def to_dict(self) -> dict[str, int]:
        """Ordered mapping attribute -> number of levels."""
        return dict(zip(self.attrs, self.shape))

    def ordered_levels(self, attr: str) -> int | None:
        """How many leading levels of ``attr`` are ordered (None: nominal, or order unknown)."""
        self[attr]  # an unknown name is an error
        return None if self.ordinal is None else dict(self.ordinal).get(attr)

    def with_ordinal(self, ordinal: Any) -> "Domain":
        """This domain with other ``ordinal`` metadata (None: unknown; names; or name -> ordered levels)."""
        return Domain(self.attrs, self.shape, ordinal)

    def __len__(self) -> int:
        return len(self.attrs)

    def __iter__(self) -> Iterator[str]:
        return iter(self.attrs)

    def __contains__(self, attr: object) -> bool:
        try:
            return attr in self._position
        except TypeError:  # unhashable: never an attribute name
            return False

    def __getitem__(self, attr: str) -> int:
        """Number of levels of one attribute."""
        try:
            return self.shape[self._position[attr]]
        except (KeyError, TypeError):
            raise UnknownAttributeError(f"unknown attribute {attr!r}; the domain has {list(self.attrs)}") from None

    def check(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """Return ``attrs`` as a tuple after checking that every name is known and none repeats."""
        attrs = tuple(attrs)
        try:
            if attrs in self._checked:  # the hot paths ask about the same cliques again and again
                return attrs
        except TypeError:  # an unhashable name: reported below
            pass
        unknown = [a for a in attrs if a not in self]
        if unknown:
            raise ValueError(f"unknown attribute(s) {unknown}; the domain has {list(self.attrs)}")
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"repeated attribute in {attrs}")
        if len(self._checked) >= 1 << 16:
            self._checked.clear()
        self._checked[attrs] = math.prod(self.shape[self._position[a]] for a in attrs)
        return attrs

    def project(self, attrs: Sequence[str]) -> "Domain":
        """The sub-domain over ``attrs``, in the order given (made once per attribute tuple)."""
        attrs = self.check(attrs)
        found = self._projections.get(attrs)
        if found is None:
            kept = None if self.ordinal is None else {a: k for a, k in self.ordinal if a in attrs}
            if len(self._projections) >= 4096:
                self._projections.clear()
            found = self._projections[attrs] = Domain(attrs, tuple(self[a] for a in attrs), kept)
        return found

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` reordered into domain order."""
        return tuple(sorted(self.check(attrs), key=self._position.__getitem__))

    def size(self, attrs: Sequence[str] | None = None) -> int:
        """Number of cells of the marginal over ``attrs`` (all attributes when None)."""
        if attrs is None:
            return math.prod(self.shape)
        attrs = self.check(attrs)
        found = self._checked.get(attrs)
        return math.prod(self[a] for a in attrs) if found is None else found

    def axes(self, attrs: Sequence[str]) -> tuple[int, ...]:
        """Positions of ``attrs`` in the domain order."""
        return tuple(self._position[a] for a in self.check(attrs))

    def marginalize(self, attrs: Iterable[str]) -> "Domain":
        """The domain without ``attrs``."""
        drop = set(self.check(attrs))
        return self.project([a for a in self.attrs if a not in drop])

    def merge(self, other: "Domain") -> "Domain":
        """This domain followed by the attributes of ``other`` that it lacks (``ordinal`` known only
        when both know it; this domain's declaration first)."""
        extra = [a for a in other.attrs if a not in self.attrs]
        for a in other.attrs:
            if a in self.attrs and self[a] != other[a]:
                raise ValueError(f"cannot merge domains: {a!r} has {self[a]} vs {other[a]} levels")
        ordinal = None
        if self.ordinal is not None and other.ordinal is not None:
            ordinal = {**dict(other.ordinal), **dict(self.ordinal)}
        return Domain(self.attrs + tuple(extra), self.shape + tuple(other[a] for a in extra), ordinal)

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {m}" for a, m in zip(self.attrs, self.shape))
        return f"Domain({inner})"


def code_dtype(levels: int) -> np.dtype:
    """The smallest unsigned integer dtype that holds the codes 0 .. levels-1."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if levels - 1 <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def _ordinal(raw: Any, sizes: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
    """``ordinal`` metadata normalised to ``((name, ordered levels), ...)`` in domain order, checked
    against ``sizes`` (ValueError naming the attribute)."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise ValueError("Domain: ordinal must be a list of attribute names or a mapping attribute -> number of "
                         f"ordered levels, got {type(raw).__name__} {raw!r:.60}")
    else:
        # names (every level ordered), or (name, k) pairs: the stored form
        pairs = [tuple(a) if isinstance(a, (tuple, list)) and len(a) == 2 else (a, None) for a in raw]
    seen: dict[str, int] = {}
    for a, k in pairs:
        if not isinstance(a, str) or a not in sizes:
            raise ValueError(f"Domain: ordinal attribute {a!r} is not in the domain; attributes are {list(sizes)}")
        if a in seen:
            raise ValueError(f"Domain: ordinal attribute {a!r} is listed twice")
        k = sizes[a] if k is None else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= sizes[a]:
            raise ValueError(f"Domain: ordinal attribute {a!r}: its number of ordered levels must be an integer "
                             f"from 1 to its {sizes[a]} levels, got {k!r}")
        seen[a] = int(k)
    return tuple((a, seen[a]) for a in sizes if a in seen)


def _levels(attr: object, m: object) -> int:
    """The number of levels of ``attr`` as an int: a positive integer up to `MAX_LEVELS`."""
    if isinstance(m, (bool, str, bytes)) or (isinstance(m, float) and not m.is_integer()):
        raise ValueError(f"Domain: attribute {attr!r}: the number of levels must be a positive integer, got {m!r}")
    try:
        levels = int(m)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"Domain: attribute {attr!r}: the number of levels must be a positive integer, got {m!r}") from None
    if levels < 1:
        raise ValueError(f"Domain: attribute {attr!r} must have at least 1 level, got {levels}")
    if levels > MAX_LEVELS:
        raise ValueError(f"Domain: attribute {attr!r} has {levels} levels, more than the {MAX_LEVELS:,} allowed "
                         "(a marginal over it could not be allocated)")
    return levels
