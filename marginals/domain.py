"""The public schema of a discrete table: ordered attributes and their number of levels.

A `Domain` is public information: it must never be derived from private rows. Every
attribute takes integer codes ``0 .. m-1``. The domain order is the canonical column order
used everywhere (datasets, synthetic tables, releases).
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence


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
        shape = tuple(int(m) for m in self.shape)
        if len(attrs) != len(shape):
            raise ValueError(f"Domain: {len(attrs)} attributes but {len(shape)} sizes")
        if len(set(attrs)) != len(attrs):
            dup = sorted({a for a in attrs if attrs.count(a) > 1})
            raise ValueError(f"Domain: duplicate attribute names {dup}")
        for a, m in zip(attrs, shape):
            if not isinstance(a, str) or not a:
                raise ValueError(f"Domain: attribute names must be non-empty strings, got {a!r}")
            if m < 1:
                raise ValueError(f"Domain: attribute {a!r} must have at least 1 level, got {m}")
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "shape", shape)

    @classmethod
    def from_dict(cls, sizes: Mapping[str, int]) -> "Domain":
        """Build a domain from an ordered mapping attribute -> number of levels."""
        return cls(tuple(sizes.keys()), tuple(int(v) for v in sizes.values()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Domain":
        """Read a ``domain.json`` file (a JSON object attribute -> number of levels, in order)."""
        with open(path, encoding="utf-8") as fh:
            try:
                raw = json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: a domain file must hold a JSON object, got {type(raw).__name__}")
        for a, m in raw.items():
            if isinstance(m, bool) or not isinstance(m, int):
                raise ValueError(f"{path}: attribute {a!r} has a non-integer size {m!r}")
        return cls.from_dict(raw)

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
            raise KeyError(f"unknown attribute {attr!r}; the domain has {list(self.attrs)}") from None

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


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    write_bytes_atomic(path, text.encode("utf-8"))


@functools.lru_cache(maxsize=1)
def _default_mode() -> int:
    """The permissions a plain ``open(path, "w")`` would give a new file (0666 minus the umask;
    read once, since reading the umask means setting it)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_bytes_atomic(path: str | os.PathLike, payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically: a crash leaves the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
