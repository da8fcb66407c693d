"""The outputs contract other teams depend on, pinned per example stack.

A change to any output shows up here as a failing diff. If it is intended: add keys freely, but
rename or remove one only with a new ``contractVersion`` (and docs/outputs.md); then refresh the
pinned files with ``UPDATE_CONTRACTS=1 make test``.
"""

from __future__ import annotations

import json
import os

import pytest

from components.stack.outputs import CONTRACT_VERSION
from preview.run.runner import run_program
from preview.run.stack_file import available_stacks
from tests.helpers import ROOT

CONTRACTS = ROOT / "tests" / "contracts"
TOP_LEVEL_KEYS = {
    "contractVersion",
    "cluster",
    "kubeconfig",
    "cuda",
    "gpuPools",
    "gpuNodeGroups",
    "gpuOperator",
    "drivers",
    "kubeflow",
    "mig",
    "observability",
    "nodeAgent",
}


@pytest.mark.parametrize("stack", available_stacks(ROOT))
def test_outputs_match_the_pinned_contract(stack: str) -> None:
    outputs = run_program(stack).outputs
    pinned = CONTRACTS / f"{stack}-outputs.json"
    text = json.dumps(outputs, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_CONTRACTS") == "1":
        pinned.write_text(text)
    assert pinned.exists(), f"no pinned contract for stack {stack}; run UPDATE_CONTRACTS=1 make test"
    assert json.loads(pinned.read_text()) == outputs


@pytest.mark.parametrize("stack", available_stacks(ROOT))
def test_contract_shape(stack: str) -> None:
    run = run_program(stack)
    assert set(run.outputs) == TOP_LEVEL_KEYS
    assert run.outputs["contractVersion"] == CONTRACT_VERSION
    assert run.secret_output_names == ["kubeconfig"]
    for name, pool in run.outputs["gpuPools"].items():
        assert set(pool["scheduling"]) == {"nodeSelector", "tolerations"}, name
        resource = next(iter(pool["podResources"]["limits"]))
        assert resource in pool["resourcesPerNode"], name
        assert resource in run.outputs["gpuOperator"]["gpuResourceNames"], name
