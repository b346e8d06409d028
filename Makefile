# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench bench-simulated bench-mpi bench-crosscheck bench-fuzzing clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/hetcoll demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

# Benchmarks by kind (each prints a table and writes results/*.json); `make bench` runs all,
# each script with its defaults (a size for a shared machine; their --full or documented
# options run the long versions), and says each one's wall time.  `make -n bench` lists
# every script it runs.
# benchmarks/mpi/ranks/ holds the rank side of MPI benchmarks: started by them, not here.
BENCH_KINDS := simulated crosscheck fuzzing mpi

bench: $(addprefix bench-,$(BENCH_KINDS))

$(addprefix bench-,$(BENCH_KINDS)): bench-%: $(BIN)/.installed
	for b in $(sort $(wildcard benchmarks/$*/*.py)); do \
	    echo "== $$b"; t0=$$(date +%s); $(BIN)/python $$b || { echo "== $$b failed"; exit 1; }; \
	    echo "== $$b: $$(( $$(date +%s) - t0 )) s of wall time"; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
