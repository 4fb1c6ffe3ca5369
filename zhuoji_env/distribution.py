"""Whether the installed ``agents`` and ``training`` packages are zhuoji-env's own, whole.

zhuoji-env installs three top-level packages: ``zhuoji_env``, ``agents`` and ``training``.
Other distributions install packages of the same two generic names (OpenAI's Agents SDK,
``openai-agents``, imports as ``agents``). Python has one ``agents`` per environment, and pip
lets the second distribution installed write its files over the first's, so the two cannot
share an environment: whichever was installed last owns ``agents/__init__.py``, the other's
imports fail or run a mixture, and uninstalling either deletes files the other needs.

zhuoji-env does not run in such a mixture. :func:`check_packages`, which ``agents`` runs when
it is imported, compares each package's files with the installed wheel's record of them: a
file replaced (another distribution's ``agents/__init__.py``) or added (its other modules)
raises :class:`PackageConflict`, an ``ImportError`` naming the package, the other
distribution and the remedy: a virtual environment of its own for each. Where the other
distribution was installed last, ``import agents`` runs its code and ``from agents import
make_agent`` fails in it; zhuoji-env's commands (``zhuoji-arena``, ``python -m agents.arena``)
still reach the check and say what happened. ``zhuoji_env`` itself (the engine and the
environments) has no such name and works in either case.

An editable install or a checkout has no record of the files to compare: nothing is checked.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import metadata
from pathlib import Path

from zhuoji_env.versions import DISTRIBUTION

TOP_LEVEL = ("agents", "training")
"""zhuoji-env's top-level packages whose names other distributions use too."""


class PackageConflict(ImportError):
    """Another distribution's files are in one of zhuoji-env's top-level packages."""


def _wheel_install() -> metadata.Distribution | None:
    """The installed zhuoji-env distribution, where it records its files with their hashes (a
    wheel install); None for an editable install, a checkout or no install."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    if not any(str(f) == f"{TOP_LEVEL[0]}/__init__.py" and f.hash for f in files):
        return None
    return dist


def _digest(path: Path) -> str:
    """A file's sha256 as a wheel's RECORD writes it (urlsafe base64, no padding)."""
    raw = hashlib.sha256(path.read_bytes()).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def foreign_files(package: str, dist: metadata.Distribution | None = None) -> list[str]:
    """The files of zhuoji-env's installed ``package`` that its wheel did not put there: its
    modules whose content differs from the record (replaced; the modules alone are hashed, so
    that the check stays cheap beside the shipped policies' megabytes, whose own hashes
    ``agents.ppo.check_shipped_pair`` checks), then the files it has no record of (added;
    Python's ``__pycache__`` folders aside). Empty where nothing can be compared."""
    dist = dist or _wheel_install()
    if dist is None:
        return []
    ours = {str(f): f for f in dist.files or [] if str(f).startswith(f"{package}/")}
    root = Path(dist.locate_file(package))
    replaced = [
        name
        for name, f in sorted(ours.items())
        if f.hash is not None
        and name.endswith(".py")
        and (root.parent / name).is_file()
        and _digest(root.parent / name) != f.hash.value
    ]
    added = sorted(
        str(p.relative_to(root.parent).as_posix())
        for p in root.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.relative_to(root).parts
        and p.relative_to(root.parent).as_posix() not in ours
    )
    return replaced + added


def others_installing(package: str) -> list[str]:
    """The other installed distributions that install a top-level ``package``."""
    owners = metadata.packages_distributions().get(package, [])
    return sorted({name for name in owners if name != DISTRIBUTION})


def check_packages() -> None:
    """Raise :class:`PackageConflict` where another distribution's files are in zhuoji-env's
    ``agents`` or ``training`` (:func:`foreign_files`), naming it and the remedy."""
    dist = _wheel_install()
    if dist is None:
        return
    for package in TOP_LEVEL:
        found = foreign_files(package, dist)
        if not found:
            continue
        others = others_installing(package) or ["another distribution"]
        where = Path(dist.locate_file(package))
        listed = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        raise PackageConflict(
            f"zhuoji-env's package {package!r} ({where}) holds files of {', '.join(others)} "
            f"({listed}): both install a top-level package named {package!r}, pip lets each "
            "write over the other's files, and one environment has one such package, so they "
            "cannot be installed together. Install zhuoji-env in a virtual environment of its "
            "own (python -m venv DIR; DIR/bin/pip install zhuoji-env), or uninstall "
            f"{' and '.join(others)} and then reinstall zhuoji-env "
            "(pip install --force-reinstall --no-deps zhuoji-env)"
        )
