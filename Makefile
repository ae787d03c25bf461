# Two commands for a newcomer: `make demo` and `make test` (and `make docs` for the site).
# Both create and reuse the project virtual environment in .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The demo needs only the package and the embedded model; the test and server toolchain
# (`make test`) comes on top of it, in the same .venv.
DEMO_STAMP := $(VENV)/.installed-local

# llama-cpp-python compiles llama.cpp for the CPU that builds it (-march=native). On an x86 CPU
# with AMX (Xeon Sapphire Rapids and later) that compiles ggml's AMX kernels, which GCC 12
# (Debian 12's compiler) breaks: its _tile_loadconfig declares a read of 8 of the tile
# configuration's 64 bytes, so the tile shapes are dropped as dead stores and the first prompt
# dies of SIGILL (the embedded model and llama_cpp.server alike). GCC lets explicit -mno-amx-*
# win over -march=native in either order, so the build keeps the CPU's other instructions
# (AVX-512, VNNI) and ggml uses those kernels instead.
ifeq ($(shell uname -m),x86_64)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif
LLAMA_ENV := CFLAGS="$$CFLAGS $(NO_AMX)" CXXFLAGS="$$CXXFLAGS $(NO_AMX)"
# pip reuses the wheel it built before (keyed by the sdist, not the flags), so a build with
# AMX cached earlier is checked for and, once, removed from the cache and rebuilt.
LLAMA_HAS_AMX := $(BIN)/python -c "import llama_cpp, sys; \
  sys.exit(b'AMX_INT8 = 1' not in llama_cpp.llama_print_system_info())"
define llama_without_amx
	@if [ -n "$(NO_AMX)" ] && $(LLAMA_HAS_AMX); then \
	  echo "llama-cpp-python was built with AMX (a cached wheel): rebuilding it without"; \
	  $(BIN)/python -m pip cache remove -q llama_cpp_python || true; \
	  version=$$($(BIN)/python -c "import llama_cpp; print(llama_cpp.__version__)"); \
	  $(LLAMA_ENV) $(BIN)/python -m pip install -q --force-reinstall --no-deps \
	    "llama-cpp-python==$$version" || exit 1; \
	  if $(LLAMA_HAS_AMX); then echo "llama-cpp-python still has AMX: see Makefile"; exit 1; fi; \
	fi
endef

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

.PHONY: demo test lint docs browser postgresql bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml Makefile | $(BIN)/python
	$(LLAMA_ENV) $(BIN)/python -m pip install -q -e ".[local]"
	$(llama_without_amx)
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) pyproject.toml Makefile | $(BIN)/python
	$(LLAMA_ENV) $(BIN)/python -m pip install -q -e ".[dev,local]"
	$(llama_without_amx)
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

# The documentation site, into site/. --strict: a broken link, anchor or API reference is an
# error, so `make test` (which builds it too) fails on one. NO_MKDOCS_2_WARNING quiets
# mkdocs-material's notice about its successor, which is not about this build. Not --quiet:
# it hides the warnings from the count --strict fails on, and a broken link would pass.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# A Debian package some tests need: where make runs as root with apt-get (CI, the project's
# machines) it is installed when missing; elsewhere those tests skip and say so.
# $(call debian_package,CHECK,PACKAGE,TESTS): CHECK is a shell test that it is installed.
define debian_package
	@{ $(1); } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's $(2) for the $(3)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2)) \
	      >/dev/null 2>&1 || echo "could not install $(2): the $(3) will be skipped"; \
	  else \
	    echo "$(2) not found: the $(3) will be skipped (apt-get install $(2))"; \
	  fi; }
endef

# The page tests drive headless Chromium.
browser:
	$(call debian_package,command -v chromium,chromium,page tests)

# The PostgreSQL tests (service replicas) start Debian's server in a temporary folder.
postgresql:
	$(call debian_package,ls /usr/lib/postgresql/*/bin/initdb || command -v initdb,postgresql,replica tests)

test: lint docs browser postgresql
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_agreement.py

clean:
	rm -rf $(VENV) demo-out site .pytest_cache .mypy_cache .ruff_cache
