"""The driver steps the plan gives the program (``Plan.driver_steps``, ``components.stack.wiring``).

The program registers each step's pieces in order and decides nothing (``test_program_only_wires.py``); what each
step has, under which names, and whose NodePatches its NVIDIADrivers wait for is decided here, from the plan alone,
before any resource exists. The graph these make is checked on the registered resources in
``test_canary_drivers.py``, ``test_bare_metal_drivers.py`` and ``test_dependency_graph.py``.
"""

from __future__ import annotations

from typing import Any

from components.stack.wiring import CANARY, MAIN, MIG, DriverStep
from tests.helpers import delete_path, one_driver, plan_raw, set_path, stack_raw


def _steps(raw: dict[str, Any]) -> dict[str, DriverStep]:
    return {step.name: step for step in plan_raw(raw).driver_steps}


def _canary_dev() -> dict[str, Any]:
    raw = set_path(stack_raw("dev"), "gpuOperator.driver.version", "580.105.08")
    raw = set_path(raw, "nodeGroups.v100.driver", {"canary": True})
    return set_path(raw, "nodeGroups.a100.driver", {"version": "580.105.08", "cuda": "13.0"})


def _driverless_prod() -> dict[str, Any]:
    raw = delete_path(stack_raw("prod"), "gpuOperator.hostDriver")
    raw = set_path(raw, "gpuOperator.driver", {"owner": "operator", "version": "580.95.05"})
    raw = set_path(raw, "bareMetal.hostPreparation.configureContainerd", False)
    return set_path(raw, "bareMetal.nodes.0.driver", {"version": "595.91.07", "cuda": "13.0", "canary": True})


def test_per_pool_drivers_without_a_canary_are_one_main_step() -> None:
    plan = plan_raw(stack_raw("dev"))
    (step,) = plan.driver_steps
    assert step.name == MAIN
    assert step.drivers is not None and step.drivers.name == "gpu-drivers"
    assert set(step.drivers.objects) == {"a100", "v100"}
    # The pools its NVIDIADrivers select; Yandex node groups carry the label from creation, so no patch is found.
    assert step.drivers.nodes == tuple(pool.name for pool in plan.pools)
    assert step.drivers.timeout_seconds == plan.config.gpu_operator.timeout_seconds
    assert step.proof is not None and step.proof.name == "gpu-proof-main" and not step.proof.after_every_label
    assert step.proof.settings == plan.proof_settings(MAIN, plan.operator.driver.later_groups)  # type: ignore[union-attr]
    assert step.smoke_test is not None and step.smoke_test.name == "gpu-smoke-test"
    assert step.smoke_test.targets == plan.smoke_targets


def test_a_canary_comes_first_with_its_own_names_and_targets() -> None:
    steps = _steps(_canary_dev())
    assert list(steps) == [CANARY, MAIN]
    canary, main = steps[CANARY], steps[MAIN]
    assert canary.drivers is not None and canary.drivers.name == "gpu-drivers-canary"
    assert set(canary.drivers.objects) == {"v100"}
    assert main.drivers is not None and set(main.drivers.objects) == {"a100"}
    assert canary.proof is not None and canary.proof.name == "gpu-proof-canary"
    assert canary.smoke_test is not None and canary.smoke_test.name == "gpu-smoke-test-canary"
    assert {t.pool for t in canary.smoke_test.targets} == {"v100"}
    assert main.smoke_test is not None and {t.pool for t in main.smoke_test.targets} == {"a100"}


def test_one_driver_has_no_nvidiadriver_but_its_proof() -> None:
    (step,) = plan_raw(one_driver(stack_raw("dev"))).driver_steps
    assert step.name == MAIN and step.drivers is None
    assert step.proof is not None and step.smoke_test is not None


def test_without_the_smoke_test_there_is_no_proof_and_no_smoke_job() -> None:
    steps = _steps(set_path(_canary_dev(), "smokeTest.enabled", False))
    assert list(steps) == [CANARY, MAIN]
    assert all(step.proof is None and step.smoke_test is None for step in steps.values())
    assert all(step.drivers is not None for step in steps.values())


def test_host_owned_drivers_prove_the_mig_layouts_after_every_label() -> None:
    (step,) = plan_raw(stack_raw("prod")).driver_steps
    assert step.name == MIG and step.drivers is None
    assert step.proof is not None and step.proof.name == "gpu-proof-mig" and step.proof.after_every_label
    assert step.smoke_test is not None and step.smoke_test.name == "gpu-smoke-test"


def test_bare_metal_nvidiadrivers_wait_for_the_patches_of_their_own_nodes() -> None:
    steps = _steps(_driverless_prod())
    canary, main = steps[CANARY], steps[MAIN]
    assert canary.drivers is not None and canary.drivers.nodes == ("gpu-node-1",)
    assert main.drivers is not None and main.drivers.nodes == ("gpu-node-2", "gpu-node-3")


def test_no_operator_no_steps() -> None:
    assert plan_raw(set_path(stack_raw("dev"), "gpuOperator.enabled", False)).driver_steps == ()


def test_what_the_program_reads_besides_the_steps() -> None:
    plan = plan_raw(stack_raw("dev"))
    assert plan.gpu_models == sorted({pool.model.key for pool in plan.pools})
    assert plan.operator_namespace == plan.config.gpu_operator.namespace
    assert plan.cluster_name == plan.config.cluster.name
    assert plan.kubeflow is plan.config.kubeflow
    assert plan_raw(set_path(stack_raw("dev"), "kubeflow.enabled", False)).kubeflow is None
    agent = plan_raw(set_path(stack_raw("prod"), "nodeAgent.migLayout", True))
    assert set(agent.node_agent_mig_resources) == {pool.name for pool in agent.node_agent_pools} & set(agent.mig.pools)
    assert agent.node_agent_mig_resources
