"""Node rules: GPU nodes (Yandex node groups and bare-metal nodes) repel ordinary pods, and production GPU
capacity is not fragile.

Why: an untainted GPU node accepts any pod, so a CPU-only workload can sit on an expensive GPU and
a GPU job then waits for capacity that looks free. In production, preemptible GPU nodes vanish
mid-job (Yandex stops them at least once a day) and auto-upgraded node groups get a new node image,
and with it possibly a new driver, on the cloud's schedule instead of ours. The last two are
advisory: a team may accept either on purpose.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.kubernetes import gpu_node_taint_problem

from .facts import NodeGroup, read_node_group, read_node_patch
from .names import NODE_GROUP_TYPE, NODE_PATCH_TYPE


def _gpu_node_group(args: ResourceValidationArgs) -> NodeGroup | None:
    if args.resource_type != NODE_GROUP_TYPE:
        return None
    group = read_node_group(args.props, args.name, args.urn)
    return group if group.is_gpu else None


def _validate_taint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    group = _gpu_node_group(args)
    if group is None:
        return
    taints, errors = group.parsed_taints()
    for error in errors:
        report(f"GPU node group {group.name}: {error}", None)
    problem = gpu_node_taint_problem(taints)
    if problem:
        report(f"GPU node group {group.name} {problem}", None)


gpu_node_group_tainted = ResourceValidationPolicy(
    name="gpu-node-group-noschedule-taint",
    description="GPU node groups carry a NoSchedule taint so that only GPU workloads land on GPU nodes.",
    validate=_validate_taint,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpu", "scheduling"],
    remediation_steps="Add a taint such as nvidia.com/gpu=true:NoSchedule to nodeGroups.<name>.taints.",
)


def _validate_bare_metal_taint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NODE_PATCH_TYPE:
        return
    patch = read_node_patch(args.props, args.name, args.urn)
    if not patch.is_gpu_node or patch.untainted_accepted:
        return  # an accepted opt-out (bareMetal.nodes[i].allowUntainted) was warned about by the config check
    for error in patch.taint_errors:
        report(f"bare-metal GPU node {patch.name}: {error}", None)
    problem = gpu_node_taint_problem(patch.taints)
    if problem:
        report(
            f"bare-metal GPU node {patch.name} {problem}; register the node with it (kubelet --register-with-taints) "
            "and declare it in bareMetal.nodes[i].taints, or accept the risk with allowUntainted: true",
            None,
        )


bare_metal_gpu_node_tainted = ResourceValidationPolicy(
    name="bare-metal-gpu-node-noschedule-taint",
    description="Bare-metal GPU nodes declare a NoSchedule taint so that only GPU workloads land on them.",
    validate=_validate_bare_metal_taint,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpu", "scheduling"],
    remediation_steps="Register the node with a taint such as nvidia.com/gpu=true:NoSchedule and list it in "
    "bareMetal.nodes[i].taints.",
)


def is_production(args: ResourceValidationArgs, group: NodeGroup) -> bool:
    """The group's ``production`` label says "true", or the stack carries the tag production=true."""
    tag = (args.stack_tags or {}).get("production", "")
    return group.labels.get("production") == "true" or str(tag).lower() == "true"


def _validate_preemptible(args: ResourceValidationArgs, report: ReportViolation) -> None:
    group = _gpu_node_group(args)
    if group is None or not is_production(args, group):
        return
    if group.preemptible:
        report(
            f"GPU node group {group.name} is preemptible in a production stack: the cloud stops such nodes "
            "at any time (and at least once every 24 hours), killing running GPU jobs; set preemptible: false",
            None,
        )


production_not_preemptible = ResourceValidationPolicy(
    name="production-gpu-nodes-not-preemptible",
    description="GPU node groups of a production stack are not preemptible.",
    validate=_validate_preemptible,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    tags=["gpu", "production"],
)


def _validate_auto_upgrade(args: ResourceValidationArgs, report: ReportViolation) -> None:
    group = _gpu_node_group(args)
    if group is None or not is_production(args, group):
        return
    if group.auto_upgrade:
        report(
            f"GPU node group {group.name} auto-upgrades in a production stack: a new node image (and with it "
            "possibly a new preinstalled driver or kernel) arrives on the cloud's schedule and drains GPU nodes; "
            "set maintenance.autoUpgrade: false and upgrade deliberately",
            None,
        )


production_no_auto_upgrade = ResourceValidationPolicy(
    name="production-gpu-nodes-no-auto-upgrade",
    description="GPU node groups of a production stack do not auto-upgrade.",
    validate=_validate_auto_upgrade,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    tags=["gpu", "production"],
)

POLICIES = [
    gpu_node_group_tainted,
    bare_metal_gpu_node_tainted,
    production_not_preemptible,
    production_no_auto_upgrade,
]
