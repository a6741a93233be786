"""The public schema of a discrete table: ordered attributes and their number of levels.

A `Domain` is public information: it must never be derived from private rows. Every
attribute takes integer codes ``0 .. m-1``. The domain order is the canonical column order
used everywhere (datasets, synthetic tables, releases).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from .files import read_json, write_text_atomic

#: most levels one attribute may have: a 1-way marginal of it is then at most 80 MB of float64.
#: A larger size is a mistake (e.g. an id column) and would only fail later in an allocation.
MAX_LEVELS = 10_000_000


class UnknownAttributeError(KeyError, ValueError):
    """A name that is not an attribute of the domain (bad input, not a programming error: it is
    a ValueError too, so callers that report bad input catch it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Domain:
    """Ordered attributes with their number of levels.

    Example:
        >>> d = Domain(("a", "b", "c"), (2, 3, 4))
        >>> d.size(("a", "c"))
        8
        >>> d.project(("c", "a")).attrs
        ('c', 'a')
    """

    attrs: tuple[str, ...]
    shape: tuple[int, ...]

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

    @classmethod
    def from_dict(cls, sizes: Mapping[str, int]) -> "Domain":
        """Build a domain from an ordered mapping attribute -> number of levels."""
        if not isinstance(sizes, Mapping):
            raise ValueError(f"a domain is a mapping attribute -> number of levels, got {type(sizes).__name__}")
        for a, m in sizes.items():
            if isinstance(m, (bool, float, str)) or not isinstance(m, (int, np.integer)):
                raise ValueError(f"attribute {a!r} has a non-integer size {m!r} (the number of levels must be a positive integer)")
        return cls(tuple(sizes.keys()), tuple(sizes.values()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Domain":
        """Read a ``domain.json`` file (a JSON object attribute -> number of levels, in order).
        Sizes must be JSON integers (not ``1.5``, ``"3"`` or ``true``); a repeated key is refused."""
        raw = read_json(path, "domain file")
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: a domain file must hold a JSON object, got {type(raw).__name__}")
        try:
            return cls.from_dict(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the domain as ``domain.json`` (atomic: a temporary file is renamed into place)."""
        write_text_atomic(path, json.dumps(self.to_dict()))

    def to_dict(self) -> dict[str, int]:
        """Ordered mapping attribute -> number of levels."""
        return dict(zip(self.attrs, self.shape))

    def __len__(self) -> int:
        return len(self.attrs)

    def __iter__(self) -> Iterator[str]:
        return iter(self.attrs)

    def __contains__(self, attr: object) -> bool:
        return attr in self.attrs

    def __getitem__(self, attr: str) -> int:
        """Number of levels of one attribute."""
        try:
            return self.shape[self.attrs.index(attr)]
        except ValueError:
            raise UnknownAttributeError(f"unknown attribute {attr!r}; the domain has {list(self.attrs)}") from None

    def check(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """Return ``attrs`` as a tuple after checking that every name is known and none repeats."""
        attrs = tuple(attrs)
        unknown = [a for a in attrs if a not in self.attrs]
        if unknown:
            raise ValueError(f"unknown attribute(s) {unknown}; the domain has {list(self.attrs)}")
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"repeated attribute in {attrs}")
        return attrs

    def project(self, attrs: Sequence[str]) -> "Domain":
        """The sub-domain over ``attrs``, in the order given."""
        attrs = self.check(attrs)
        return Domain(attrs, tuple(self[a] for a in attrs))

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` reordered into domain order."""
        wanted = set(self.check(attrs))
        return tuple(a for a in self.attrs if a in wanted)

    def size(self, attrs: Sequence[str] | None = None) -> int:
        """Number of cells of the marginal over ``attrs`` (all attributes when None)."""
        if attrs is None:
            return math.prod(self.shape)
        return math.prod(self[a] for a in self.check(attrs))

    def axes(self, attrs: Sequence[str]) -> tuple[int, ...]:
        """Positions of ``attrs`` in the domain order."""
        return tuple(self.attrs.index(a) for a in self.check(attrs))

    def marginalize(self, attrs: Iterable[str]) -> "Domain":
        """The domain without ``attrs``."""
        drop = set(self.check(attrs))
        return self.project([a for a in self.attrs if a not in drop])

    def merge(self, other: "Domain") -> "Domain":
        """This domain followed by the attributes of ``other`` that it lacks."""
        extra = [a for a in other.attrs if a not in self.attrs]
        for a in other.attrs:
            if a in self.attrs and self[a] != other[a]:
                raise ValueError(f"cannot merge domains: {a!r} has {self[a]} vs {other[a]} levels")
        return Domain(self.attrs + tuple(extra), self.shape + tuple(other[a] for a in extra))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {m}" for a, m in zip(self.attrs, self.shape))
        return f"Domain({inner})"


def code_dtype(levels: int) -> np.dtype:
    """The smallest unsigned integer dtype that holds the codes 0 .. levels-1."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if levels - 1 <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


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
