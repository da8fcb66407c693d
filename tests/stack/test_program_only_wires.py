"""The program wires components from the plan; it decides nothing itself (issue: the plan owns every decision).

A decision is a function of the config: which labels a node gets, what a host must carry, each pool's budget,
what a proof checks. Such functions live in the plan (``components.stack.plan``) and the modules it calls; the
program may import components and their argument types, names and the plan, and nothing that computes.
"""

from __future__ import annotations

import ast
import importlib
import inspect

from tests.helpers import ROOT

PROGRAM = ROOT / "components" / "stack" / "program.py"
#: Functions the program may call that decide nothing: printing the plan's warnings, and looking up the existing
#: Yandex cluster (a provider data source, answered by the cloud, not by the config).
WIRING_HELPERS = {("components.base.runtime_mode", "warning"), ("components.yandex.cluster", "find_cluster")}


def _imported_names() -> list[tuple[str, str]]:
    tree = ast.parse(PROGRAM.read_text())
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("components.")
        for alias in node.names
    ]


def test_the_program_imports_no_function_that_decides_from_config() -> None:
    deciding = []
    for module_name, name in _imported_names():
        module = importlib.import_module(module_name)
        value = getattr(module, name, None) or importlib.import_module(f"{module_name}.{name}")
        if inspect.isfunction(value) and (module_name, name) not in WIRING_HELPERS:
            deciding.append(f"{module_name}.{name}")
    assert deciding == [], f"decide in the plan and pass the result: {deciding}"


def test_the_program_reads_no_decision_helper_of_another_module_by_attribute() -> None:
    """``from x import module`` then ``module.decide(...)`` is the same thing by another door."""
    tree = ast.parse(PROGRAM.read_text())
    modules = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "components.base"
        for alias in node.names
    }
    calls = [
        f"{node.func.value.id}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in modules
    ]
    assert calls == ["dependency_graph.install"]
