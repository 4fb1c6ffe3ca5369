"""Baseline agents, the agent registry and the arena (``python -m agents.arena``).

Agents share one batched interface, ``act(obs [k, OBS_SIZE], mask [k, 86]) -> int [k]``
(:class:`agents.base.Agent`); :func:`make_agent` builds one from a spec string.
"""

from agents.base import Agent
from agents.registry import AGENT_FACTORIES, known_specs, make_agent, register_agent
from agents.rule import RuleAgent
from agents.simple import GreedyAgent, RandomAgent

__all__ = [
    "AGENT_FACTORIES",
    "Agent",
    "GreedyAgent",
    "RandomAgent",
    "RuleAgent",
    "known_specs",
    "make_agent",
    "register_agent",
]
