"""GPU node groups repel ordinary pods; production GPU groups are neither preemptible nor auto-upgraded."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from policies.gpu_policies.names import NODE_GROUP_TYPE
from policies.gpu_policies.node_groups import (
    gpu_node_group_tainted,
    production_no_auto_upgrade,
    production_not_preemptible,
)
from tests.policies.support import node_group, run_resource


def test_a_gpu_group_with_a_noschedule_taint_passes() -> None:
    outcome = run_resource(gpu_node_group_tainted, NODE_GROUP_TYPE, node_group(), name="gpu-v100-group")
    assert outcome.messages == []


def test_a_gpu_group_without_taints_is_refused_as_mandatory() -> None:
    outcome = run_resource(gpu_node_group_tainted, NODE_GROUP_TYPE, node_group(taints=[]), name="gpu-v100-group")
    assert outcome.messages == [
        "GPU node group gpu-v100-group has no NoSchedule taint (taints: none), so any pod can be scheduled onto "
        "its GPU nodes and hold them; add one, for example nvidia.com/gpu=true:NoSchedule, and give GPU "
        "workloads the matching toleration"
    ]
    assert gpu_node_group_tainted.enforcement_level is EnforcementLevel.MANDATORY


def test_prefer_no_schedule_alone_does_not_keep_pods_off() -> None:
    outcome = run_resource(gpu_node_group_tainted, NODE_GROUP_TYPE, node_group(taints=["gpu=yes:PreferNoSchedule"]))
    assert "has no NoSchedule taint (taints: ['gpu=yes:PreferNoSchedule'])" in outcome.text


def test_a_malformed_taint_is_reported_with_the_catalogs_reason() -> None:
    outcome = run_resource(
        gpu_node_group_tainted, NODE_GROUP_TYPE, node_group(taints=["nvidia.com/gpu:NoSchedule"]), name="g"
    )
    assert outcome.messages[0].startswith("GPU node group g: taint 'nvidia.com/gpu:NoSchedule' is not of the form")
    assert len(outcome.messages) == 2  # and, with no valid taint left, no NoSchedule taint


def test_a_node_group_without_gpus_is_not_checked() -> None:
    cpu_group = node_group(taints=[], gpus=0.0)
    del cpu_group["instanceTemplate"]["gpuSettings"]
    del cpu_group["nodeLabels"]["gpu-platform.io/gpu-model"]
    assert run_resource(gpu_node_group_tainted, NODE_GROUP_TYPE, cpu_group).messages == []


def test_other_resource_types_are_ignored() -> None:
    assert run_resource(gpu_node_group_tainted, "kubernetes:core/v1:Namespace", {"nodeTaints": []}).messages == []


def test_preemptible_gpu_nodes_are_fine_outside_production() -> None:
    outcome = run_resource(production_not_preemptible, NODE_GROUP_TYPE, node_group(preemptible=True))
    assert outcome.messages == []


def test_preemptible_gpu_nodes_in_production_get_an_advisory() -> None:
    props = node_group(preemptible=True, production=True)
    outcome = run_resource(production_not_preemptible, NODE_GROUP_TYPE, props, name="gpu-a100-group")
    assert outcome.messages == [
        "GPU node group gpu-a100-group is preemptible in a production stack: the cloud stops such nodes at any "
        "time (and at least once every 24 hours), killing running GPU jobs; set preemptible: false"
    ]
    assert production_not_preemptible.enforcement_level is EnforcementLevel.ADVISORY


def test_a_production_stack_tag_makes_a_group_production() -> None:
    props = node_group(preemptible=True, production=False)
    outcome = run_resource(production_not_preemptible, NODE_GROUP_TYPE, props, stack_tags={"production": "true"})
    assert len(outcome.messages) == 1


def test_auto_upgrade_in_production_gets_an_advisory() -> None:
    props = node_group(auto_upgrade=True, production=True)
    outcome = run_resource(production_no_auto_upgrade, NODE_GROUP_TYPE, props, name="gpu-h100-group")
    assert outcome.messages == [
        "GPU node group gpu-h100-group auto-upgrades in a production stack: a new node image (and with it "
        "possibly a new preinstalled driver or kernel) arrives on the cloud's schedule and drains GPU nodes; "
        "set maintenance.autoUpgrade: false and upgrade deliberately"
    ]
    assert production_no_auto_upgrade.enforcement_level is EnforcementLevel.ADVISORY


def test_a_production_group_without_auto_upgrade_passes() -> None:
    props = node_group(auto_upgrade=False, production=True)
    assert run_resource(production_no_auto_upgrade, NODE_GROUP_TYPE, props).messages == []
