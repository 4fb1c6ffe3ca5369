# zhuoji-env developer commands. Everything runs inside .venv (created on demand).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.stamp

# torch is pinned here, not in pyproject.toml: on these machines torch==2.13.0 resolves to a
# local CPU wheel in seconds, while an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

# Ray RLlib (training.rllib_ppo, the rllib: agent) lives in its own environment: ray 2.60.0 pins
# gymnasium 1.2.2, below the main .venv's, so `make venv` and `make test` stay as they are
# (tests/test_rllib.py skips there). `make rllib RLLIB_VENV=.venv` installs the extra into the
# project's environment instead; `make test` then runs the RLlib tests too.
RLLIB_VENV  ?= .venv-rllib
RLLIB_PY    := $(RLLIB_VENV)/bin/python
RLLIB_STAMP := $(RLLIB_VENV)/.stamp-rllib

.PHONY: venv browser demo scratch hour web test test-wheel notebooks docs lint format bench clean \
	rllib test-rllib

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install "$(TORCH_PIN)"
	$(PIP) install -e ".[train,dev]"
	@touch $(STAMP)

rllib: $(RLLIB_STAMP)

$(RLLIB_STAMP): pyproject.toml
	@test -x $(RLLIB_PY) || $(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_PY) -m pip install --upgrade pip
	$(RLLIB_PY) -m pip install "$(TORCH_PIN)"
	$(RLLIB_PY) -m pip install -e ".[train,dev,rllib]"
	@touch $(RLLIB_STAMP)

# The RLlib tests alone (and the run-safety tests of the RLlib trainers), one at a time (Ray
# starts its own processes); ray must import there.
test-rllib: rllib
	$(RLLIB_PY) -c "import ray.rllib"
	$(RLLIB_PY) -m pytest -q tests/test_rllib.py tests/test_rllib_batched.py tests/test_pinned_rllib.py tests/test_run_safety.py -k "rllib or two_node"

# The trainer's recipe `demo` (about four minutes from scratch), then the arena of the fresh
# policy and the shipped one against the baselines. A rerun writes to runs/demo-2,
# runs/demo-3, ... (training.demo picks the first free one).
demo: venv
	$(PY) -m training.demo

# `make hour` and `make scratch` never touch an earlier run: each trains into the first of
# runs/NAME, runs/NAME-2, runs/NAME-3, ... that does not exist (as zhuoji_env.fileio.unused_path
# picks), or into RUN=DIR (a folder without a run), then plays that run's latest.pt. This sets
# the shell variable `run` for the rest of the recipe's one shell line.
free_run = run="$(RUN)"; if [ -z "$$run" ]; then run=runs/$(1); n=2; \
	while [ -e "$$run" ]; do run=runs/$(1)-$$n; n=$$((n + 1)); done; fi; \
	echo "make $(1): the run goes to $$run"

# The best one-hour recipe measured on a 2-core machine (docs/results.md), the trainer's recipe
# `hour` (training/recipes.py, `--help` lists its flags): clone rule, then 56 minutes of PPO on
# the v2 observation and rule's advice (--rule-hint), no shanten shaping, 512 games x 64 steps
# an update, in two data-parallel processes (the update in bfloat16 where the CPU has bf16
# units; the recipe is the same without them); about an hour in all. On a 2-core machine
# without bf16 units it trained 28.0M decisions and scored +2.66 [+2.49, +2.82] over rule by
# sampling on 2,000 fresh deals. Then the arena against rule by sampling and by argmax.
hour: venv
	@$(call free_run,hour); set -x; \
	$(PY) -m training.ppo_selfplay --recipe hour --out-dir "$$run" && \
	$(PY) -m agents.arena --agents "ppo:$$run/latest.pt,rule" --deals 2000 --seed 2033 && \
	$(PY) -m agents.arena --agents "ppo:$$run/latest.pt:greedy,rule" --deals 2000 --seed 2033

# Learning without a teacher (docs/results.md), the trainer's recipe `scratch`: 55 minutes of
# self-play PPO from scratch on two cores, then the arena against greedy and rule.
scratch: venv
	@$(call free_run,scratch); set -x; \
	$(PY) -m training.ppo_selfplay --recipe scratch --out-dir "$$run" && \
	$(PY) -m agents.arena --agents "ppo:$$run/latest.pt,greedy" --deals 2000 --seed 2031 && \
	$(PY) -m agents.arena --agents "ppo:$$run/latest.pt,rule" --deals 2000 --seed 2031

# The web app (docs/web.md): play and watch the agents in a browser; prints the URL to open.
# ARGS passes flags, e.g. make web ARGS="--agents rule,ppo-guiyang,search:ppo-guiyang".
web: venv
	$(PY) -m agents.web $(ARGS)

# The replay viewer and the web app are tested in a real headless Chromium
# (tests/test_view_browser.py, tests/test_web_browser.py): Debian's package, installed here when
# missing (as root). Without it those tests skip, except under CI=true.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || \
	echo "make test: could not install chromium; the browser test skips (fails under CI=true)" >&2

# pytest exit code 5 means "no tests collected": that is a failure here, not a pass. The wheel's
# tests (marked wheel) are make test-wheel's.
test: venv browser
	@$(PY) -m pytest -n 2 -q -m "not wheel"; rc=$$?; \
	if [ $$rc -eq 5 ]; then \
		echo "make test: FAILED - pytest collected no tests (exit code 5)" >&2; exit 1; \
	fi; \
	exit $$rc

# python -m build makes the wheel and sdist, the wheel is installed into a fresh virtual
# environment outside the checkout and runs there (tests/test_wheel.py, a few minutes; the
# citation check installs cffconvert from the package index).
test-wheel: venv
	$(PY) -m pytest -q -m wheel tests/test_wheel.py

# Run the notebooks again at their analysis sizes (the values of their parameter cells; the test
# suite runs them small) and write them back with their outputs, each whole or not at all and
# only when no cell raised; NB=02 runs one. Tens of minutes on two cores. They run on numpy's
# AVX2 code even where the CPU has AVX-512 (zhuoji_env.machine.avx2_switch): games that read
# rule's advice replay exactly only on one SIMD target (docs/search.md), the committed outputs
# are made on AVX2, and each notebook prints the target it ran on.
notebooks: venv
	NPY_DISABLE_CPU_FEATURES="$$($(PY) -c 'from zhuoji_env import machine; print(machine.avx2_switch())')" \
		$(PY) tests/test_notebooks.py $(NB)

# The documentation site (docs/conf.py): docs/*.md and the packages' docstrings, built with
# Sphinx, MyST and furo into docs/_build/html (open index.html). Every warning is an error, a
# broken cross-reference included (-n), and the whole site is read again each time (-E).
DOCS_STAMP := $(VENV)/.stamp-docs

$(DOCS_STAMP): $(STAMP)
	$(PIP) install -e ".[docs]"
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -b html -W --keep-going -n -E -q docs docs/_build/html

lint: venv
	$(VENV)/bin/ruff check .

format: venv
	$(VENV)/bin/ruff format --check .

bench: venv
	$(PY) -m zhuoji_env.bench
	$(PY) -m zhuoji_env.envs.bench
	$(PY) -m training.bench_learner
	$(PY) -m training.bench_learner --processes 2

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .hypothesis docs/_build
	find . -path ./$(VENV) -prune -o -path ./$(RLLIB_VENV) -prune -o -type d -name __pycache__ \
		-exec rm -rf {} +
