"""Running one policy on hand-built props, the way the analyzer would.

There is no official test helper in pulumi-policy: these build the offline gate's own argument bags
(``preview.gate.analyzer``, the one emulation of the analyzer), so a policy is tested as the gate runs it. Props are wrapped in the analyzer's unknown-checking proxy (so a
policy that assumes ``dict``/``list`` fails here as it would under the CLI), and the policy config
is the schema defaults plus the test's overrides: only the CLI applies defaults by itself.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import Policy, PolicyResource, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.proxy import unknown_checking_proxy

from components.catalog.names import HELM_RELEASE_TYPE
from policies.gpu_policies.names import NAMESPACE_TYPE, NODE_GROUP_TYPE
from policies.gpu_policies.settings import schema_defaults
from preview.gate.analyzer import NO_OPTIONS as OPTS
from preview.gate.analyzer import GateResourceArgs, GateStackArgs, PolicyNotApplicable

RELEASE_TYPE = HELM_RELEASE_TYPE


@dataclass
class Outcome:
    """What one policy run reported."""

    messages: list[str] = field(default_factory=list)
    urns: list[str | None] = field(default_factory=list)
    not_applicable: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.messages)


def urn(resource_type: str, name: str) -> str:
    return f"urn:pulumi:test::gpu-platform::{resource_type}::{name}"


def config_for(policy: Policy, **overrides: Any) -> dict[str, Any]:
    """The policy's schema defaults with ``overrides`` on top (what the CLI would send)."""
    return {**schema_defaults(policy), **overrides}


def run_resource(
    policy: ResourceValidationPolicy,
    resource_type: str,
    props: dict[str, Any],
    *,
    name: str = "r",
    config: dict[str, Any] | None = None,
    stack_tags: dict[str, str] | None = None,
) -> Outcome:
    """Validate one resource; ``config`` None means the schema defaults."""
    outcome = Outcome()
    args = GateResourceArgs(
        resource_type,
        unknown_checking_proxy(copy.deepcopy(props)),
        urn(resource_type, name),
        name,
        OPTS,
        None,
        config_for(policy) if config is None else config,
        stack_tags,
    )

    def report(message: str, reported_urn: str | None = None) -> None:
        outcome.messages.append(message)
        outcome.urns.append(reported_urn)

    try:
        assert policy.validate(args, report) is None, "our validators are synchronous"
    except PolicyNotApplicable as error:
        outcome.not_applicable = error.reason or "not applicable"
    return outcome


def run_stack(
    policy: StackValidationPolicy,
    resources: list[tuple[str, str, dict[str, Any]]],
    *,
    config: dict[str, Any] | None = None,
) -> Outcome:
    """Validate a stack of ``(type, name, props)``; ``config`` None means the schema defaults."""
    outcome = Outcome()
    policy_resources = [
        PolicyResource(
            kind, unknown_checking_proxy(copy.deepcopy(props)), urn(kind, name), name, OPTS, None, None, [], {}
        )
        for kind, name, props in resources
    ]
    args = GateStackArgs(policy_resources, config_for(policy) if config is None else config)

    def report(message: str, reported_urn: str | None = None) -> None:
        outcome.messages.append(message)
        outcome.urns.append(reported_urn)

    try:
        assert policy.validate(args, report) is None, "our validators are synchronous"
    except PolicyNotApplicable as error:
        outcome.not_applicable = error.reason or "not applicable"
    return outcome


# ----------------------------------------------------------------------------------------------
# Hand-built props in wire format (camelCase keys, numbers as floats)


def node_group(
    *,
    taints: list[str] | None = None,
    gpu_environment: str = "runc",
    model: str = "V100-32GB",
    node_labels: dict[str, str] | None = None,
    production: bool = False,
    preemptible: bool = False,
    auto_upgrade: bool = False,
    gpus: float = 1.0,
) -> dict[str, Any]:
    """A Yandex GPU node group as the program registers it."""
    return {
        "instanceTemplate": {
            "platformId": "gpu-standard-v2",
            "resources": {"gpus": gpus, "cores": 8.0, "memory": 48.0, "coreFraction": 100.0},
            "gpuSettings": {"gpuEnvironment": gpu_environment},
            "schedulingPolicy": {"preemptible": preemptible},
        },
        "nodeTaints": ["nvidia.com/gpu=true:NoSchedule"] if taints is None else taints,
        "nodeLabels": {
            "gpu-platform.io/gpu": "true",
            "gpu-platform.io/gpu-model": model,
            "gpu-platform.io/node-group": "g",
            **(node_labels or {}),
        },
        "labels": {"environment": "prod" if production else "dev", "production": "true" if production else "false"},
        "maintenancePolicy": {"autoUpgrade": auto_upgrade, "autoRepair": True},
    }


def operator_release(values: dict[str, Any] | None = None, version: str = "v26.7.0") -> dict[str, Any]:
    """A GPU Operator Helm release."""
    return {
        "chart": "gpu-operator",
        "version": version,
        "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        "values": {"driver": {"enabled": True, "version": "580.95.05"}} if values is None else values,
    }


def operator_namespace(driver_version: str = "580.95.05", models: str = "V100-32GB", owner: str = "operator") -> dict:
    """The operator namespace with the driver facts the program records."""
    return {
        "metadata": {
            "name": "gpu-operator",
            "annotations": {
                "gpu-platform.io/driver-owner": owner,
                "gpu-platform.io/driver-version": driver_version,
                "gpu-platform.io/gpu-models": models,
            },
        }
    }


def stack(*groups: dict[str, Any], release: dict[str, Any] | None = None, namespace: dict | None = None) -> list:
    """A stack: node groups ``g0, g1, ...``, an optional operator release and namespace."""
    resources: list[tuple[str, str, dict[str, Any]]] = [
        (NODE_GROUP_TYPE, f"g{index}", group) for index, group in enumerate(groups)
    ]
    if release is not None:
        resources.append((RELEASE_TYPE, "gpu-operator-release", release))
    if namespace is not None:
        resources.append((NAMESPACE_TYPE, "gpu-operator-namespace", namespace))
    return resources


def pod_spec(image: str = "nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04", **extra: Any) -> dict[str, Any]:
    """A pod spec with one container."""
    return {"containers": [{"name": "main", "image": image}], **extra}


def daemon_set(
    namespace: str = "gpu-platform-system", name: str = "host-driver-removal", pod: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An apps/v1 DaemonSet with ``pod`` as its pod spec."""
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"spec": pod or pod_spec()}},
    }
