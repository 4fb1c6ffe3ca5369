"""Files written whole or not at all, and names that never replace a file by accident.

Every file the tools write (checkpoints, metrics, records, pages, shipped policies) goes through
:func:`write_atomic`: the content goes to a temporary name in the same folder, is flushed to
disk, and is then renamed over the target in one step, so a process killed at any moment leaves
the old file or the new one, never a part of either. :func:`unused_path` picks a new name when
the one asked for is taken. :func:`lock_dir` keeps a second run out of a folder a run writes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _temporary(path: Path) -> Path:
    """A name beside ``path`` that no other writer uses (hidden, with this process's id)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a temporary file beside ``path``, then rename it to ``path``.

    If ``write`` raises (or the process dies) ``path`` is untouched and the temporary file is
    removed (or, after a kill, left under a hidden ``.NAME.PID.tmp`` name).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all."""
    return write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def copy_atomic(src: str | Path, dst: str | Path) -> Path:
    """Copy ``src`` to ``dst`` whole or not at all (``dst`` is the old file or the copy)."""
    data = Path(src).read_bytes()
    return write_bytes_atomic(dst, data)


def unused_path(path: str | Path) -> Path:
    """``path`` if nothing is there, else the first free ``STEM-2.SUFFIX``, ``STEM-3.SUFFIX``, ...

    Works for files and folders (a folder has no suffix): ``runs/A`` -> ``runs/A-2``,
    ``runs/v1.5`` -> ``runs/v1.5-2``. A file keeps its last suffix, as :mod:`pathlib` splits it:
    ``lr0.5.json`` -> ``lr0.5-2.json``.
    """
    path = Path(path)
    if not path.exists():
        return path
    suffix = "" if path.is_dir() else path.suffix
    stem = path.name[: len(path.name) - len(suffix)]
    n = 2
    while True:
        candidate = path.with_name(f"{stem}-{n}{suffix}")
        if not candidate.exists():
            return candidate
        n += 1


def append_text_atomic(path: str | Path, text: str) -> Path:
    """Append ``text`` (UTF-8) to ``path``, created if absent, whole or not at all.

    The old content and ``text`` are written under a temporary name and renamed over ``path``,
    so a kill leaves the file as it was or with ``text`` at its end, never a part of a line (an
    append in place can be cut mid-line). The cost is a rewrite of the file: meant for logs of
    a few megabytes, such as a run's ``metrics.jsonl``.
    """
    path = Path(path)
    old = path.read_bytes() if path.exists() else b""
    return write_bytes_atomic(path, old + text.encode("utf-8"))


def _previous(path: Path) -> Path:
    """Where :func:`write_dir_atomic` parks the folder it replaces (a fixed name, so that
    :func:`recover_dir` finds it after a kill)."""
    return path.with_name(f".{path.name}.old")


def recover_dir(path: str | Path) -> None:
    """Undo what a kill in the middle of :func:`write_dir_atomic` left: if ``path`` is missing
    and its parked previous copy is there, that copy goes back; a parked copy beside a complete
    ``path`` is removed. Only under the lock of ``path``'s folder (:func:`lock_dir`): where
    another process holds it, a run is writing there and the parked copy may be its swap in
    progress, so nothing is touched."""
    path = Path(path)
    old = _previous(path)
    if not old.exists():
        return
    try:
        lock = lock_dir(path.parent)
    except FolderBusy:
        return
    with lock:
        if not old.exists():
            return
        if path.exists():
            shutil.rmtree(old)
        else:
            os.replace(old, path)


def write_dir_atomic(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a new temporary folder beside ``path``, then put it at
    ``path`` in place of the folder there, if any.

    A folder cannot be renamed over a non-empty one, so the old folder is first renamed to a
    hidden ``.NAME.old`` and removed once the new one is in place; a kill between those two
    renames leaves no ``path``, and :func:`recover_dir` (called here first, and by the tools
    that read such folders) puts the old one back. If ``write`` raises, ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(path)
    tmp = _temporary(path)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        write(tmp)
        for file in (p for p in tmp.rglob("*") if p.is_file()):
            with open(file, "rb+") as f:
                os.fsync(f.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = _previous(path)
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


LOCK_NAME = ".run.lock"
"""The file in a run's folder that :func:`lock_dir` locks (empty; removed as the lock ends)."""


class FolderBusy(RuntimeError):
    """Another process holds the lock of a run's folder (:func:`lock_dir`)."""


class FolderLock:
    """The lock :func:`lock_dir` took: ``close()`` (or the end of a ``with`` block) removes its
    file and lets it go; so does the end of the process, leaving the file behind unlocked."""

    def __init__(self, path: Path, handle: IO[bytes], locked: bool):
        self.path, self._handle, self._locked = path, handle, locked

    def close(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        if self._locked:  # removed before letting go: no one takes a lock on a stale file
            try:
                self.path.unlink(missing_ok=True)
            finally:
                handle.close()
            return
        handle.close()  # Windows removes no open file
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # another run's open handle: it removes the file when it ends

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def lock_dir(path: str | Path) -> FolderLock:
    """Create the folder ``path`` and take its exclusive lock (``flock`` of its
    :data:`LOCK_NAME`), or raise :class:`FolderBusy` at once if another process holds it: two
    runs writing one folder would overwrite each other's checkpoints and lose rows of their
    metrics. The lock lasts until it is closed or the process ends (a killed run leaves no
    stale lock). Where the system has no ``flock`` (Windows) nothing is locked."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    lock_path = path / LOCK_NAME
    try:
        import fcntl
    except ImportError:
        return FolderLock(lock_path, open(lock_path, "ab"), locked=False)
    for _ in range(2):  # again once: the holder may have let go and removed it meanwhile
        handle = open(lock_path, "ab")  # held open: the lock is the handle's
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            break
        try:
            same = os.stat(lock_path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return FolderLock(lock_path, handle, locked=True)
        handle.close()  # locked a file its holder removed as it let go: take the new one
    raise FolderBusy(
        f"{str(path)!r} is being written by another run (it holds {LOCK_NAME}): wait for it to "
        "end, or use another folder"
    )
