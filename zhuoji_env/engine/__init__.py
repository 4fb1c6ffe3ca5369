"""The batched game engine: state, step, settlement, records and replay."""

from zhuoji_env.engine.core import IllegalActionError, deal, step
from zhuoji_env.engine.game import BatchGame, StepOutput
from zhuoji_env.engine.records import (
    RecordError,
    ResultMismatch,
    record_of,
    replay,
    result_of,
)
from zhuoji_env.engine.state import State

__all__ = [
    "BatchGame",
    "IllegalActionError",
    "RecordError",
    "ResultMismatch",
    "State",
    "StepOutput",
    "deal",
    "record_of",
    "replay",
    "result_of",
    "step",
]
