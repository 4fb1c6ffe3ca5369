"""The console commands an install puts on the ``PATH``, beside their ``python -m`` forms.

``pyproject.toml``'s ``[project.scripts]`` installs each command of :data:`COMMANDS` as its
module's ``main``; ``zhuoji-arena --agents rule,greedy`` is ``python -m agents.arena --agents
rule,greedy``. :func:`prog` names the command in usage and error lines as it was run.
"""

from __future__ import annotations

import sys
from pathlib import Path

COMMANDS = {
    "zhuoji-arena": "agents.arena",
    "zhuoji-ladder": "agents.ladder",
    "zhuoji-play": "agents.play",
    "zhuoji-train": "training.ppo_selfplay",
    "zhuoji-train-sb3": "training.sb3_maskable",
    "zhuoji-best-response": "training.best_response",
    "zhuoji-demo": "training.demo",
    "zhuoji-curve": "training.curve",
    "zhuoji-ship-policy": "training.ship_policy",
    "zhuoji-view": "zhuoji_env.view",
    "zhuoji-replay": "zhuoji_env.replay",
    "zhuoji-record": "zhuoji_env.record",
    "zhuoji-bench": "zhuoji_env.bench",
    "zhuoji-web": "agents.web.__main__",
}
"""Console command -> the module whose ``main`` it runs."""


def prog(module: str) -> str:
    """How this process was started to run ``module``: its console command where it was run
    as one (``zhuoji-arena``), else ``python -m MODULE`` (a package's ``__main__`` by the
    package's name: ``python -m agents.web``)."""
    ran = Path(sys.argv[0]).name.removesuffix(".exe") if sys.argv and sys.argv[0] else ""
    if COMMANDS.get(ran) == module:
        return ran
    return f"python -m {module.removesuffix('.__main__')}"
