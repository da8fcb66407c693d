"""The plan is computed once per run: pools and the MIG plan are derived once, then only read."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from components.stack import plan as plan_module
from preview.run.runner import run_program


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count calls of ``name`` wherever the program imported it (every module bound to the same function)."""
    calls: list[int] = []
    original: Callable[..., Any] = getattr(plan_module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        ours = (getattr(module, "__name__", "") or "").startswith(("components", "preview"))
        if ours and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, wrapper)
    return calls


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_pools_and_the_mig_plan_are_computed_once_per_run(monkeypatch: pytest.MonkeyPatch, stack: str) -> None:
    pools = _counting(monkeypatch, "gpu_pools")
    mig = _counting(monkeypatch, "plan_mig")
    values = _counting(monkeypatch, "build_values")
    run = run_program(stack)
    assert run.config_error is None, run.config_error
    assert run.outputs["gpuPools"], "the stack has GPU pools"
    assert (len(pools), len(mig), len(values)) == (1, 1, 1)
