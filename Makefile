# One task runner; CI calls `make test` as it is.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# what running needs (the package, its dependencies, the dashboard's plotly), and on
# top of it what testing needs (the dev extras: mypy, moto, cfn-lint, selenium...)
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

.PHONY: run test fast lint typecheck cfnlint unit bench lock clean

# pytest-xdist workers: one per core (`make fast WORKERS=0` runs in one process, for a
# debugger or a -x); each worker has its own temporary folders, ports and databases
WORKERS ?= auto
XDIST := -n $(WORKERS)

$(RUN_STAMP): pyproject.toml constraints.txt setup.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dashboard]'
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

## run: set up (runtime dependencies only) and start the local stack on 127.0.0.1
run: $(RUN_STAMP)
	$(BIN)/healthlog serve

## test: lint, type-check, lint the AWS template and the whole test suite (hypothesis's
## full "ci" profile, the slow tests too)
test: $(STAMP) lint typecheck cfnlint
	HYPOTHESIS_PROFILE=ci $(BIN)/pytest -q $(XDIST)

## fast: the edit loop, about a minute: the unit and contract tests without the slow ones,
## hypothesis's small "dev" profile (tests/conftest.py); no lint, no type-check
fast: $(STAMP)
	HYPOTHESIS_PROFILE=dev $(BIN)/pytest -q $(XDIST) -m "not slow" tests/unit tests/contract

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

## cfnlint: check template.yaml (the AWS SAM deployment) as CloudFormation
cfnlint: $(STAMP)
	$(BIN)/cfn-lint template.yaml

unit: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/pytest -q $(XDIST) tests/unit

## bench: every benchmark, one JSON object each
bench: $(STAMP)
	@for b in bench/bench_*.py; do $(BIN)/python $$b; done

## lock: re-pin constraints.txt from pyproject.toml's ranges
lock:
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv
	.lockvenv/bin/pip install --quiet --upgrade pip
	.lockvenv/bin/pip install --quiet -e '.[dev]'
	.lockvenv/bin/pip freeze --all --exclude-editable | grep -v '^healthlog\|^pip==' > constraints.txt
	rm -rf .lockvenv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
