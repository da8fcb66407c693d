"""The transition table is the code's source of truth, both ways.

Code -> table: the controller's ``move`` refuses any move the table does not list (``UndeclaredTransition``), and
every world checks each move it sees against the table. Table -> code: running the named scenarios of the fault,
stranding, cooperation and CUDA-proof tests in one process, the controller makes every move the table lists; a row no
scenario reaches is either dead (delete it) or untested (add the scenario).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from components.catalog.node_agent import TRANSITIONS, State
from components.node_agent.agent.controller.decisions.writes import UndeclaredTransition, check_transition
from components.node_agent.agent.controller.view import NodeView
from tests.node_agent import test_cuda_proof, test_faults, test_operator_cooperation, test_stranded, test_table_rows
from tests.node_agent.sim import world as sim_world


def _scenarios() -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """Every test function of the three scenario modules, once per combination of its parameters."""
    found: list[tuple[Callable[..., Any], dict[str, Any]]] = []
    for module in (test_faults, test_stranded, test_operator_cooperation, test_table_rows, test_cuda_proof):
        for name, function in sorted(vars(module).items()):
            if not name.startswith("test_") or not inspect.isfunction(function):
                continue
            axes = []
            for mark in getattr(function, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                names, values = mark.args[0], mark.args[1]
                keys = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
                axes.append([dict(zip(keys, v if len(keys) > 1 else (v,), strict=True)) for v in values])
            for combination in itertools.product(*axes):
                found.append((function, {k: v for part in combination for k, v in part.items()}))
    return found


def test_every_transition_of_the_table_is_made_by_the_code() -> None:
    sim_world.OBSERVED.clear()
    for function, args in _scenarios():
        with pytest.MonkeyPatch.context() as patch:  # each scenario's own patches, undone after it
            if "monkeypatch" in inspect.signature(function).parameters:
                args = {**args, "monkeypatch": patch}
            function(**args)
    table = {(t.source.value, t.target.value) for t in TRANSITIONS}
    unreached = sorted(table - sim_world.OBSERVED)
    assert unreached == [], "\n".join(f"{a} -> {b}" for a, b in unreached)
    assert sorted(sim_world.OBSERVED - table - _failures_any_state()) == []


def _failures_any_state() -> set[tuple[str, str]]:
    """Failures every touched state may reach without a row each (the table's note under it)."""
    return {(state.value, State.FAILED.value) for state in State}


def test_a_move_outside_the_table_is_never_written() -> None:
    view = NodeView(
        name="n",
        uid="u",
        rv="1",
        pool="p",
        labels={"gpu-platform.io/node-agent.state": State.DONE.value},
        annotations={},
        unschedulable=False,
        taints=[],
        allocatable={},
        record=None,
        request={},
        report={},
    )
    with pytest.raises(UndeclaredTransition):
        check_transition(view.state, State.SMOKE_TESTING, None)
    check_transition(view.state, State.WAITING_SLOT, None)  # listed: a new desired layout
