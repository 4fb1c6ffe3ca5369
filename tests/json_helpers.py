"""A JSON reader for the tests of the tools' output files."""

import json


def strict_json(text: str):
    """``json.loads`` that refuses NaN and Infinity, which are not JSON (Python writes and reads
    them by default)."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)
