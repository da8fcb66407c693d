"""Shared fixtures: one place that sets Pulumi mocks up (several set_mocks calls would clobber each other)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Imported now, not lazily at the end of the session: CPython 3.11 can fail to parse (and so to
# assertion-rewrite) a module imported after Pulumi's RPC threads ran ("AST constructor recursion
# depth mismatch"), which would turn a green run red in the terminal summary.
import hypothesis.internal.observability  # noqa: F401
import pytest
from hypothesis import is_hypothesis_test
from pulumi.runtime import reset_options, set_all_config, set_mocks

import tests.properties  # noqa: F401  (loads the Hypothesis profile before any test is collected)
from components.stack.config import PROJECT
from preview.mocks import PlatformMocks, RecordingMonitor

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    """Fresh mocks for a component test; read ``monitor.registrations`` after the test function returns."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    reset_options()
    recording = RecordingMonitor(PlatformMocks())
    set_mocks(recording.mocks, project=PROJECT, stack="test", preview=True, monitor=recording)
    yield recording
    set_all_config({})
    asyncio.set_event_loop(None)
    loop.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every Hypothesis test ``property``: ``make fuzz`` selects them with ``-m property``."""
    for item in items:
        if is_hypothesis_test(getattr(item, "obj", None)):
            item.add_marker(pytest.mark.property)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print how many mutated stack files the property test ran, and how they ended."""
    module = next((m for name, m in list(sys.modules.items()) if name.endswith("test_mutated_stack_files")), None)
    outcomes = getattr(module, "OUTCOMES", None)
    if outcomes:
        total = sum(outcomes.values())
        summary = ", ".join(f"{name}: {count}" for name, count in sorted(outcomes.items()))
        terminalreporter.write_line(f"mutated stack files previewed: {total} ({summary})")
