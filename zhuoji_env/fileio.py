"""Files written whole or not at all, never through a link someone else planted, and names that
never replace a file by accident.

Every file the tools write (checkpoints, metrics, records, pages, shipped policies) goes through
:func:`write_atomic`: the content goes to a new temporary file in the same folder, is flushed to
disk, and is then renamed over the target in one step, so a process killed at any moment leaves
the old file or the new one, never a part of either. The temporary file is created exclusively
under a name no one can guess (:func:`tempfile.mkstemp`), so a link planted in a shared folder
is never written through, and a rename replaces a link at the target itself, not the file it
points to. :func:`unused_path` picks a new name when the one asked for is taken. :func:`lock_dir`
keeps a second run out of a folder a run writes, says who holds it, and removes what killed
writers left there.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # Windows has neither, nor symbolic links by default
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted under a lock's name does not hang open

TEMPORARY = re.compile(r"\.(?P<name>.+?)\.(?P<pid>\d+)(?:\.[a-z0-9_]{8})?\.tmp")
"""The hidden name of a temporary file or folder of :func:`write_atomic` and
:func:`write_dir_atomic`: ``.NAME.PID.RANDOM.tmp`` (``.NAME.PID.tmp`` before the random part was
added); :func:`remove_leftovers` reads the writer's process id from it."""


def _new_temporary(path: Path, folder: bool = False) -> Path:
    """A new, empty temporary file (or folder) beside ``path``, created exclusively under a
    hidden name with this process's id and a random part: a link someone planted under any
    name is never opened."""
    prefix = f".{path.name}.{os.getpid()}."
    if folder:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=path.parent))
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(name)


def _same_file(tmp: Path, made: os.stat_result) -> int:
    """An open descriptor of ``tmp``, opened without following a link, if it is still the
    regular file :func:`_new_temporary` made (``made``); else ``OSError``: someone replaced it
    while it was written, and it is not renamed into place."""
    fd = os.open(tmp, os.O_RDONLY | NOFOLLOW | CLOEXEC)
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (made.st_dev, made.st_ino):
        os.close(fd)
        raise OSError(
            errno.EEXIST,
            f"{tmp} was replaced by another file while it was being written (someone else "
            "writes in this folder); nothing was renamed into place",
        )
    return fd


def write_atomic(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a new temporary file beside ``path``, then rename it to
    ``path`` (a link at ``path`` is replaced, never written through).

    ``write`` writes into the file ``tmp`` names (it must not replace it). If ``write`` raises
    (or the process dies) ``path`` is untouched and the temporary file is removed (or, after a
    kill, left under its hidden ``.NAME.PID.RANDOM.tmp`` name until :func:`lock_dir` of the
    folder removes it).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_temporary(path)
    try:
        made = os.lstat(tmp)
        write(tmp)
        fd = _same_file(tmp, made)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
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


def open_for_writing(path: str | Path, mode: str = "w"):
    """``open(path, mode)`` for a log written as it goes (``"w"`` or ``"wb"``), refusing a
    symbolic link or a file with other hard links at ``path`` (``OSError`` naming it) instead
    of writing into the file it points to."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | NOFOLLOW | CLOEXEC | NONBLOCK, 0o644)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_nlink != 1:
            raise OSError(
                errno.EPERM,
                f"{path} is not a plain file of its own (a device, a pipe or a hard link to "
                "another file): it is not written into; remove it or use another folder",
            )
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        return open(fd, mode, encoding=None if "b" in mode else "utf-8", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _previous(path: Path) -> Path:
    """Where :func:`write_dir_atomic` parks the folder it replaces (a fixed name, so that
    :func:`recover_dir` finds it after a kill)."""
    return path.with_name(f".{path.name}.old")


def _is_real_dir(path: Path) -> bool:
    """``path`` is a folder itself, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def recover_dir(path: str | Path) -> None:
    """Undo what a kill in the middle of :func:`write_dir_atomic` left: if ``path`` is missing
    and its parked previous copy is there, that copy goes back; a parked copy beside a complete
    ``path`` is removed, and so is anything but a folder (a link) under the parked name. Only
    under the lock of ``path``'s folder (:func:`lock_dir`): where another process holds it, a
    run is writing there and the parked copy may be its swap in progress, so nothing is
    touched."""
    path = Path(path)
    old = _previous(path)
    if not os.path.lexists(old):
        return
    try:
        lock = lock_dir(path.parent)
    except FolderBusy:
        return
    with lock:
        if not os.path.lexists(old):
            return
        if not _is_real_dir(old):
            old.unlink()
        elif os.path.lexists(path):
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
    tmp = _new_temporary(path, folder=True)
    try:
        write(tmp)
        for file in (p for p in tmp.rglob("*") if p.is_file() and not p.is_symlink()):
            fd = os.open(file, os.O_RDONLY | NOFOLLOW | CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = _previous(path)
    try:
        if _is_real_dir(path):
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:  # stopped between the renames: recover_dir puts the old one back
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return path


LOCK_NAME = ".run.lock"
"""The file in a run's folder that :func:`lock_dir` locks (it says who holds the lock; removed
as the lock ends)."""


class FolderBusy(RuntimeError):
    """Another process holds the lock of a run's folder (:func:`lock_dir`), or its lock file
    cannot be used."""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` may still be running (another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def remove_leftovers(folder: str | Path) -> list[str]:
    """Remove the temporary files and folders (:data:`TEMPORARY`) that writers killed
    part-way left in ``folder``, those whose process has ended; returns their names. Called
    by :func:`lock_dir` as it takes a folder's lock, so that they do not pile up run after run;
    a link under such a name is removed, never followed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        found = TEMPORARY.fullmatch(entry.name)
        if not found or _alive(int(found["pid"])):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError:  # another user's: theirs to remove
            continue
        removed.append(entry.name)
    return removed


def _printable(value, limit: int = 160) -> str:
    """``value`` as text fit for a terminal line: control characters dropped, cut at
    ``limit`` characters (a lock file is written by whoever could write the folder)."""
    text = "".join(c for c in str(value) if c.isprintable())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _holder(fd: int) -> str:
    """Who holds a lock, as its holder wrote it into the lock file (:func:`_describe_holder`)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode("utf-8"))
        return (
            f"process {_printable(info['pid'], 12)} on {_printable(info['host'], 64)} since "
            f"{_printable(info['since'], 32)}: {_printable(info['command'])}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that did not say who it is"


def _describe_holder() -> bytes:
    """What :func:`lock_dir` writes into its lock file: this process, its machine, when and
    the command it runs."""
    return json.dumps(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
        }
    ).encode("utf-8")


class FolderLock:
    """The lock :func:`lock_dir` took: ``close()`` (or the end of a ``with`` block) removes its
    file and lets it go; so does the end of the process, leaving the file behind unlocked."""

    def __init__(self, path: Path, fd: int | None, locked: bool):
        self.path, self._fd, self._locked = path, fd, locked

    def close(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if not self._locked:  # unlocked (Windows): closed first, as Windows removes no open file
            os.close(fd)
            try:
                self.path.unlink(missing_ok=True)
            except OSError:
                pass  # another run's open handle, or another user's file: theirs to remove
            return
        try:  # removed before letting go (no one takes a lock on a stale file), if still ours
            if _same_inode(self.path, fd):
                self.path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _same_inode(path: Path, fd: int) -> bool:
    """Whether ``path`` (not followed) is the file open as ``fd``."""
    try:
        here, held = os.lstat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def _open_lock(lock_path: Path) -> tuple[int, bool]:
    """The lock file, created exclusively (``True``) or the one there, opened read-only
    without following a link (``False``); ``FolderBusy`` when what is there is not a plain
    file (a link, a pipe) and cannot be removed."""
    try:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
        return os.open(lock_path, flags, 0o644), True
    except FileExistsError:
        pass
    try:
        fd = os.open(lock_path, os.O_RDONLY | NOFOLLOW | CLOEXEC | NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK):  # a symbolic link (FreeBSD: EMLINK)
            raise
        return -1, False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return -1, False
    return fd, False


def lock_dir(path: str | Path) -> FolderLock:
    """Create the folder ``path`` and take its exclusive lock (``flock`` of its
    :data:`LOCK_NAME`), or raise :class:`FolderBusy` at once, naming the process that holds it:
    two runs writing one folder would overwrite each other's checkpoints and lose rows of their
    metrics. The lock file is created exclusively and never opened through a link (a link or
    other non-file under its name is removed); a stale one a killed run left is replaced. The
    lock lasts until it is closed or the process ends (a killed run leaves no stale lock).
    Taking it removes the temporary files of writers killed there (:func:`remove_leftovers`).
    Where the system has no ``flock`` (Windows) nothing is locked."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    lock_path = path / LOCK_NAME
    try:
        import fcntl
    except ImportError:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        return FolderLock(lock_path, fd, locked=False)
    for _ in range(4):  # again: the holder may have let go and removed it meanwhile
        fd, created = _open_lock(lock_path)
        if fd < 0:  # a link or a pipe under the lock's name: removed, never followed
            try:
                os.unlink(lock_path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise FolderBusy(
                    f"{str(lock_path)!r} is not a lock file (a link or other non-file that "
                    f"cannot be removed: {exc.strerror}); use another folder"
                ) from None
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if created:  # taken for a stale file by a process that replaces it: look again
                os.close(fd)
                continue
            holder = _holder(fd)
            os.close(fd)
            raise FolderBusy(
                f"{str(path)!r} is being written by another run ({holder}; it holds "
                f"{LOCK_NAME}): wait for it to end, or use another folder"
            ) from None
        if not _same_inode(lock_path, fd):  # locked a file its holder removed as it let go
            os.close(fd)
            continue
        if not created:  # a stale lock file a killed run left: replaced by one of our own
            try:
                os.unlink(lock_path)
            except OSError:  # another user's, in a folder that keeps it theirs: held as it is
                remove_leftovers(path)
                return FolderLock(lock_path, fd, locked=True)
            os.close(fd)
            continue
        os.write(fd, _describe_holder())
        remove_leftovers(path)
        return FolderLock(lock_path, fd, locked=True)
    raise FolderBusy(
        f"{str(path)!r}: could not take the lock {LOCK_NAME} (other processes kept replacing "
        "it); try again, or use another folder"
    )
