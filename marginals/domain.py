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
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

#: most levels one attribute may have: a 1-way marginal of it is then at most 80 MB of float64.
#: A larger size is a mistake (e.g. an id column) and would only fail later in an allocation.
MAX_LEVELS = 10_000_000


#: largest JSON file (domain, spec, workload) read: these are small public descriptions.
MAX_JSON_BYTES = 64 * 2**20


class UnknownAttributeError(KeyError, ValueError):
    """A name that is not an attribute of the domain (bad input, not a programming error: it is
    a ValueError too, so callers that report bad input catch it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for json: refuse an object that repeats a key."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = sorted({k for k, _ in pairs if k in seen or seen.add(k)})
        raise ValueError(f"duplicate key(s) {dup}")
    return out


def read_json(path: str | os.PathLike, what: str = "JSON file") -> object:
    """Parse a small JSON file; every problem (binary content, invalid JSON, a repeated key)
    is a ValueError whose message names the file."""
    if os.path.getsize(path) > MAX_JSON_BYTES:
        raise ValueError(f"{path}: not a {what} (larger than {MAX_JSON_BYTES // 2**20} MiB)")
    data = Path(path).read_bytes()
    if b"\x00" in data:
        raise ValueError(f"{path}: not a {what} (binary content)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a {what} (not UTF-8 text)") from None
    if not text.strip():
        raise ValueError(f"{path}: empty file (expected a {what})")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path}: not a {what} (nested too deeply)") from None


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


def write_text_atomic(path: str | os.PathLike, text: str, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)


@functools.lru_cache(maxsize=1)
def _default_mode() -> int:
    """The permissions a plain ``open(path, "w")`` would give a new file (0666 minus the umask;
    read once, since reading the umask means setting it)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: permissions of files derived from private rows (e.g. coded data): owner read/write only.
PRIVATE_MODE = 0o600


def write_bytes_atomic(path: str | os.PathLike, payload: bytes, mode: int | None = None) -> None:
    """Write ``payload`` to ``path`` atomically: a crash leaves the old file or the new one.
    The file gets ``mode`` (default: the usual 0666 minus the umask; `PRIVATE_MODE` for files
    derived from private rows)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode() if mode is None else mode)  # mkstemp makes 0600 files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class AtomicOutputs:
    """Several output files written all-or-nothing.

    Inside ``with AtomicOutputs() as out:`` write each file to ``out.stage(final_path)`` (a
    temporary name next to it); when the block ends without an error every staged file is
    renamed into place, and if any rename fails the ones already renamed are rolled back (old
    contents restored). On any error nothing is left behind: staged files are deleted and
    folders created for them are removed again.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> with AtomicOutputs() as out:
        ...     write_text_atomic(out.stage(folder / "a.txt"), "a")
        ...     write_text_atomic(out.stage(folder / "b.txt"), "b")
        >>> sorted(p.name for p in folder.iterdir())
        ['a.txt', 'b.txt']
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)
        self._made_dirs: list[Path] = []

    def stage(self, path: str | os.PathLike) -> Path:
        """A temporary path (same folder, hidden name) to write ``path``'s content to."""
        final = Path(path)
        if any(os.path.abspath(f) == os.path.abspath(final) for _, f in self._staged):
            raise ValueError(f"{final}: given twice as an output")
        self._make_dirs(final.parent)
        if final.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(final))
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
        os.close(fd)
        self._staged.append((Path(tmp), final))
        return Path(tmp)

    def _make_dirs(self, folder: Path) -> None:
        missing = []
        while not folder.exists():
            missing.append(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
        for d in reversed(missing):
            d.mkdir()
            self._made_dirs.append(d)

    def __enter__(self) -> "AtomicOutputs":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self._commit()
                return
            except BaseException:
                self._discard()
                raise
        self._discard()

    def _commit(self) -> None:
        done: list[tuple[Path, Path | None]] = []  # (final, backup of the old file or None)
        try:
            for tmp, final in self._staged:
                backup = None
                if final.exists():
                    backup = final.with_name(f".{final.name}.{os.getpid()}.old")
                    try:
                        os.link(final, backup)  # the old file stays in place until the rename
                    except OSError:  # a file system without hard links
                        shutil.copy2(final, backup)
                done.append((final, backup))
                os.replace(tmp, final)
        except BaseException:
            for final, backup in reversed(done):
                try:
                    if backup is not None:
                        os.replace(backup, final)
                    elif final.exists():
                        os.unlink(final)
                except OSError:
                    pass
            raise
        for _, backup in done:
            if backup is not None:
                try:
                    os.unlink(backup)
                except OSError:
                    pass
        self._staged = []
        self._made_dirs = []

    def _discard(self) -> None:
        for tmp, _ in self._staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        for d in reversed(self._made_dirs):
            try:
                d.rmdir()
            except OSError:
                pass
        self._staged = []
        self._made_dirs = []
