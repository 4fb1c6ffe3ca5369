"""Replay a game record: ``python -m zhuoji_env.replay FILE.json [FILE.json ...]``.

Prints each record's replayed ``result`` as JSON. When the record carries a result, any
difference is reported and the exit status is 1; an unreadable file, a file that is not UTF-8
standard JSON (``NaN`` and nesting too deep to read included), a malformed record (its stored
result included) or an illegal decision is reported with what was wrong (for a decision: the
action's index, seat, what it tried and what was legal), the run goes on with the next file,
and the exit status is 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import types

from zhuoji_env.commands import prog
from zhuoji_env.engine.records import RecordError, compare, load, replay
from zhuoji_env.limits import exits_2_when_out_of_memory

__all__ = ["replay", "main"]


@exits_2_when_out_of_memory("python -m zhuoji_env.replay")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("zhuoji_env.replay"), description=__doc__)
    parser.add_argument("files", nargs="+", help="record files (JSON)")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        try:
            rec = load(path)
            got = replay(rec, check=False)
        except (RecordError, OSError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else err
            print(f"{path}: error: {why}", file=sys.stderr)
            status = 2
            continue
        print(json.dumps(got))
        if "result" in rec:
            diffs = compare(rec["result"], got)
            for d in diffs:
                print(f"{path}: differs: {d}", file=sys.stderr)
            if diffs:
                status = max(status, 1)
            else:
                print(f"{path}: result matches the record", file=sys.stderr)
    return status


class _CallableModule(types.ModuleType):
    """Importing this module rebinds ``zhuoji_env.replay`` to it; calling it still replays."""

    def __call__(self, record, check=True):
        return replay(record, check)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
