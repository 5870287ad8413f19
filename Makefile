# Two-command quick start: `make train` and `make test` (each creates .venv if absent).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
RAY    := $(VENV)/.installed-ray
GIN    ?= atari.gin
ARGS   ?=
# The stack $(PYTHON) gets (paac_tf/stacks.py): 'reference' (Python 3.9-3.11, everything) or
# 'current' (Python 3.12-3.13: PAAC, no Ape-X). The current stack installs tf-agents and gym
# without their pins (requirements-no-deps.txt) and tests what it runs: $(CURRENT_TESTS), the
# PAAC, export, evaluate and API tests (the Ape-X ones there skip for want of Reverb).
STACK  := $(shell $(PYTHON) -c "import paac_tf.stacks as s; print(s.stack_for().name)" 2>/dev/null)
CURRENT_TESTS = tests/test_stacks.py tests/test_cross_stack.py tests/test_api.py \
	tests/test_train_cli.py tests/test_export.py tests/test_evaluate.py tests/test_resume.py \
	tests/test_paac_agent.py tests/test_paac_tf_agent.py tests/test_paac_losses.py \
	tests/test_paac_returns.py tests/test_committed_policies.py
TESTS  ?= $(if $(filter current,$(STACK)),$(CURRENT_TESTS),tests)

.PHONY: train test test-system test-stops test-cluster lint install clean-venv

$(PY):
	@$(PYTHON) -c "import paac_tf"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

$(STAMP): $(PY) setup.py requirements-no-deps.txt
ifeq ($(STACK),current)
	$(PY) -m pip install -e '.[dev]'
	$(PY) -m pip install --no-deps -r requirements-no-deps.txt
else
	$(PY) -m pip install -e '.[dev,plot]'
endif
	@touch $(STAMP)

# The tests also run Ape-X on Ray (tests/test_apex_ray.py) and Ape-X DPG on MuJoCo
# (tests/test_configs.py): `make test` adds the ray and mujoco extras.
# The current stack has no Ape-X, so neither extra.
$(RAY): $(STAMP)
ifneq ($(STACK),current)
	$(PY) -m pip install -e '.[dev,plot,ray,mujoco]'
endif
	@touch $(RAY)

install: $(STAMP)

train: $(STAMP)
	$(PY) -m paac_tf.train --gin_file=$(GIN) $(ARGS)

# ruff, and the README's results at a glance and quick-start table are what
# tools/reports/readme_glance.py and readme_quick_start.py generate from results/ (no table
# typed by hand).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m tools.reports.readme_glance --check
	$(PY) -m tools.reports.readme_quick_start --check

# The suite without the tests marked `system` (whole runs, learning runs, benchmarks' parts and
# fault injection: tests/test_apex_system.py, test_apex_faults.py, test_reliability.py, each
# shipped config through the CLI, CartPole and Pendulum learned, kill -9 and Ctrl-C reruns;
# `make test-system`), `stops` (tests/test_stops.py: 40 signals at random moments of whole
# runs, ~8 minutes alone, 19 on 2 loaded cores; `make test-stops`) and `cluster` (Ape-X on
# multi-node Ray clusters: of network namespaces, tests/test_apex_cluster.py, 10-16 minutes
# on 2 loaded cores, root and `ip netns`, skipped otherwise; and on loopback,
# tests/test_apex_ray.py's two learning runs; `make test-cluster`). .ci/run runs all four.
test: $(RAY)
	$(PY) -m pytest $(TESTS) -q -m "not cluster and not stops and not system" $(ARGS)

test-system: $(RAY)
	$(PY) -m pytest $(TESTS) -q -m system $(ARGS)

test-stops: $(RAY)
	$(PY) -m pytest $(TESTS) -q -m stops $(ARGS)

test-cluster: $(RAY)
	$(PY) -m pytest $(TESTS) -q -m cluster $(ARGS)

clean-venv:
	rm -rf $(VENV)
