"""A prod variant on driverless bare-metal hosts: the GPU Operator owns the driver, a driver per node, a canary node.

Built from ``Pulumi.prod.yaml`` with overrides (the committed prod stack keeps its host-installed driver):
``gpuOperator.driver.owner: operator`` declares the hosts driverless, gpu-node-1 is the canary on a newer
branch, gpu-node-2 and gpu-node-3 stay on the stack's driver. The NVIDIADriver objects are validated
against the CRD of the real pinned chart, the release is rendered with the real chart, and the canary
order is read from the Pulumi dependencies the real program registers under mocks.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from components.catalog import nvidia_driver as crd
from components.catalog.names import DRIVER_GROUP_LABEL, NVIDIA_DRIVER_TYPE
from preview.run.runner import ProgramRun
from tests.helpers import delete_path, refusal, run_raw, set_path, stack_raw
from tests.support.chart_render import PINNED_CHART, render_release

RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
COMMAND = "command:remote:Command"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
CANARY_DRIVER = "595.91.07"
STACK_DRIVER = "580.95.05"


def _driverless_prod() -> dict[str, Any]:
    """prod on driverless hosts: the operator's driver, its toolkit, gpu-node-1 the canary on a newer branch."""
    raw = delete_path(stack_raw("prod"), "gpuOperator.hostDriver")
    raw = set_path(raw, "gpuOperator.driver", {"owner": "operator", "version": STACK_DRIVER})
    raw = set_path(raw, "bareMetal.hostPreparation.configureContainerd", False)
    return set_path(raw, "bareMetal.nodes.0.driver", {"version": CANARY_DRIVER, "cuda": "13.0", "canary": True})


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_raw("prod", _driverless_prod())


@pytest.fixture(scope="module")
def crd_schema() -> dict[str, Any]:
    document = yaml.safe_load((PINNED_CHART / "crds" / "nvidia.com_nvidiadrivers.yaml").read_text())
    (version,) = [v for v in document["spec"]["versions"] if v["name"] == crd.API_VERSION.split("/")[1]]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _drivers(run: ProgramRun) -> dict[str, Any]:
    """The driver group each NVIDIADriver selects -> its registration."""
    return {r.inputs["spec"]["nodeSelector"][DRIVER_GROUP_LABEL]: r for r in run.by_type(NVIDIA_DRIVER_TYPE)}


def _labels(run: ProgramRun) -> dict[str, dict[str, str]]:
    """Bare-metal node -> the labels its NodePatch applies."""
    return {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]
        for r in run.by_type(NODE_PATCH)
        if r.name.startswith("gpu-nodes-")
    }


def _jobs(run: ProgramRun, node: str) -> list[Any]:
    return [r for r in run.by_type(JOB) if r.inputs["metadata"]["labels"].get("gpu-platform.io/pool") == node]


def test_one_nvidiadriver_per_driver_each_selecting_only_its_nodes(prod: ProgramRun) -> None:
    drivers = _drivers(prod)
    assert {group: r.inputs["spec"]["version"] for group, r in drivers.items()} == {
        "gpu-node-1": CANARY_DRIVER,
        "gpu-node-2": STACK_DRIVER,
    }
    labels = _labels(prod)
    selected = {
        group: sorted(node for node, node_labels in labels.items() if node_labels.get(DRIVER_GROUP_LABEL) == group)
        for group in drivers
    }
    assert selected == {"gpu-node-1": ["gpu-node-1"], "gpu-node-2": ["gpu-node-2", "gpu-node-3"]}
    assert labels["gpu-node-3"]["gpu-platform.io/node-group"] == "h100"  # the node's own labels stay
    patches = {r.inputs["metadata"]["name"]: r.urn for r in prod.by_type(NODE_PATCH)}
    for group, driver in drivers.items():  # the labels come after the release: each driver waits for its nodes'
        assert {patches[node] for node in selected[group]} <= set(driver.dependencies), group


def test_every_nvidiadriver_is_valid_against_the_chart_crd(prod: ProgramRun, crd_schema: dict[str, Any]) -> None:
    for registration in prod.by_type(NVIDIA_DRIVER_TYPE):
        jsonschema.validate(registration.inputs, crd_schema)
        assert "pulumi.com/waitFor" not in registration.inputs["metadata"]["annotations"]  # the proof Job gates


def test_the_real_chart_runs_the_operators_driver_and_toolkit_through_nvidiadrivers(prod: ProgramRun) -> None:
    rendered = render_release(prod.one(RELEASE, "gpu-operator-release").inputs)
    policy = rendered.cluster_policy
    assert policy["driver"]["enabled"] is True and policy["driver"]["useNvidiaDriverCRD"] is True
    assert policy["toolkit"]["enabled"] is True  # the operator's toolkit knows its driver root
    assert rendered.all("NVIDIADriver") == []  # no default resource overlapping ours


def test_canary_node_then_its_smoke_jobs_then_the_other_nodes(prod: ProgramRun) -> None:
    release = prod.one(RELEASE, "gpu-operator-release")
    drivers = _drivers(prod)
    canary, rest = drivers["gpu-node-1"], drivers["gpu-node-2"]
    canary_jobs = _jobs(prod, "gpu-node-1")
    rest_jobs = [*_jobs(prod, "gpu-node-2"), *_jobs(prod, "gpu-node-3")]
    assert canary_jobs and rest_jobs
    canary_proof, rest_proof = prod.one(JOB, "gpu-proof-canary-job"), prod.one(JOB, "gpu-proof-main-job")
    assert release.urn in canary.dependencies
    assert canary.urn in canary_proof.dependencies and canary_proof.urn in rest.dependencies
    for job in canary_jobs:
        assert canary_proof.urn in job.dependencies  # the canary node proven first
        assert job.urn in rest.dependencies  # the other nodes' driver waits for every canary Job
        assert rest.urn not in job.dependencies
    assert rest.urn in rest_proof.dependencies
    for job in rest_jobs:
        assert rest_proof.urn in job.dependencies
    assert rest.urn not in canary.dependencies
    # Each Job first waits for its node's declared driver.
    for job in canary_jobs:
        assert CANARY_DRIVER in yaml.safe_dump(job.inputs["spec"]["template"]["spec"]["initContainers"])


def test_host_preparation_checks_that_no_host_driver_is_there_and_leaves_the_services_to_the_container(
    prod: ProgramRun,
) -> None:
    steps = [c.name.rsplit("gpu-node-1-", 1)[1] for c in prod.by_type(COMMAND) if "-gpu-node-1-" in c.name]
    assert steps == ["nouveau", "sysctl", "driver-check"]  # no nvidia-services, no container-toolkit
    check = prod.one(COMMAND, "host-preparation-gpu-node-1-driver-check").inputs["create"]
    assert "export HOST_DRIVER=absent\n" in check and "export OPERATOR_DRIVER_ROOT=/run/nvidia/driver\n" in check
    assert "export EXPECTED_DRIVER_VERSION=''\n" in check and "export REQUIRED_MIN_DRIVER=''\n" in check
    release = prod.one(RELEASE, "gpu-operator-release")
    assert prod.one(COMMAND, "host-preparation-gpu-node-3-driver-check").urn in release.dependencies


def test_the_drivers_output_gives_the_order_and_each_nodes_driver(prod: ProgramRun) -> None:
    drivers = prod.outputs["drivers"]
    assert drivers["order"] == [["gpu-node-1"], ["gpu-node-2", "gpu-node-3"]]
    pools = drivers["pools"]
    assert pools["gpu-node-1"]["canary"] is True and pools["gpu-node-1"]["step"] == 1
    assert (pools["gpu-node-1"]["driverVersion"], pools["gpu-node-1"]["maxCuda"]) == (CANARY_DRIVER, "13.2")
    assert {(pools[n]["driverVersion"], pools[n]["driverResource"]) for n in ("gpu-node-2", "gpu-node-3")} == {
        (STACK_DRIVER, "gpu-platform-gpu-node-2")
    }
    assert drivers["owner"] == "operator" and drivers["mode"] == "nvidiaDriver"
    # gpu-node-2 and gpu-node-3 share one NVIDIADriver: one budget of 2 nodes, 25% -> 1 at a time, 2 waves.
    assert pools["gpu-node-3"]["step"] == 2 and pools["gpu-node-3"]["waves"] == 2


def test_the_preview_prints_the_canary_node_first(prod: ProgramRun) -> None:
    from preview.diff.driver_plan import driver_upgrade_plan

    lines = [line.strip() for line in driver_upgrade_plan(None, prod.outputs)]
    steps = [line.split(":")[0] for line in lines[1:]]
    assert steps == ["step 1 (canary)", "gpu-node-1", "step 2 (rest)", "gpu-node-2", "gpu-node-3"]
    assert lines[2].startswith(f"gpu-node-1: driver {CANARY_DRIVER} (installs)")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            "gpuOperator.hostDriver",
            {"version": STACK_DRIVER},
            "gpuOperator.hostDriver: must be absent with gpuOperator.driver.owner: operator on bare metal",
        ),
        (
            "bareMetal.hostPreparation.configureContainerd",
            True,
            "bareMetal.hostPreparation.configureContainerd: true registers the host's nvidia-container-runtime",
        ),
        ("gpuOperator.toolkit", False, "gpuOperator.toolkit: false leaves containerd without the NVIDIA runtime"),
        ("bareMetal.nodes.1.driver", {"version": "595"}, "bareMetal.nodes[1].driver.version: "),
        ("bareMetal.nodes.1.driver", {"cuda": "12.0"}, "bareMetal.nodes[1].driver.cuda: 12.0 is below cuda.version"),
    ],
)
def test_bad_driverless_input_is_refused_with_one_line_naming_the_key(path: str, value: Any, expected: str) -> None:
    lines = refusal(set_path(_driverless_prod(), path, value))
    assert any(line.startswith(expected) for line in lines), lines
    assert all("\n" not in line for line in lines)


def test_a_nodes_own_driver_with_a_host_installed_driver_is_refused() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.0.driver", {"version": CANARY_DRIVER})
    assert refusal(raw) == [
        "bareMetal.nodes[0].driver: sets a pool's own driver, but the hosts own the driver (gpuOperator.driver.owner: "
        "host), so the GPU Operator installs none; remove it, or set gpuOperator.driver.owner: operator"
    ]


def test_one_driver_for_every_node_keeps_the_clusterpolicy_driver() -> None:
    run = run_raw("prod", set_path(_driverless_prod(), "bareMetal.nodes.0.driver", None))
    assert run.by_type(NVIDIA_DRIVER_TYPE) == []
    assert all(DRIVER_GROUP_LABEL not in labels for labels in _labels(run).values())
    rendered = render_release(run.one(RELEASE, "gpu-operator-release").inputs)
    assert rendered.cluster_policy["driver"]["enabled"] is True
    assert rendered.cluster_policy["driver"]["version"] == STACK_DRIVER


def test_the_policy_gate_passes_the_driverless_variant(prod: ProgramRun) -> None:
    from preview.gate.evaluate import evaluate

    assert [f"{f.policy}: {f.resource}" for f in evaluate(prod.registrations).mandatory] == []
