# Every target bootstraps its own virtualenv from nothing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUFF   := $(VENV)/bin/ruff
BENCH  ?=
SEEDS  ?= 20

.PHONY: venv lint fmt test test-fast lint-imports chaos soak demo bench typecheck clean

# the first time (or after pyproject.toml changed) this installs every dependency: about 1-2 min on a cold pip
# cache, each package named as pip collects it (progress, not silence)
$(VENV)/.installed: pyproject.toml
	@echo "== creating $(VENV) and installing gangsched with its dev extras (about 1-2 min on a cold pip cache)"
	$(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --disable-pip-version-check -e '.[dev]' 2>&1 \
		| { grep --line-buffered -E '^(Collecting|Successfully installed|ERROR|error)' || true; }
	touch $@

venv: $(VENV)/.installed

# the static checks, each failing the target: lint rules, formatting, the layers (import-linter), types
# (mypy --strict, [tool.mypy] files)
lint: venv
	$(RUFF) check .
	$(RUFF) format --check .
	$(VENV)/bin/lint-imports --no-logo --no-cache
	$(PY) -m mypy

# rewrite the tree: every fixable lint finding fixed, then formatted (what is left, `make lint` reports)
fmt: venv
	$(RUFF) check --fix-only .
	$(RUFF) format .

# what CI runs (.ci/run): the static checks, then every test, the test files shared by two workers (pytest-xdist;
# each file on one worker, so a module's shared fixture starts once). TEST_WORKERS=0 runs them in this process
TEST_WORKERS ?= 2
test: lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# the layers alone: import-linter's contracts in pyproject.toml [tool.importlinter] (docs/architecture.md "Layers")
lint-imports: venv
	$(VENV)/bin/lint-imports --no-logo --no-cache

# unit tests only (tests/unit; time-based ones on looptime's virtual time): about 25 s. Bytecode caches are
# written even where the environment turns them off (PYTHONDONTWRITEBYTECODE): collecting takes 2 s instead of 5
test-fast: venv
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest tests/unit

# the chaos suite's long run: SEEDS seeds of the operator against an emulator injecting faults (tests/chaos/)
chaos: venv
	GANGSCHED_CHAOS_SEEDS=$(SEEDS) $(PY) -m pytest tests/chaos -rxX

# the soak's long run: SEEDS seeds (1..SEEDS, or a comma-separated list) of the randomized whole-operator soak
# (tests/integration/test_soak.py; `make test` runs three)
soak: venv
	GANGSCHED_SOAK_SEEDS=$(SEEDS) $(PY) -m pytest tests/integration/test_soak.py -rxX

typecheck: venv
	$(PY) -m mypy

demo: venv
	$(PY) -m gangsched demo

bench: venv
	$(PY) -m gangsched bench $(BENCH)

clean:
	rm -rf $(VENV) build *.egg-info operator/*.egg-info
