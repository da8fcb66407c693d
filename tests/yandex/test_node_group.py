"""The Yandex GPU node group component under mocks: what the cloud would receive."""

from __future__ import annotations

from typing import Any

import pulumi

from components.catalog.names import NODE_GROUP_TYPE
from components.stack.config import parse_stack_config
from components.yandex.node_group import GpuNodeGroup, GpuNodeGroupArgs, cloud_name
from preview.mocks import RecordingMonitor
from tests.helpers import set_path, stack_raw


def _group(raw: dict[str, Any]) -> Any:
    return parse_stack_config(raw).node_groups["v100"]


def _register(monitor: RecordingMonitor, raw: dict[str, Any]) -> dict[str, Any]:
    group = _group(raw)

    @pulumi.runtime.test
    def build() -> pulumi.Output[Any]:
        component = GpuNodeGroup(
            "gpu-v100",
            GpuNodeGroupArgs(
                group_name="v100", group=group, cluster_id="cat1", cluster_name="ml", kubernetes_version="1.30"
            ),
        )
        return component.node_group_id

    build()
    (registration,) = [r for r in monitor.registrations if r.type == NODE_GROUP_TYPE]
    assert registration.parent_name == "gpu-v100"
    return registration.inputs


def test_node_group_inputs(monitor: RecordingMonitor) -> None:
    inputs = _register(monitor, stack_raw("dev"))
    template = inputs["instanceTemplate"]
    assert template["platformId"] == "gpu-standard-v2"
    assert template["resources"] == {"gpus": 1.0, "cores": 8.0, "memory": 48.0, "coreFraction": 100.0}
    assert template["gpuSettings"] == {"gpuEnvironment": "runc"}
    assert template["schedulingPolicy"] == {"preemptible": True}
    assert inputs["nodeTaints"] == ["nvidia.com/gpu=true:NoSchedule", "gpu-platform.io/workload=notebooks:NoSchedule"]
    assert inputs["nodeLabels"]["gpu-platform.io/node-group"] == "v100"
    assert inputs["nodeLabels"]["gpu-platform.io/gpu-model"] == "V100-32GB"
    assert inputs["scalePolicy"] == {"autoScale": {"min": 1.0, "max": 3.0, "initial": 1.0}}
    assert inputs["maintenancePolicy"]["autoUpgrade"] is False
    assert inputs["maintenancePolicy"]["autoRepair"] is True
    assert inputs["allocationPolicy"] == {"locations": [{"zone": "ru-central1-a"}]}
    assert inputs["clusterId"] == "cat1"


def test_fixed_scale(monitor: RecordingMonitor) -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.v100.scale", {"fixed": {"size": 2}})
    assert _register(monitor, raw)["scalePolicy"] == {"fixedScale": {"size": 2.0}}


def test_cloud_name_changes_with_replace_triggers_only() -> None:
    raw = stack_raw("dev")
    base = cloud_name("ml", "v100", _group(raw))
    assert base.startswith("ml-v100-") and len(base) == len("ml-v100-") + 8
    assert cloud_name("ml", "v100", _group(raw)) == base, "stable across runs"
    relabelled = set_path(raw, ("nodeGroups", "v100", "labels", "team"), "vision")
    assert cloud_name("ml", "v100", _group(relabelled)) == base, "labels update in place"
    bigger = set_path(raw, "nodeGroups.v100.scale.auto.max", 5)
    assert cloud_name("ml", "v100", _group(bigger)) == base, "autoscale bounds update in place"
    preinstalled = set_path(raw, "nodeGroups.v100.gpuEnvironment", "runc_drivers_cuda")
    preinstalled = set_path(preinstalled, "nodeGroups.v100.hostDriverRemoval", True)
    assert cloud_name("ml", "v100", _group(preinstalled)) != base, "gpuEnvironment replaces the group"
    retainted = set_path(raw, "nodeGroups.v100.taints", ["nvidia.com/gpu=:NoSchedule"])
    assert cloud_name("ml", "v100", _group(retainted)) != base, "taints replace the group on this provider"
