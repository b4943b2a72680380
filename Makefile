# l3ha: the two commands of the README are `make demo` and `make test`.
# Each creates its virtualenv and installs what it needs on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NEUTRON_VENV := .venv-neutron
# Two workers, each test file on one of them (module- and session-scoped services stay
# whole): most slow tests wait on services, emulated clouds or real agents, not on the CPU.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= -n $(PYTEST_WORKERS) --dist loadfile

.PHONY: demo test lint system-deps install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The main job on the embedded emulator.
demo: $(VENV)/.installed
	$(BIN)/l3ha demo

# Debian packages the tests use (keepalived, etcd, iproute2, chromium); needs root.
system-deps:
	@sh scripts/install-system-deps.sh

# The real Neutron API server for the contract suite, in a virtualenv of its own.
$(NEUTRON_VENV)/.installed: tests/neutron_server/requirements.txt
	$(PYTHON) -m venv $(NEUTRON_VENV)
	$(NEUTRON_VENV)/bin/pip install -q --disable-pip-version-check -r tests/neutron_server/requirements.txt
	touch $@

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The whole suite: the real-stack tier runs alone after the rest (scripts/run-tests.sh).
test: $(VENV)/.installed system-deps $(NEUTRON_VENV)/.installed lint
	L3HA_NEUTRON_PYTHON="$(abspath $(NEUTRON_VENV))/bin/python" \
	    sh scripts/run-tests.sh $(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(NEUTRON_VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
