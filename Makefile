# relia: two commands matter.  `make demo` runs the whole pipeline on a synthetic fleet;
# `make test` runs every test.  Both create .venv and install the project first.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export GX_ANALYTICS_ENABLED := False
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120
export MPLBACKEND := Agg

.PHONY: install browser demo test test-fast lint bench clean

$(BIN)/relia: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==0.13.9 || $(BIN)/pip install --quiet uv
	$(BIN)/uv pip install --quiet --compile-bytecode -p $(BIN)/python -e '.[dev,dask]'
	touch $(BIN)/relia

install: $(BIN)/relia

demo: install
	$(BIN)/relia demo

# The report's browser test renders the HTML in Debian's headless Chromium driven by chromedriver
# (no browser download); installed from apt when missing, with sudo when not root.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  echo "installing Debian's chromium and chromium-driver for the report's browser test"; \
	  command -v apt-get >/dev/null || { echo "no apt-get: install chromium and chromedriver (/usr/bin) yourself" >&2; exit 1; }; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	fi

# one test worker per core (pytest-xdist), each taking whole files (a module's fixtures are built
# once, its tests run in their order): every test has its own folders and Prefect home
test: install browser
	$(BIN)/python -m pytest -n auto --dist loadfile

test-fast: install
	$(BIN)/python -m pytest -n auto --dist loadfile -m "not slow"

# what CI runs before the tests (.ci/run): lint, format, types, spelling, SQL style
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/codespell pipelines models synth sql tests bench README.md docs
	$(BIN)/sqlfluff lint sql

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .prefect landing lake reports relia.duckdb relia.duckdb.wal
