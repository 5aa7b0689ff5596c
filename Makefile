# fleetplan: two commands do all the set-up on a fresh machine with Python >= 3.11.
#   make run    create .venv, install, build the warehouse from sample_data/ if absent, start the app
#   make test   install what the tests need and run them all (lint included)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
WAREHOUSE ?= var/fleetplan.duckdb
# Extra pip arguments, e.g. an index for CPU builds of torch on machines that need one:
#   make test PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
PIP_ARGS ?=

.PHONY: run test lint format warehouse clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_ARGS) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_ARGS) -e '.[dev]'
	touch $@ $(VENV)/.installed

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

test: lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
