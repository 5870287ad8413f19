# Two-command quick start: `make train` and `make test` (each creates .venv if absent).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
RAY    := $(VENV)/.installed-ray
GIN    ?= atari.gin
ARGS   ?=

.PHONY: train test test-system test-stops test-cluster lint install clean-venv

$(PY):
	@$(PYTHON) -c "import paac_tf"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

$(STAMP): $(PY) setup.py
	$(PY) -m pip install -e '.[dev,plot]'
	@touch $(STAMP)

# The tests also run Ape-X on Ray (tests/test_apex_ray.py) and Ape-X DPG on MuJoCo
# (tests/test_configs.py): `make test` adds the ray and mujoco extras.
$(RAY): $(STAMP)
	$(PY) -m pip install -e '.[dev,plot,ray,mujoco]'
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
	$(PY) -m pytest tests -q -m "not cluster and not stops and not system" $(ARGS)

test-system: $(RAY)
	$(PY) -m pytest tests -q -m system $(ARGS)

test-stops: $(RAY)
	$(PY) -m pytest tests -q -m stops $(ARGS)

test-cluster: $(RAY)
	$(PY) -m pytest tests -q -m cluster $(ARGS)

clean-venv:
	rm -rf $(VENV)
