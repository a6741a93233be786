"""Files, written and read safely: atomic writes (one file, or several all-or-nothing) with the
permissions of files derived from private rows, and small JSON descriptions read strictly."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

#: largest JSON file (domain, spec, workload) read: these are small public descriptions.
MAX_JSON_BYTES = 64 * 2**20


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
