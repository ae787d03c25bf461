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
# Then the panel on real recorded judgments shipped in the package (PandaLM: two published
# judges, three people per answer pair): the target agreement its 999 pairs support at risk
# 0.10 (measured: 70 % of the calibration pairs declared), with a bootstrap small enough
# for a few seconds.
DEMO_TARGET    := 0.80
DEMO_RISK      := 0.10
DEMO_BOOTSTRAP := 200

.PHONY: demo test lint browser bench clean

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
	@echo
	@echo "The panel against people, on judgments capable models made (no model runs):"
	$(BIN)/debate example pandalm --out demo-out/pandalm
	$(BIN)/debate validity demo-out/pandalm/judgments.csv --labels demo-out/pandalm/labels.csv \
	  --target-agreement $(DEMO_TARGET) --risk $(DEMO_RISK) --bootstrap $(DEMO_BOOTSTRAP) \
	  --brief --out demo-out/pandalm/validity

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The page tests drive Debian's headless Chromium. Where make runs as root with apt-get (CI,
# the project's machines) it is installed when missing; elsewhere those tests skip and say so.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the page tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	      >/dev/null 2>&1 || echo "could not install chromium: the page tests will be skipped"; \
	  else \
	    echo "chromium not found: the page tests will be skipped (apt-get install chromium)"; \
	  fi; }

test: lint browser
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_agreement.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
