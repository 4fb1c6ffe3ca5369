"""``training.ppo_selfplay``'s command line and console: the named recipes (``--recipe``) are what
``make hour``, ``make scratch`` and ``make demo`` train, a flag given beside a recipe wins,
``--help`` lists what each sets, and each evaluation's lines (the update's losses, entropy and
explained variance, then the margins) stand on lines of their own, also in a log file where
the progress bar writes to the same file."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from training import demo, ppo_selfplay
from training.cli import check_fields, parse_args
from training.ppo_selfplay import Args
from training.recipes import RECIPES, recipe_flags, recipe_values

ROOT = Path(__file__).resolve().parent.parent


def makefile_training_command(target: str) -> list[str]:
    """The words after ``-m training.ppo_selfplay`` in the Makefile's ``target`` recipe."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert body, f"no target {target} in the Makefile"
    joined = body.group(1).replace("\\\n", " ")
    command = re.search(r"-m training\.ppo_selfplay (.*?)(?:&&|;|$)", joined, re.M)
    assert command, f"make {target} does not run training.ppo_selfplay"
    return shlex.split(command.group(1))


def cli_args(argv: list[str]) -> Args:
    """The ``Args`` that ``python -m training.ppo_selfplay ARGV`` trains with."""
    return parse_args(Args, argv, recipes=RECIPES)


@pytest.mark.parametrize("target", ["hour", "scratch"])
def test_make_target_trains_its_recipe_and_nothing_else(target):
    argv = makefile_training_command(target)
    assert argv == ["--recipe", target, "--out-dir", "$$run"]
    args = cli_args(argv)
    assert args == Args(**recipe_values(target, out_dir="$$run"))
    for name, value in RECIPES[target].values.items():
        assert getattr(args, name) == value, name


def test_make_demo_trains_the_demo_recipe(tmp_path, monkeypatch):
    """``training.demo`` at its defaults hands the trainer the recipe ``demo`` exactly (its
    evaluations, spread over the run, included)."""
    given = []

    def stop(args):
        given.append(args)
        raise SystemExit(0)

    monkeypatch.setattr(demo, "train", stop)
    with pytest.raises(SystemExit):
        demo.main(["--out-dir", str(tmp_path / "run")])
    assert given == [cli_args(["--recipe", "demo", "--out-dir", str(tmp_path / "run")])]


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_sets_fields_of_their_types(name):
    values = RECIPES[name].values
    assert set(values) <= {f for f in Args.__dataclass_fields__}
    check_fields(Args(**values), {})  # raises FlagError for a value not of its field's type
    assert cli_args(["--recipe", name]) == Args(**values)


def test_a_flag_given_beside_a_recipe_wins():
    args = cli_args(["--recipe", "hour", "--lr", "1e-3", "--no-rule-hint", "--seed", "3"])
    assert (args.lr, args.rule_hint, args.seed) == (1e-3, False, 3)
    assert args.num_envs == RECIPES["hour"].values["num_envs"]  # the rest is the recipe's
    # also a value equal to the plain default, which the recipe changes
    plain = Args.num_envs
    assert RECIPES["scratch"].values["num_envs"] != plain
    assert cli_args(["--num-envs", str(plain), "--recipe", "scratch"]).num_envs == plain
    assert cli_args(["--recipe=scratch", f"--num-envs={plain}"]).num_envs == plain
    assert cli_args([]) == Args()  # no recipe: the defaults


def test_help_lists_every_recipe_with_the_flags_it_sets(capsys):
    with pytest.raises(SystemExit) as stop:
        ppo_selfplay.main(["--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--recipe {hour,scratch,demo}" in text
    for name, recipe in RECIPES.items():
        assert f"{name}: {' '.join(recipe.summary.split())}" in text
        assert recipe_flags(recipe.values) in text


def test_an_unknown_recipe_is_refused_naming_the_recipes(capsys):
    with pytest.raises(SystemExit) as stop:
        ppo_selfplay.main(["--recipe", "week"])
    assert stop.value.code == 2
    assert "--recipe: invalid choice: 'week' (choose from hour, scratch, demo)" in (
        capsys.readouterr().err.replace("'hour', 'scratch', 'demo'", "hour, scratch, demo")
    )
    with pytest.raises(ValueError, match="recipe 'week': unknown; the recipes are hour, scratch"):
        recipe_values("week")


def test_each_evaluation_prints_the_training_statistics_on_lines_of_their_own(tmp_path):
    """A run logged to a file, its progress bar (stderr) and its lines (stdout) in one file as
    ``> log 2>&1`` makes them: every evaluation line starts a line of its own, and after each
    update evaluated the losses, entropy and explained variance come first."""
    log = tmp_path / "run.log"
    command = [
        sys.executable,
        "-m",
        "training.ppo_selfplay",
        *("--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2"),
        *("--update-epochs", "1", "--hidden", "16", "--total-decisions", "192"),
        *("--eval-every", "1", "--eval-deals", "1", "--eval-opponents", "random"),
        *("--out-dir", str(tmp_path / "run"), "--progress"),
    ]
    with open(log, "w") as out:
        done = subprocess.run(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ)
        )
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    lines = re.split(r"[\r\n]", text)
    train = [ln for ln in lines if "explained variance" in ln]
    evals = [ln for ln in lines if "vs random: margin" in ln]
    assert len(train) == 3 and len(evals) == 4  # before the first update, then after each
    for k, line in enumerate(train, 1):
        assert re.fullmatch(
            rf"update {k}/3 decisions {64 * k}: policy loss [+-]\d+\.\d{{4}}, value loss "
            r"\d+\.\d{4}, entropy \d+\.\d{3}, explained variance [+-]\d+\.\d{3}",
            line,
        ), line
    for line in evals:
        assert line.startswith("update "), line
    # no line of text follows the bar on its line, as a viewer of the file shows it
    for shown in text.split("\n"):
        assert "ppo:" not in shown or "update " not in shown.rsplit("\r", 1)[-1], shown
