"""Resource rule: GPU Operator Helm values use only value paths the pinned chart really reads.

Why: the gpu-operator chart ships no values schema and Helm silently ignores keys no template
reads, so a misspelt or outdated key (``driver.useOpenKernelModules``, ``daemonsets.nodeSelector``)
changes nothing and nobody notices until a node misbehaves. The contract of each chart version is
``components.catalog.gpu_operator_contract``; the program checks its own values against it too, so
this policy guards values that reach a release any other way (a hand edit, another program).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.gpu_operator_contract import contract_for

from .facts import is_gpu_operator_chart
from .helm import version_problem
from .names import HELM_RELEASE_TYPES
from .props import plain, text


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in HELM_RELEASE_TYPES or not is_gpu_operator_chart(args.props):
        return
    version = text(args.props.get("version"))
    if version_problem(version):
        args.not_applicable("the chart version is not pinned (helm-chart-version-pinned reports it)")
    try:
        contract = contract_for(version)
    except ValueError as error:
        report(f"GPU Operator release {args.name}: {error}", None)
        return
    values = plain(args.props.get("values"))
    for violation in contract.violations(values if values is not None else {}):
        report(f"GPU Operator release {args.name}: {violation.message}", None)


gpu_operator_values_contract = ResourceValidationPolicy(
    name="gpu-operator-values-contract",
    description="GPU Operator Helm values use only keys and value types that the pinned chart version reads.",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpu-operator", "helm"],
)

POLICIES = [gpu_operator_values_contract]
