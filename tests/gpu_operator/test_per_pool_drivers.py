"""A driver per pool: NVIDIADriver resources rendered with the real chart and validated against its CRD.

The dev stack runs its V100 group on R580 (the last branch for Volta) and its A100 group on R595 for
CUDA 13.2. These tests run the whole program under mocks, render the Helm release it registers with the
real pinned chart (``helm template``), and validate every NVIDIADriver object the program declares
against the openAPI schema of the chart's own CRD (``crds/nvidia.com_nvidiadrivers.yaml``) with
``jsonschema``. The CRD's CEL rules are not evaluated by a JSON-schema validator; the one that matters
here (a default resource must not have a nodeSelector) is asserted directly.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from components.base.problems import StackConfigError
from components.catalog import nvidia_driver as crd
from components.catalog.names import DRIVER_GROUP_LABEL, NVIDIA_DRIVER_TYPE
from preview.diff.driver_plan import driver_upgrade_plan
from preview.run.runner import ProgramRun
from tests.helpers import plan_raw, refusal, run_raw, set_path, stack_raw
from tests.support.chart_render import PINNED_CHART, render_release

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"
JOB = "kubernetes:batch/v1:Job"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_raw("dev", stack_raw("dev"))


@pytest.fixture(scope="module")
def crd_schema() -> dict[str, Any]:
    document = yaml.safe_load((PINNED_CHART / "crds" / "nvidia.com_nvidiadrivers.yaml").read_text())
    (version,) = [v for v in document["spec"]["versions"] if v["name"] == crd.API_VERSION.split("/")[1]]
    assert document["spec"]["names"]["kind"] == crd.KIND and document["spec"]["scope"] == "Cluster"
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _drivers(run: ProgramRun) -> dict[str, dict[str, Any]]:
    """NVIDIADriver name -> the object the program declares."""
    return {r.inputs["metadata"]["name"]: r.inputs for r in run.by_type(NVIDIA_DRIVER_TYPE)}


def _node_labels(run: ProgramRun) -> dict[str, dict[str, str]]:
    """Node group -> the labels its nodes get."""
    return {r.name.removeprefix("gpu-").removesuffix("-group"): r.inputs["nodeLabels"] for r in run.by_type(NODE_GROUP)}


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_two_branches_give_one_nvidiadriver_each_selecting_only_its_pool(dev: ProgramRun) -> None:
    drivers = _drivers(dev)
    assert {name: d["spec"]["version"] for name, d in drivers.items()} == {
        "gpu-platform-a100": "595.91.07",
        "gpu-platform-v100": "580.95.05",
    }
    labels = _node_labels(dev)
    for name, driver in drivers.items():
        selected = [
            group for group, node_labels in labels.items() if _selects(driver["spec"]["nodeSelector"], node_labels)
        ]
        assert selected == [name.removeprefix("gpu-platform-")], (name, selected)
        assert driver["spec"]["default"] is False


def test_every_nvidiadriver_is_valid_against_the_chart_crd(dev: ProgramRun, crd_schema: dict[str, Any]) -> None:
    for name, driver in _drivers(dev).items():
        jsonschema.validate(driver, crd_schema)  # raises with the failing path
        assert set(driver["spec"]) >= {"default", "driverType", "image"}, name  # the CRD's required keys


def test_a_schema_violation_is_caught(dev: ProgramRun, crd_schema: dict[str, Any]) -> None:
    """The validator really checks: a kernel module type the CRD does not allow fails it."""
    driver = next(iter(_drivers(dev).values()))
    broken = {**driver, "spec": {**driver["spec"], "kernelModuleType": "closed"}}
    with pytest.raises(jsonschema.ValidationError, match="closed"):
        jsonschema.validate(broken, crd_schema)


def test_the_real_chart_switches_the_clusterpolicy_to_nvidiadrivers_and_deploys_no_default(dev: ProgramRun) -> None:
    rendered = render_release(dev.one(RELEASE, "gpu-operator-release").inputs)
    driver = rendered.cluster_policy["driver"]
    assert driver["enabled"] is True and driver["useNvidiaDriverCRD"] is True
    assert "version" not in driver  # the chart writes the ClusterPolicy's driver only without NVIDIADrivers
    assert driver["upgradePolicy"]["autoUpgrade"] is True  # the upgrade controller stays on
    assert rendered.all("NVIDIADriver") == []  # no default resource overlapping ours


def test_our_objects_carry_what_the_charts_default_object_would(dev: ProgramRun) -> None:
    """Rendering the same values with the chart's default resource on gives its image, manager and tolerations."""
    inputs = dev.one(RELEASE, "gpu-operator-release").inputs
    values = {**inputs["values"], "driver": {**inputs["values"]["driver"], "version": "595.91.07"}}
    values["driver"]["nvidiaDriverCRD"] = {"enabled": True, "deployDefaultCR": True}
    (default,) = render_release({**inputs, "values": values}).all("NVIDIADriver")
    assert default["spec"]["default"] is True and "nodeSelector" not in default["spec"]
    for driver in _drivers(dev).values():
        for key in ("repository", "image", "driverType", "rdma", "tolerations"):
            assert driver["spec"][key] == default["spec"][key], key
        for key in ("repository", "image", "version"):
            assert driver["spec"]["manager"][key] == default["spec"]["manager"][key], key
        assert driver["spec"]["upgradePolicy"].keys() == default["spec"]["upgradePolicy"].keys()


def test_no_step_waits_on_an_nvidiadrivers_status(dev: ProgramRun) -> None:
    """Its status has no observedGeneration: after a change pulumi up would read the old ready and move on."""
    drivers = dev.by_type(NVIDIA_DRIVER_TYPE)
    assert drivers
    for registration in drivers:
        assert "pulumi.com/waitFor" not in registration.inputs["metadata"]["annotations"]


def test_smoke_jobs_wait_for_their_pools_declared_driver_after_the_steps_proof(dev: ProgramRun) -> None:
    drivers = {r.inputs["spec"]["nodeSelector"][DRIVER_GROUP_LABEL]: r for r in dev.by_type(NVIDIA_DRIVER_TYPE)}
    proof = dev.one(JOB, "gpu-proof-main-job")
    assert {driver.urn for driver in drivers.values()} <= set(proof.dependencies)
    smoke = [job for job in dev.by_type(JOB) if job is not proof]
    assert smoke
    for job in smoke:
        pool = job.inputs["metadata"]["labels"]["gpu-platform.io/pool"]
        (check,) = job.inputs["spec"]["template"]["spec"]["initContainers"]
        assert f'want="{drivers[pool].inputs["spec"]["version"]}"' in check["command"][2]
        assert proof.urn in job.dependencies  # after every node of the step is proven, not after a status


def test_a_single_driver_keeps_the_clusterpolicy_driver() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver", {"cuda": "12.6"})
    run = run_raw("dev", raw)
    assert run.by_type(NVIDIA_DRIVER_TYPE) == []
    assert all(DRIVER_GROUP_LABEL not in labels for labels in _node_labels(run).values())
    driver = render_release(run.one(RELEASE, "gpu-operator-release").inputs).cluster_policy["driver"]
    assert driver["useNvidiaDriverCRD"] is False and driver["version"] == "580.95.05"
    assert run.outputs["drivers"]["mode"] == "clusterPolicy"


def test_outputs_give_each_pools_driver_and_newest_cuda(dev: ProgramRun) -> None:
    pools = dev.outputs["drivers"]["pools"]
    assert {name: (p["driverVersion"], p["maxCuda"], p["cuda"]) for name, p in pools.items()} == {
        "a100": ("595.91.07", "13.2", "13.2"),
        "v100": ("580.95.05", "13.0", "12.6"),
    }
    # maxParallelUpgrades 1 bounds both pools: one node per wave (a100 at most 2 nodes, v100 at most 3).
    assert {name: p["waves"] for name, p in pools.items()} == {"a100": 2, "v100": 3}


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            "nodeGroups.v100.driver",
            {"version": "595.91.07"},
            "nodeGroups.v100.driver.version: driver 595.91.07 (R595) does not support Volta GPUs; use an R580 driver "
            "or older (R580 is the last branch that supports Volta (NVIDIA feature deprecation schedule)); "
            "used by nodeGroups.v100",
        ),
        (
            "nodeGroups.a100.driver",
            {"version": "580.95.05", "cuda": "13.2"},
            "nodeGroups.a100.driver.version: driver 580.95.05 is too old for CUDA 13.2 workloads; CUDA 13.2 needs "
            "driver 595.45.04 or newer (strict check); nodeGroups.a100.driver.cuda asks for it",
        ),
        (
            # The pool asks for CUDA 13.2 and inherits the stack's 580: refused at the pool's own key, which
            # the file has (the stack default suits every other pool).
            "nodeGroups.a100.driver",
            {"cuda": "13.2"},
            "nodeGroups.a100.driver.cuda: driver 580.95.05 is too old for CUDA 13.2 workloads; CUDA 13.2 needs "
            "driver 595.45.04 or newer (strict check); pool a100 inherits the driver from "
            "gpuOperator.driver.version: set nodeGroups.a100.driver.version for this pool, or lower its cuda",
        ),
        (
            "nodeGroups.a100.driver",
            {"cuda": "12.4"},
            "nodeGroups.a100.driver.cuda: 12.4 is below cuda.version 12.6: the stack-wide level applies to every "
            "pool; set 12.6 or newer, or leave it unset",
        ),
        (
            "nodeGroups.a100.driver",
            {"version": "595"},
            "nodeGroups.a100.driver.version: '595' is not a full driver version such as 580.95.05 (a branch like "
            "580 names no driver)",
        ),
        (
            "nodeGroups.a100.driver",
            {"upgradePolicy": {"maxUnavailable": "0%"}},
            "nodeGroups.a100.driver.upgradePolicy.maxUnavailable: '0%' allows no node of NVIDIADriver "
            "gpu-platform-a100 (pools a100; 2 nodes in one budget) to be upgraded at once, so a driver change could "
            "never progress; allow at least one node",
        ),
        (
            "nodeGroups.a100.driver",
            {"upgradePolicy": {"autoUpgrade": False}},
            "nodeGroups.a100.driver.upgradePolicy.autoUpgrade: false leaves NVIDIADriver gpu-platform-a100 (pools "
            "a100) without the operator's upgrade controller: with NVIDIADriver resources nothing else replaces a "
            "driver pod, and on the move from the ClusterPolicy driver the old pod keeps the node while the new one "
            "stays Pending (pod anti-affinity), so the driver change never completes; set true (maxParallelUpgrades "
            "and maxUnavailable pace it)",
        ),
        (
            "nodeGroups.v100.driver",
            {"kernelModuleType": "open"},
            "nodeGroups.v100.driver.kernelModuleType: open kernel modules need Turing or newer; Volta (V100) needs "
            "proprietary or auto",
        ),
    ],
)
def test_bad_pool_drivers_are_refused_with_one_line(path: str, value: Any, expected: str) -> None:
    assert refusal(set_path(stack_raw("dev"), path, value)) == [expected]


def test_a_pool_driver_under_host_owned_drivers_is_refused() -> None:
    raw = set_path(stack_raw("dev"), "gpuOperator.driver", {"owner": "host"})
    raw = set_path(raw, "gpuOperator.hostDriver", {"version": "580.95.05"})
    for group in ("v100", "a100"):
        raw = set_path(raw, f"nodeGroups.{group}.gpuEnvironment", "runc_drivers_cuda")
    lines = refusal(raw)
    assert lines == [
        "nodeGroups.a100.driver: sets a pool's own driver, but the hosts own the driver (gpuOperator.driver.owner: "
        "host), so the GPU Operator installs none; remove it, or set gpuOperator.driver.owner: operator"
    ]


def test_the_default_cr_cel_rule_holds(dev: ProgramRun) -> None:
    """The CRD's CEL rule (a default resource has no nodeSelector), which JSON schema cannot evaluate."""
    for driver in _drivers(dev).values():
        assert not (driver["spec"]["default"] and driver["spec"].get("nodeSelector"))


def test_a_pools_upgrade_policy_overrides_the_stacks_key_by_key() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver.upgradePolicy", {"maxParallelUpgrades": 2})
    drivers = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["upgradePolicy"]
        for r in run_raw("dev", raw).by_type(NVIDIA_DRIVER_TYPE)
    }
    assert drivers["gpu-platform-a100"]["maxParallelUpgrades"] == 2
    assert drivers["gpu-platform-a100"]["drain"]["enable"] is True  # the stack's, kept (the chart default is false)
    assert drivers["gpu-platform-v100"]["maxParallelUpgrades"] == 1


def test_node_group_defaults_give_every_group_the_same_cuda_level() -> None:
    raw = stack_raw("dev", expand_defaults=False)
    raw["nodeGroupDefaults"]["driver"] = {"cuda": "13.0"}
    del raw["nodeGroups"]["a100"]["driver"]["cuda"]
    pools = run_raw("dev", raw).outputs["drivers"]["pools"]
    assert (pools["v100"]["cuda"], pools["a100"]["cuda"]) == ("13.0", "13.0")
    # the A100 group keeps its own version next to the inherited CUDA level (maps merge key by key)
    assert pools["a100"]["driverVersion"] == "595.91.07"


def test_pools_with_the_same_resolved_driver_share_one_nvidiadriver() -> None:
    """Three distinct pools, two drivers: one resource per distinct driver, named after its first pool."""
    raw = stack_raw("dev")
    raw["nodeGroups"]["a100b"] = {**raw["nodeGroups"]["a100"], "mig": None}
    run = run_raw("dev", raw)
    drivers = _drivers(run)
    assert sorted(drivers) == ["gpu-platform-a100", "gpu-platform-v100"]
    labels = _node_labels(run)
    assert labels["a100"][DRIVER_GROUP_LABEL] == labels["a100b"][DRIVER_GROUP_LABEL] == "a100"
    assert drivers["gpu-platform-a100"]["metadata"]["annotations"]["gpu-platform.io/pools"] == "a100,a100b"


def test_a_mirrored_driver_registry_reaches_every_nvidiadriver_and_the_gate_sees_it() -> None:
    """extraValues driver.repository (an air-gapped mirror) applies to the NVIDIADrivers as to the chart's own."""
    from preview.gate.evaluate import evaluate

    raw = set_path(
        stack_raw("dev"), "gpuOperator.extraValues", {"driver": {"repository": "registry.example.com/nvidia"}}
    )
    run = run_raw("dev", raw)
    assert {d["spec"]["repository"] for d in _drivers(run).values()} == {"registry.example.com/nvidia"}
    flagged = {
        f.resource
        for f in evaluate(run.registrations).mandatory
        if f.policy == "gpu-operator-images-allowed-registries"
    }
    assert f"{NVIDIA_DRIVER_TYPE}::gpu-drivers-a100" in flagged and f"{NVIDIA_DRIVER_TYPE}::gpu-drivers-v100" in flagged


def test_no_node_at_a_time_is_accepted_when_the_clusterpolicys_upgrade_controller_is_off() -> None:
    """maxUnavailable 0% only stalls automatic upgrades: with autoUpgrade false nothing waits on it (one driver)."""
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver", {"cuda": "12.6"})
    raw = set_path(raw, "gpuOperator.driver.upgradePolicy", {"autoUpgrade": False, "maxUnavailable": "0%"})
    run = run_raw("dev", raw)
    assert run.outputs["drivers"]["mode"] == "clusterPolicy"
    assert run.outputs["drivers"]["pools"]["a100"]["waves"] is None


def test_two_pools_on_one_driver_are_one_budget() -> None:
    """The ClusterPolicy's driver: the upgrade controller scales maxUnavailable over every managed node at once."""
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver", {"cuda": "12.6"})
    outputs = run_raw("dev", raw).outputs
    drivers = outputs["drivers"]
    printed = [line.strip() for line in driver_upgrade_plan(None, outputs) if line.startswith("    ")]
    assert printed[0].endswith(
        "2 node(s), one budget with 5 node(s) of ClusterPolicy, 5 wave(s) at maxParallelUpgrades 1, maxUnavailable 25%"
    )
    # v100 (3 nodes) + a100 (2 nodes) = 5 nodes; 25% of 5 rounds up to 2, maxParallelUpgrades 1 -> 5 waves, not 3 and 2.
    assert {name: p["waves"] for name, p in drivers["pools"].items()} == {"a100": 5, "v100": 5}
    assert drivers["budgets"] == {
        "ClusterPolicy": {
            "step": 1,
            "pools": ["a100", "v100"],
            "nodes": 5,
            "autoUpgrade": True,
            "maxParallelUpgrades": 1,
            "maxUnavailable": "25%",
            "nodesPerWave": 1,
            "waves": 5,
        }
    }


def test_each_nvidiadriver_is_its_own_budget_with_its_own_policy() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver.upgradePolicy", {"maxParallelUpgrades": 0})
    budgets = run_raw("dev", raw).outputs["drivers"]["budgets"]
    assert set(budgets) == {"gpu-platform-a100", "gpu-platform-v100"}
    # a100: no parallel limit, 25% of its own 2 nodes rounds up to 1 -> 2 waves; v100 keeps 1 at a time over 3.
    assert (budgets["gpu-platform-a100"]["nodesPerWave"], budgets["gpu-platform-a100"]["waves"]) == (1, 2)
    assert (budgets["gpu-platform-v100"]["nodes"], budgets["gpu-platform-v100"]["waves"]) == (3, 3)


@pytest.mark.parametrize(
    ("per_pool", "crd_values"),
    [
        (False, {"enabled": True, "deployDefaultCR": False}),  # no resource at all: every GPU node without a driver
        (True, {"deployDefaultCR": True}),
        (True, {"enabled": False}),  # the ClusterPolicy would ignore the NVIDIADriver resources
    ],
)
def test_extra_values_may_not_change_who_selects_the_nodes(per_pool: bool, crd_values: dict[str, object]) -> None:
    raw = stack_raw("dev") if per_pool else set_path(stack_raw("dev"), "nodeGroups.a100.driver", {"cuda": "12.6"})
    raw = set_path(raw, "gpuOperator.extraValues", {"driver": {"nvidiaDriverCRD": crd_values}})
    with pytest.raises(StackConfigError) as caught:
        plan_raw(raw)
    (message,) = [line for line in str(caught.value).splitlines() if "nvidiaDriverCRD" in line]
    assert message.strip().startswith("gpuOperator.extraValues.driver.nvidiaDriverCRD: is set by gpu-platform")
    assert "a node no NVIDIADriver selects gets no driver" in message
