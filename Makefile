# envc: `make demo` installs everything and runs the main job; `make test` runs the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: install demo test bench lint check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,dev]"
	touch $(STAMP)

install: $(STAMP)

# The main job: compile the flagship TCG to a JAX package, check it against the reference interpreter, play it,
# and time its Rust build.
demo: $(STAMP)
	$(BIN)/envc lint specs/*.yaml
	$(BIN)/envc compile specs/tcg.yaml -o tcgjax/ --force
	$(BIN)/envc verify specs/tcg.yaml --backend jax --episodes 10 --states 20
	$(BIN)/envc run specs/tcg.yaml --backend jax --episodes 5
	$(BIN)/envc bench specs/tcg.yaml --backend rust --batch 1024 --steps 300

# The figures of benchmarks/RESULTS.md, peers measured in the same runs (envpool, ~300 MB, only installed here).
bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_jax.py --batches 1,256,4096
	$(BIN)/python benchmarks/bench_rust.py --only cartpole,connect_four
	$(BIN)/python benchmarks/bench_tcg.py

lint: $(STAMP)
	$(BIN)/ruff check envc tests scrapers benchmarks
	$(BIN)/mypy envc

test: $(STAMP)
	$(BIN)/envc lint specs/*.yaml
	$(BIN)/ruff check envc tests scrapers benchmarks
	$(BIN)/mypy envc
	$(BIN)/python -m pytest -n 2 tests

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
