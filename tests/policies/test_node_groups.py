"""GPU node groups and bare-metal GPU nodes repel ordinary pods; production GPU groups are neither preemptible nor auto-upgraded."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from policies.gpu_policies.names import (
    DECLARED_TAINTS_ANNOTATION,
    GPU_NODE_LABEL,
    NODE_GROUP_TYPE,
    NODE_PATCH_TYPE,
    UNTAINTED_ACCEPTED_ANNOTATION,
)
from policies.gpu_policies.node_groups import (
    bare_metal_gpu_node_tainted,
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
        "its GPUs and hold them; add one, for example nvidia.com/gpu=true:NoSchedule, and give GPU "
        "workloads the matching toleration"
    ]
    assert gpu_node_group_tainted.enforcement_level is EnforcementLevel.MANDATORY


def test_prefer_no_schedule_alone_does_not_keep_pods_off() -> None:
    outcome = run_resource(gpu_node_group_tainted, NODE_GROUP_TYPE, node_group(taints=["gpu=yes:PreferNoSchedule"]))
    assert "has no NoSchedule taint (taints: gpu=yes:PreferNoSchedule)" in outcome.text


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


# ----------------------------------------------------------------------------------------------
# Bare-metal GPU nodes: the taints their config declares, recorded on the program's NodePatch


def _node_patch(
    declared: str | None = "nvidia.com/gpu=true:NoSchedule", *, accepted: bool = False, gpu: bool = True
) -> dict[str, Any]:
    labels = {GPU_NODE_LABEL: "true", "gpu-platform.io/gpu-model": "H100-80GB"} if gpu else {}
    annotations = {} if declared is None else {DECLARED_TAINTS_ANNOTATION: declared}
    if accepted:
        annotations[UNTAINTED_ACCEPTED_ANNOTATION] = "true"
    return {"metadata": {"name": "gpu-node-1", "labels": labels, "annotations": annotations}}


def test_a_bare_metal_gpu_node_declaring_a_noschedule_taint_passes() -> None:
    outcome = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch(), name="gpu-nodes-gpu-node-1")
    assert outcome.messages == []


@pytest.mark.parametrize("declared", ["", None, "dedicated=gpu:PreferNoSchedule"])
def test_a_bare_metal_gpu_node_without_a_noschedule_taint_is_refused(declared: str | None) -> None:
    outcome = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch(declared), name="gpu-node-1")
    assert len(outcome.messages) == 1
    assert outcome.messages[0].startswith("bare-metal GPU node gpu-node-1 has no NoSchedule taint")
    assert "bareMetal.nodes[i].taints" in outcome.messages[0] and "allowUntainted" in outcome.messages[0]
    assert bare_metal_gpu_node_tainted.enforcement_level is EnforcementLevel.MANDATORY


def test_a_malformed_declared_taint_is_reported_with_the_catalogs_reason() -> None:
    outcome = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch("nvidia.com/gpu:Never"))
    assert outcome.messages[0].startswith("bare-metal GPU node r: taint 'nvidia.com/gpu:Never': effect 'Never'")
    assert len(outcome.messages) == 2


def test_a_declared_taint_without_a_value_counts_and_a_repeated_one_is_reported() -> None:
    assert (
        run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch("nvidia.com/gpu:NoSchedule")).messages
        == []
    )
    repeated = "nvidia.com/gpu=true:NoSchedule,nvidia.com/gpu=false:NoSchedule"
    outcome = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch(repeated))
    assert outcome.messages == [
        "bare-metal GPU node r: taint nvidia.com/gpu=false:NoSchedule repeats key 'nvidia.com/gpu' with effect "
        "NoSchedule; keep one"
    ]


def test_an_accepted_untainted_node_and_a_non_gpu_patch_are_not_refused() -> None:
    accepted = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch("", accepted=True))
    mig_only = run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, _node_patch(None, gpu=False))
    assert accepted.messages == [] and mig_only.messages == []


def test_a_taint_set_in_the_patchs_spec_counts_as_declared() -> None:
    props = _node_patch(None)
    props["spec"] = {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}
    assert run_resource(bare_metal_gpu_node_tainted, NODE_PATCH_TYPE, props).messages == []
