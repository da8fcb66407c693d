"""Network exposure rules: host networking only where allowed, and no Service that opens a node port.

Why: a pod with ``hostNetwork: true`` shares the node's network namespace: it can bind the node's
ports and reach every address the node can, past every NetworkPolicy. The pinned GPU Operator chart
needs it for none of its pods (``gpu_operator_operands.HOST_NETWORK_OPERANDS`` is empty for v26.7.0),
so a ``<operand>.hostNetwork: true`` in the values, the rendered ClusterPolicy, or a pod anywhere is
a change somebody must allow by name. A Service of type ``LoadBalancer`` or ``NodePort`` publishes a
port outside the cluster; Kubeflow is meant to be reached only through the TLS Ingress and
oauth2-proxy, and a Kubeflow Service with a node port (upstream ships all of them as ClusterIP)
bypasses the login.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.gpu_operator_operands import HOST_NETWORK_OPERANDS

from .names import SERVICE_TYPES
from .operands import enabled_blocks, is_operator_release, is_operator_resource, operator_resource_blocks
from .props import get, mapping, string_map, text
from .settings import setting
from .workloads import workload

_REASONS = {"type": "string", "minLength": 1}

_HOST_NETWORK_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedWorkloads": {
            "type": "object",
            "additionalProperties": _REASONS,
            "default": dict(HOST_NETWORK_OPERANDS),
            "description": "what may use the host network -> why: pods as namespace/name, GPU Operator operands "
            "by their values path (dcgmExporter, node-feature-discovery.worker; it also covers the rendered "
            "ClusterPolicy/NVIDIADriver block). The pinned chart needs none",
        }
    }
)


def _host_network(args: ResourceValidationArgs) -> list[tuple[str, str]]:
    """(allow-list key, what uses the host network) in one resource."""
    if is_operator_release(args.resource_type, args.props):
        return [
            (block.path, f"GPU Operator release {args.name} {block.where}.hostNetwork")
            for block in enabled_blocks(args.props.get("values"))
            if block.keys.get("hostNetwork") is True
        ]
    if is_operator_resource(args.resource_type):
        kind = args.resource_type.rsplit(":", 1)[-1]
        name = text(mapping(args.props.get("metadata")).get("name")) or args.name
        return [
            (block.path, f"{kind} {name} {block.where}.hostNetwork")
            for block in operator_resource_blocks(args.resource_type, args.props)
            if block.keys.get("hostNetwork") is True
        ]
    pod = workload(args)
    if pod is None or pod.pod_spec.get("hostNetwork") is not True:
        return []
    return [(f"{pod.namespace}/{pod.name}", f"{pod.label} hostNetwork")]


def _validate_host_network(args: ResourceValidationArgs, report: ReportViolation) -> None:
    found = _host_network(args)
    if not found:
        return
    allowed = string_map(setting(args, _HOST_NETWORK_SCHEMA, "allowedWorkloads"))
    for key, what in found:
        if key not in allowed:
            report(
                f"{what} is true: the pod shares the node's network (its ports, every address the node reaches, "
                f"no NetworkPolicy applies); drop it, or allow it with the reason (policy config allowedWorkloads: "
                f'{{"{key}": "why"}})',
                None,
            )


host_network_allowlisted = ResourceValidationPolicy(
    name="host-network-allowlisted",
    description="Pods and GPU Operator operands use hostNetwork only where allowed by name, with the reason.",
    validate=_validate_host_network,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_HOST_NETWORK_SCHEMA,
    tags=["security", "kubernetes", "gpu-operator"],
)

EXTERNAL_SERVICE_TYPES = ("LoadBalancer", "NodePort")

_SERVICE_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedServices": {
            "type": "object",
            "additionalProperties": _REASONS,
            "default": {},
            "description": "Services (namespace/name) allowed to be of type LoadBalancer or NodePort -> why",
        }
    }
)


def _validate_services(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in SERVICE_TYPES:
        return
    kind = text(get(args.props, "spec", "type"))
    if kind not in EXTERNAL_SERVICE_TYPES:
        return
    metadata = mapping(args.props.get("metadata"))
    key = f"{text(metadata.get('namespace')) or 'default'}/{text(metadata.get('name')) or args.name}"
    if key in string_map(setting(args, _SERVICE_SCHEMA, "allowedServices")):
        return
    report(
        f"Service {key} is of type {kind}, which opens it outside the cluster past the Ingress and its login "
        f"(oauth2-proxy for Kubeflow); make it ClusterIP and reach it through the Ingress, or allow it with the "
        f'reason (policy config allowedServices: {{"{key}": "why"}})',
        None,
    )


external_services_allowlisted = ResourceValidationPolicy(
    name="external-services-allowlisted",
    description="No Service of type LoadBalancer or NodePort (Kubeflow's included) unless allowed by name.",
    validate=_validate_services,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_SERVICE_SCHEMA,
    tags=["kubeflow", "security", "kubernetes"],
)

POLICIES = [host_network_allowlisted, external_services_allowlisted]
