"""Shared fixtures: one place that sets Pulumi mocks up (several set_mocks calls would clobber each other)."""

from __future__ import annotations

import gc
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Imported now, not lazily at the end of the session: CPython 3.11 can fail to parse (and so to
# assertion-rewrite) a module imported after Pulumi's RPC threads ran ("AST constructor recursion
# depth mismatch"), which would turn a green run red in the terminal summary.
import hypothesis.internal.observability  # noqa: F401
import pytest
from hypothesis import is_hypothesis_test
from pulumi.runtime import reset_options

import tests.properties  # noqa: F401  (loads the Hypothesis profile before any test is collected)
from components.stack.config import PROJECT
from components.stack.garbage_collection import collect_fully_rarely
from preview.render.cache import CACHE_DIR_ENV
from preview.run.mocks import PlatformMocks, RecordingMonitor, mocked_engine
from preview.run.result_cache import RESULT_CACHE_ENV

ROOT = Path(__file__).resolve().parents[1]
# Every preview the tests run, in this repository or in a throw-away copy of it, shares one render
# cache: its keys hold everything a render depends on, so a shared entry is never stale.
os.environ.setdefault(CACHE_DIR_ENV, str(ROOT / ".cache" / "render"))
# The tests' previews are one-off (each in its own project copy or output folder): stored as whole
# results (about 11 MB each) they would fill the bounded cache within one run and push out the renders
# every later preview needs (a Kubeflow render costs seconds). The whole-preview cache is on only where
# it is tested (tests/preview/run/test_result_cache.py).
os.environ.setdefault(RESULT_CACHE_ENV, "off")
# A test process runs the program hundreds of times at the pace ``__main__.py`` sets for one run (most
# tests would otherwise run before the first program sets it): full collections of a heap that holds
# every imported SDK class cost a second each and find next to nothing.
collect_fully_rarely()
# The test processes write bytecode (``__pycache__`` is ignored by git) whatever the machine's
# PYTHONDONTWRITEBYTECODE says: the suite starts about a hundred previews in fresh interpreters, and
# each would otherwise compile the program's modules again (about 0.4 CPU-s apiece).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    """Fresh mocks for a component test; read ``monitor.registrations`` after the test function returns."""
    with mocked_engine(PlatformMocks(), project=PROJECT, stack="test") as recording:
        yield recording


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every Hypothesis test ``property``: ``make fuzz`` selects them with ``-m property``."""
    for item in items:
        if is_hypothesis_test(getattr(item, "obj", None)):
            item.add_marker(pytest.mark.property)


_WORKER_OUTCOMES: Counter[str] = Counter()


def _mutation_outcomes() -> Counter[str]:
    """The outcomes the mutated-stack-file property counted in this process."""
    module = next((m for name, m in list(sys.modules.items()) if name.endswith("test_mutated_stack_files")), None)
    return Counter(getattr(module, "OUTCOMES", None) or {})


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands its counts to the controller; the process drops what is left
    of the program runs that failed on purpose.

    Those runs leave the SDK's futures and tasks behind (a failed registration, the outputs that waited
    on it). With full collections rare, they outlive the tests that made them, and asyncio's log of
    them ("exception was never retrieved", "Task was destroyed but it is pending") would print at the
    process's exit, where it names no test; pytest captured it inside some later test before.
    """
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["mutation_outcomes"] = dict(_mutation_outcomes())
    reset_options()
    logging.getLogger("asyncio").disabled = True
    gc.collect()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller adds up what each worker counted."""
    _WORKER_OUTCOMES.update(getattr(node, "workeroutput", {}).get("mutation_outcomes", {}))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print how many mutated stack files the property test ran, and how they ended."""
    outcomes = _mutation_outcomes() + _WORKER_OUTCOMES
    if outcomes:
        total = sum(outcomes.values())
        summary = ", ".join(f"{name}: {count}" for name, count in sorted(outcomes.items()))
        terminalreporter.write_line(f"mutated stack files previewed: {total} ({summary})")
