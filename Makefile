# Set-up and entry points. Every target installs what it needs into .venv on first use.
#   make demo   - simulate the default EthLink domain and print its latency report
#   make test   - run the whole test suite (what CI runs)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lint clean

$(BIN)/ethlink: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	@touch $@

demo: $(BIN)/ethlink
	$(BIN)/ethlink demo

test: $(BIN)/ethlink
	$(BIN)/pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

lint: $(BIN)/ethlink
	$(BIN)/ethlink lint

clean:
	rm -rf build
