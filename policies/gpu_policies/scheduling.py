"""Stack rule: the GPU Operator's pods tolerate every taint of every GPU node.

Why: the operator installs the driver, the container toolkit and the device plugin as DaemonSets.
A GPU node whose taint they do not tolerate never gets them, so the node advertises no
``nvidia.com/gpu`` and every GPU pod stays Pending with nothing in the operator's logs. The NFD
worker must land there too (its PCI labels are what tells the operator that the node has a GPU).
Helm replaces list values wholesale, so a release that sets ``daemonsets.tolerations`` loses the
chart's default ``nvidia.com/gpu`` toleration; the check reads the list the chart will really use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.catalog.kubernetes import Taint, tolerates

from .facts import REPELLING_TAINT_EFFECTS, StackFacts, stack_facts


def _gpu_taints(facts: StackFacts) -> dict[Taint, list[str]]:
    """Every repelling taint of a GPU node -> the node groups / node patches that carry it."""
    owners: dict[Taint, list[str]] = {}
    for group in facts.gpu_node_groups:
        taints, _errors = group.parsed_taints()  # malformed taints are the node-group policy's finding
        for taint in taints:
            if taint.effect in REPELLING_TAINT_EFFECTS:
                owners.setdefault(taint, []).append(f"node group {group.name}")
    for patch in facts.node_patches:
        for taint in patch.taints:
            if taint.effect in REPELLING_TAINT_EFFECTS:
                owners.setdefault(taint, []).append(f"node patch {patch.name}")
    return owners


def _untolerated(tolerations: Sequence[Mapping[str, Any]], taints: dict[Taint, list[str]]) -> list[Taint]:
    return [taint for taint in taints if not any(tolerates(t, taint) for t in tolerations)]


def _describe(taint: Taint, owners: list[str]) -> str:
    shown = ", ".join(owners[:3]) + (f" and {len(owners) - 3} more" if len(owners) > 3 else "")
    return f"{taint} (on {shown})"


def _toleration_text(taint: Taint) -> str:
    """The toleration to add, written the way it reads in Helm values."""
    return "{" + ", ".join(f"{key}: {value}" for key, value in taint.toleration().items()) + "}"


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    facts = stack_facts(args.resources)
    taints = _gpu_taints(facts)
    if not facts.operator_releases:
        args.not_applicable("no GPU Operator release in this stack")
    for release in facts.operator_releases:
        lists = [("daemonsets.tolerations", release.daemonset_tolerations())]
        nfd = release.nfd_worker_tolerations()
        if nfd is not None:
            lists.append(("node-feature-discovery.worker.tolerations", nfd))
        for path, tolerations in lists:
            missing = _untolerated(tolerations, taints)
            if not missing:
                continue
            listed = "; ".join(_describe(taint, taints[taint]) for taint in sorted(missing, key=str))
            fix = ", ".join(_toleration_text(taint) for taint in sorted(missing, key=str))
            report(
                f"GPU Operator release {release.name}: {path} does not tolerate {listed}, so the operator's "
                f"pods never start on those GPU nodes and they advertise no GPUs; add {fix}",
                release.urn or None,
            )


gpu_operator_tolerates_gpu_taints = StackValidationPolicy(
    name="gpu-operator-tolerates-gpu-taints",
    description="The GPU Operator's DaemonSets and NFD worker tolerate every taint of every GPU node.",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpu", "scheduling", "gpu-operator"],
)

POLICIES = [gpu_operator_tolerates_gpu_taints]
