"""The Yandex GPU node group component under mocks: what the cloud would receive."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components.catalog.names import NODE_GROUP_TYPE
from components.catalog.replacements import YANDEX_NODE_GROUP_FORCE_NEW, yandex_node_group_force_new_names
from components.stack.config import parse_stack_config
from components.yandex.naming import digest_fields
from components.yandex.node_group import GpuNodeGroup, GpuNodeGroupArgs, cloud_name
from preview.diff.replacements import replace_reasons, values_at
from preview.run.mocks import RecordingMonitor
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
    autoscaled_to_fixed = set_path(raw, "nodeGroups.v100.scale", {"fixed": {"size": 2}})
    assert cloud_name("ml", "v100", _group(autoscaled_to_fixed)) != base, "fixed <-> auto replaces the group"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("nodeGroups.v100.location.zone", "ru-central1-b"),
        ("nodeGroups.v100.location.subnetId", "e9bothersubnet"),
        ("nodeGroups.v100.nat", True),
        ("nodeGroups.v100.securityGroupIds", ["enpsecuritygroup1"]),
    ],
)
def test_a_field_the_provider_changes_in_place_keeps_the_cloud_name(
    monitor: RecordingMonitor, path: str, value: Any
) -> None:
    """terraform-provider-yandex v0.161.0 updates the zone, the network interface (subnets, NAT, security
    groups) and the name in place: renaming the group for them would be a change nobody asked for, and the
    review would call it a replacement of every node."""
    raw = stack_raw("dev")
    changed = set_path(raw, path, value)
    assert cloud_name("ml", "v100", _group(changed)) == cloud_name("ml", "v100", _group(raw))
    before, after = _register_pair(monitor, raw, changed)
    assert before["name"] == after["name"] and before != after
    assert replace_reasons(NODE_GROUP_TYPE, before, after) == [], "the review calls it an update"


def _register_pair(monitor: RecordingMonitor, old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The node group inputs built from ``old`` and from ``new`` (two components in one program run)."""
    groups = {"gpu-old": _group(old), "gpu-new": _group(new)}

    @pulumi.runtime.test
    def build() -> pulumi.Output[Any]:
        components = [
            GpuNodeGroup(
                name,
                GpuNodeGroupArgs(
                    group_name="v100", group=group, cluster_id="cat1", cluster_name="ml", kubernetes_version="1.30"
                ),
            )
            for name, group in groups.items()
        ]
        return pulumi.Output.all(*(c.node_group_id for c in components))

    build()
    by_parent = {r.parent_name: r.inputs for r in monitor.registrations if r.type == NODE_GROUP_TYPE}
    return [by_parent["gpu-old"], by_parent["gpu-new"]]


def test_the_program_sends_no_replace_forcing_field_the_cloud_name_does_not_cover(monitor: RecordingMonitor) -> None:
    """Every replace-forcing input path the group sets is in the name's digest (or is the cluster's id):
    otherwise changing it would replace the group under the same cloud name, and create-before-delete fails."""
    inputs = _register(monitor, stack_raw("dev"))
    set_by_program = {
        name for path, name in YANDEX_NODE_GROUP_FORCE_NEW.items() if values_at(inputs, path) != values_at({}, path)
    }
    assert set_by_program - set(digest_fields()) == {"clusterId"}
    assert set(digest_fields()) == {"gpuEnvironment", "taints", "scaleKind"}
    assert set(digest_fields()) <= set(yandex_node_group_force_new_names()), "read from the catalog's table"
    assert "subnetId" not in str(inputs["allocationPolicy"]), "the deprecated, replace-forcing location subnet"
    assert inputs["instanceTemplate"]["networkInterfaces"][0]["subnetIds"] == ["e9bexampledevsubnet0"]
