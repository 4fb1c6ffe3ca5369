"""Agent specs: ``make_agent("random" | "greedy" | "rule" | "prefix:argument", seed)``.

A spec is a registered prefix, optionally followed by ``:`` and an argument that the prefix's
factory interprets. Built in: ``random``, ``greedy``, ``rule``, ``discard-drawn`` (an agent
exploitable by construction, :class:`~agents.exploitable.DiscardDrawnAgent`),
``ppo:PATH[:greedy][:DEVICE]`` (a checkpoint of ``training.ppo_selfplay``, :mod:`agents.ppo`),
the shipped trained policies
``ppo-guiyang``, ``ppo-classic`` and ``ppo-app`` (``NAME[:greedy][:DEVICE]``, the strongest
per preset) and ``ppo-scratch`` (guiyang, trained without a teacher), ``sb3:PATH`` (a MaskablePPO
model, :mod:`agents.sb3`) and ``rllib:PATH[:greedy]`` (a ``training.rllib_ppo`` run,
:mod:`agents.rllib`, the ``rllib`` extra); these import torch (and Ray) only when such an agent
is made. None of them runs code from the file it loads: ``sb3:`` and ``rllib:`` rebuild their
network from its weights alone; ``sb3+trusted:PATH`` and ``rllib+trusted:PATH[:greedy]`` load
through the libraries' own loaders (other architectures too), which run any code a crafted file
holds, so they are for files the user trusts. ``search:BASE[:OPTION=VALUE]...`` is
any BASE with decision-time search (:mod:`agents.search`).

Other code adds its own agents with :func:`register_agent`::

    from agents import register_agent
    register_agent("mine", lambda arg, seed=None, rules=None: MyAgent(arg, seed=seed))

A factory is called as ``factory(argument_or_None, seed=seed, rules=rules)`` and returns an
:class:`~agents.base.Agent`. ``rules`` (a ``Rules``, preset name or None) is public table
knowledge that an agent may use to weigh its choices; the built-in agents work without it.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.base import DEVICES, Agent, check_device_name, missing_methods

AgentFactory = Callable[..., Agent]

RLLIB_MISSING = 'the rllib extra is not installed: pip install -e ".[rllib]", or make rllib'
"""What to do when ``ray`` cannot be imported (``rllib:`` agents, ``training.rllib_ppo``)."""
TRAIN_MISSING = 'the train extra is not installed: pip install -e ".[train]", or make venv'
"""What to do when torch or Stable-Baselines3 cannot be imported (``ppo``, ``sb3`` and the
shipped policies' agents)."""

SHIPPED_POLICIES = {
    "ppo-guiyang": "guiyang",
    "ppo-classic": "classic",
    "ppo-app": "app",
    "ppo-scratch": "guiyang",
}
"""The trained policies shipped in the package (``agents/policies/NAME.pt``, :mod:`agents.ppo`),
by name, with the preset each was trained and measured under: ``ppo-PRESET`` is the strongest
of its preset; ``ppo-scratch`` learned by self-play alone (no cloned teacher, no rule hint), the
reference point for a from-scratch method."""

AGENT_FACTORIES: dict[str, AgentFactory] = {}
"""Spec prefix -> factory. Register with :func:`register_agent`."""


def register_agent(prefix: str, factory: AgentFactory, *, replace: bool = False) -> None:
    """Make ``prefix`` (and ``prefix:argument``) a valid spec for :func:`make_agent`."""
    if (
        not isinstance(prefix, str)
        or not prefix
        or any(c in prefix for c in ":,#")
        or any(c.isspace() for c in prefix)
    ):
        raise ValueError(
            f"bad agent prefix {prefix!r}: a non-empty name without ':', ',', '#' or spaces"
        )
    if not callable(factory):
        raise ValueError(
            f"agent prefix {prefix!r}: the factory must be callable as factory(arg, seed=, "
            f"rules=), got {type(factory).__name__}"
        )
    if prefix in AGENT_FACTORIES and not replace:
        raise ValueError(f"agent prefix {prefix!r} is already registered (pass replace=True)")
    AGENT_FACTORIES[prefix] = factory


def known_specs() -> list[str]:
    return sorted(AGENT_FACTORIES)


def split_specs(text: str, flag: str) -> list[str]:
    """The comma-separated agent specs of command-line option ``flag``; an empty list or an
    empty item raises ``ValueError`` naming ``flag``."""
    specs = [s.strip() for s in text.split(",")]
    if not any(specs):
        raise ValueError(f"{flag} {text!r}: no agent spec given; e.g. {flag} random,rule")
    if "" in specs:
        raise ValueError(
            f"{flag} {text!r}: item {specs.index('') + 1} is empty; give comma-separated agent "
            "specs, e.g. random,rule"
        )
    return specs


def make_agent(spec: str, seed=None, rules=None) -> Agent:
    """The agent a spec names; ``seed`` seeds its random generator. The agent keeps the spec as
    ``agent.spec`` (where it takes attributes), which errors about it name."""
    if not isinstance(spec, str):
        raise ValueError(f"agent spec must be a string, got {type(spec).__name__}")
    prefix, sep, arg = spec.strip().partition(":")
    factory = AGENT_FACTORIES.get(prefix)
    if factory is None:
        raise ValueError(
            f"unknown agent spec {spec!r}: known agents {known_specs()} "
            "(a registered prefix, optionally followed by ':argument', e.g. 'ppo:ckpt.pt')"
        )
    agent = factory(arg if sep else None, seed=seed, rules=rules)
    missing = missing_methods(agent)
    if missing:
        raise ValueError(
            f"agent spec {spec!r}: its factory returned a {type(agent).__name__} without "
            f"{' or '.join(missing)}(): an agent has act(obs, mask) and reseed(seed) "
            "(subclass agents.base.Agent)"
        )
    try:
        agent.spec = spec.strip()
    except AttributeError:
        pass  # an object that takes no attributes is named by its repr in errors
    return agent


def on_devices(agents, device: str) -> tuple[list, bool]:
    """``agents`` with each spec moved to ``device`` (:func:`on_device`; agent objects as they
    are), and whether that changed any spec: a run records its device only where it did."""
    moved = [on_device(a, device) if isinstance(a, str) else a for a in agents]
    return moved, any(m != a for m, a in zip(moved, agents, strict=True))


def on_device(spec: str, device: str) -> str:
    """``spec`` with its policy networks on ``device`` (one of :data:`DEVICES`): the device
    option added to a ``ppo:`` or shipped policy and to a ``search:`` agent's base, unless the
    spec names a device itself; other specs are returned as they are (their agents run where
    they run). What the arena's and ladder's ``--device`` play, under the spec's own label:
    where a network runs is not part of an agent's identity (results differ only by
    floating-point rounding)."""
    check_device_name(device)
    prefix, sep, arg = spec.strip().partition(":")
    if prefix == "search" and sep:
        from agents.search import parse_spec

        base, _ = parse_spec(arg)
        return f"search:{on_device(base, device)}{arg[len(base) :]}"
    if prefix != "ppo" and prefix not in SHIPPED_POLICIES:
        return spec
    tail = arg.split(":") if prefix != "ppo" else arg.split(":")[1:]
    return spec if any(o in DEVICES for o in tail) else f"{spec.strip()}:{device}"


def _no_argument(cls):
    def factory(arg, seed=None, rules=None):
        if arg is not None:
            raise ValueError(f"agent {cls.name!r} takes no argument, got {cls.name}:{arg}")
        return cls(seed=seed)

    return factory


def _register_builtins() -> None:
    from agents.exploitable import DiscardDrawnAgent
    from agents.rule import RuleAgent
    from agents.simple import GreedyAgent, RandomAgent

    register_agent("random", _no_argument(RandomAgent))
    register_agent("greedy", _no_argument(GreedyAgent))
    register_agent("discard-drawn", _no_argument(DiscardDrawnAgent))

    def rule(arg, seed=None, rules=None):
        if arg is not None:
            raise ValueError(f"agent 'rule' takes no argument, got rule:{arg}")
        return RuleAgent(seed=seed, rules=rules)

    register_agent("rule", rule)

    def needs_train(agent: str, exc: ImportError) -> ValueError:
        return ValueError(f"agent {agent!r} needs torch ({TRAIN_MISSING}): {exc}")

    def ppo(arg, seed=None, rules=None):  # torch is imported only when a checkpoint is named
        try:
            from agents.ppo import agent_factory
        except ImportError as exc:
            raise needs_train("ppo", exc) from None

        return agent_factory(arg, seed=seed, rules=rules)

    def sb3(trusted):
        def factory(arg, seed=None, rules=None):
            try:
                from agents.sb3 import agent_factory
            except ImportError as exc:
                raise needs_train("sb3", exc) from None

            return agent_factory(arg, seed=seed, rules=rules, trusted=trusted)

        return factory

    register_agent("ppo", ppo)
    register_agent("sb3", sb3(False))
    register_agent("sb3+trusted", sb3(True))

    def shipped(name):
        def factory(arg, seed=None, rules=None):
            try:
                from agents.ppo import shipped_factory
            except ImportError as exc:
                raise needs_train(name, exc) from None

            return shipped_factory(name)(arg, seed=seed, rules=rules)

        return factory

    for name in SHIPPED_POLICIES:
        register_agent(name, shipped(name))

    def rllib(trusted):  # ray is imported only when a checkpoint is named
        def factory(arg, seed=None, rules=None):
            try:
                from agents.rllib import agent_factory
            except ImportError as exc:
                raise ValueError(
                    f"agent 'rllib' needs Ray RLlib ({RLLIB_MISSING}): {exc}"
                ) from None

            return agent_factory(arg, seed=seed, rules=rules, trusted=trusted)

        return factory

    register_agent("rllib", rllib(False))
    register_agent("rllib+trusted", rllib(True))

    def search(arg, seed=None, rules=None):
        from agents.search import agent_factory

        return agent_factory(arg, seed=seed, rules=rules, make_agent=make_agent)

    register_agent("search", search)

    def no_hu(arg, seed=None, rules=None):
        try:
            from agents.exploitable import no_hu_factory

            return no_hu_factory(arg, seed=seed, rules=rules, make_agent=make_agent)
        except ImportError as exc:
            raise needs_train("no-hu", exc) from None

    register_agent("no-hu", no_hu)


_register_builtins()
