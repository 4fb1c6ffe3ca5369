"""Reading the notes that ``agents.base.add_note`` puts on an exception, on every Python."""

import re
import sys


def notes(exc: BaseException) -> list[str]:
    """``exc.__notes__`` on Python 3.11+; on 3.10, which has no notes, ``add_note`` closes the
    message with ``" (note)"``, and that text is read back as the one note (so this serves
    tests that add one note to a message that does not end in parentheses itself)."""
    if sys.version_info >= (3, 11):
        return list(getattr(exc, "__notes__", []))
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    found = re.search(r" \((.*)\)$", message)
    return [found.group(1)] if found else []
