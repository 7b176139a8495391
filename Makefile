# envc: `make demo` installs everything and runs the main job; `make test` runs the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: install demo test lint check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/envc lint specs/*.yaml
	$(BIN)/envc run specs/cartpole.yaml --episodes 20
	$(BIN)/envc run specs/tic_tac_toe.yaml --episodes 50
	$(BIN)/envc run specs/connect_four.yaml --episodes 20
	$(BIN)/envc run specs/kuhn_poker.yaml --episodes 100

lint: $(STAMP)
	$(BIN)/ruff check envc tests
	$(BIN)/mypy envc

test: $(STAMP)
	$(BIN)/envc lint specs/*.yaml
	$(BIN)/ruff check envc tests
	$(BIN)/mypy envc
	$(BIN)/python -m pytest -n 2 tests

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
