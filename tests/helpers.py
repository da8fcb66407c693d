"""Test helpers: stack configs as plain dicts, and config mutation."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.base.problems import StackConfigError
from components.stack.config import parse_stack_config
from components.stack.plan import Plan, plan_stack
from components.yandex.config import with_defaults
from preview.run.runner import ProgramRun, run_program

ROOT = Path(__file__).resolve().parents[1]


def stack_raw(stack: str, *, expand_defaults: bool = True) -> dict[str, Any]:
    """The ``gpu-platform:*`` keys of ``Pulumi.<stack>.yaml`` as a plain dict (prefix dropped).

    By default ``nodeGroupDefaults`` is laid under each group and dropped, so a test can change or
    delete any key of a group as if the group spelled it out (tests/stack/test_config.py checks that
    both forms plan the same).
    """
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    raw = {
        key.split(":", 1)[1]: copy.deepcopy(value)
        for key, value in document["config"].items()
        if key.startswith("gpu-platform:")
    }
    defaults = raw.get("nodeGroupDefaults")
    if expand_defaults and isinstance(defaults, dict):
        raw["nodeGroups"] = with_defaults(defaults, raw.get("nodeGroups", {}))
        del raw["nodeGroupDefaults"]
    return raw


def one_driver(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of a stack config without any pool's own ``driver``: every pool on ``gpuOperator.driver``.

    The dev stack runs two driver branches (NVIDIADriver resources); tests of the single ClusterPolicy
    driver use this variant of it, which is what the stack was before per-pool drivers.
    """
    result = copy.deepcopy(raw)
    for group in result.get("nodeGroups", {}).values():
        if isinstance(group, dict):
            group.pop("driver", None)
    return result


def set_path(document: dict[str, Any], path: str | tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``path`` (dotted, or a tuple of keys) set to ``value``."""
    result = copy.deepcopy(document)
    node: Any = result
    parts = path.split(".") if isinstance(path, str) else list(path)
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return result


def delete_path(document: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``document`` without the dotted ``path``."""
    result = copy.deepcopy(document)
    node: Any = result
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]
    return result


def as_overrides(raw: dict[str, Any]) -> dict[str, Any]:
    """A stack config as ``stack_raw`` gives it, keyed as the stack file keys it (``gpu-platform:<key>``)."""
    return {f"gpu-platform:{key}": value for key, value in raw.items()}


def run_raw(stack: str, raw: dict[str, Any]) -> ProgramRun:
    """The real program of ``stack`` on the whole config ``raw`` under mocks; fails the test if it is refused."""
    run = run_program(stack, overrides=as_overrides(raw))
    assert run.config_error is None, run.config_error
    return run


def plan_raw(raw: dict[str, Any]) -> Plan:
    """The plan of a stack config given as a plain dict: each section checked, then every check across sections."""
    return plan_stack(parse_stack_config(raw))


def refusal(raw: dict[str, Any]) -> list[str]:
    """The problem lines of a refused stack config (fails the test if it is accepted)."""
    with pytest.raises(StackConfigError) as caught:
        plan_raw(raw)
    return [str(problem) for problem in caught.value.problems]


def preview_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m preview ARGS`` in a fresh interpreter, as a user runs it (stdout, stderr and exit code)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "preview", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
