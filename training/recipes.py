"""Named recipes of the self-play PPO trainer: ``python -m training.ppo_selfplay --recipe NAME``.

A recipe is a set of flag values whose result was measured (docs/results.md): the one-hour
recipe with a teacher (``hour``, what ``make hour`` trains), the 55 minutes without one
(``scratch``, ``make scratch``) and the four-minute run of ``make demo`` (``demo``, which
:mod:`training.demo` trains). A flag given on the command line overrides the recipe's value of
it. A recipe names every value its result depends on, also those equal to today's defaults, so
that a later change of a default leaves it as measured.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    """What a recipe is for (one line of ``--help``) and the flag values it sets, by their
    ``Args`` field names."""

    summary: str
    values: dict


RECIPES: dict[str, Recipe] = {
    "hour": Recipe(
        "the best one-hour recipe measured on two cores: clone rule, then 56 minutes of PPO "
        "reading rule's advice, in two processes (+2.66 a hand over rule)",
        {
            "rule_hint": True,
            "bc_agent": "rule",
            "bc_decisions": 400_000,
            "bc_epochs": 6,
            "time_limit": 56.0,
            "total_decisions": 0,
            "num_envs": 512,
            "num_steps": 64,
            "num_minibatches": 8,
            "update_epochs": 4,
            "lr": 3e-4,
            "ent_coef": 0.003,
            "shaping": 0.0,
            "kong_shaping": 0.0,
            "seed": 7,
            "eval_every": 0,
            "eval_opponents": "",
            "save_every": 25,
            "processes": 2,
        },
    ),
    "scratch": Recipe(
        "learning without a teacher: 55 minutes of self-play from scratch with an oracle critic "
        "and a pool of past snapshots (+3.15 a hand over greedy, +0.18 over rule)",
        {
            "time_limit": 55.0,
            "total_decisions": 0,
            "num_envs": 128,
            "num_steps": 128,
            "num_minibatches": 4,
            "update_epochs": 4,
            "lr": 5e-4,
            "ent_coef": 0.01,
            "shaping": 0.05,
            "kong_shaping": 0.2,
            "oracle_critic": True,
            "pool_size": 4,
            "pool_every": 20,
            "pool_prob": 0.2,
            "seed": 11,
            "eval_every": 100,
            "eval_opponents": "greedy",
            "save_every": 50,
        },
    ),
    "demo": Recipe(
        "about four minutes from scratch whose curve rises: small rollouts of 64 games and a "
        "high learning rate, evaluated against random and greedy (what make demo trains)",
        {
            "total_decisions": 700_000,
            "time_limit": 0.0,
            "num_envs": 64,
            "num_steps": 128,
            "num_minibatches": 4,
            "update_epochs": 4,
            "lr": 1e-3,
            "ent_coef": 0.01,
            "shaping": 0.05,
            "kong_shaping": 0.0,
            "seed": 1,
            "eval_every": 14,
            "eval_deals": 100,
            "eval_opponents": "random,greedy",
        },
    ),
}
"""Every recipe by name."""


def recipe_values(name: str, **overrides) -> dict:
    """The ``Args`` field values of recipe ``name`` with ``overrides`` in their place (as flags
    given beside ``--recipe NAME`` are); an unknown name is a ``ValueError`` naming the recipes."""
    if name not in RECIPES:
        raise ValueError(f"recipe {name!r}: unknown; the recipes are {', '.join(RECIPES)}")
    return {**RECIPES[name].values, **overrides}


def recipe_flags(values: dict) -> str:
    """A recipe's values as the flags that set them (``--rule-hint --bc-agent rule ...``)."""
    words = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        else:
            words.append(f"{flag} {value!r}" if value == "" else f"{flag} {value}")
    return " ".join(words)
