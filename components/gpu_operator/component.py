"""The GPU Operator ComponentResource: its namespace, the Helm release and an optional Kyverno exclusion.

A real ``helm.v3.Release`` (not ``helm.v4.Chart``): the chart's pre-upgrade hook upgrades its CRDs
and only runs under a Helm release. The release is atomic with cleanup on failure and a timeout
sized for driver builds, so a failed install rolls back instead of leaving a half-installed operator.
The chart comes from NVIDIA's repository, or from a local mirror (``chartPath``, air-gapped clusters).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import gpu_operator_chart as chart
from components.catalog.gpu_operator_contract import contract_for
from components.catalog.names import (
    DRIVER_OWNER_ANNOTATION,
    DRIVER_VERSION_ANNOTATION,
    FIELD_MANAGER,
    GPU_MODELS_ANNOTATION,
    GPU_OPERATOR_TYPE,
    PATCH_FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    PSA_PRIVILEGED,
)
from components.gpu_operator.config import GpuOperatorConfig


@dataclass(frozen=True)
class GpuOperatorArgs:
    """Inputs: the operator config, the finished values, and what must exist first."""

    config: GpuOperatorConfig
    values: dict[str, Any]
    provider: k8s.Provider
    driver_owner: str = "operator"
    driver_version: str = ""
    gpu_models: list[str] = field(default_factory=list)
    depends_on: list[pulumi.Resource] = field(default_factory=list)


def kyverno_webhooks(operator_namespace: str, kyverno_namespace: str) -> str:
    """Kyverno's ``webhooks`` setting with the operator namespace excluded (Kyverno's defaults kept)."""
    excluded = sorted({"kube-system", kyverno_namespace, operator_namespace})
    selector = {
        "namespaceSelector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded}]
        }
    }
    return json.dumps([selector], separators=(",", ":"))


def release_chart_args(config: GpuOperatorConfig) -> dict[str, Any]:
    """Where the release gets the chart: NVIDIA's repository at ``chartVersion``, or ``chartPath``.

    A local chart carries its own version (checked against ``chartVersion`` by the config check,
    ``chart_source.chart_path_problem``); Helm ignores ``version`` for a local path, so none is passed.
    """
    if config.chart_path is not None:
        return {"chart": config.chart_path}
    return {
        "chart": chart.CHART_NAME,
        "version": config.chart_version,
        "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=chart.CHART_REPO),
    }


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator, installed from the pinned chart with validated values."""

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    status: pulumi.Output[Any]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_OPERATOR_TYPE, name, None, opts)
        config = args.config
        # Our own values must satisfy the chart's contract too: a bug here must not reach a cluster.
        contract_for(config.chart_version).require_valid(args.values)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=config.namespace,
                labels={**PSA_PRIVILEGED, "app.kubernetes.io/managed-by": "gpu-platform"},
                # Read by the policy pack: the driver the GPU nodes run and the GPU models present.
                annotations={
                    DRIVER_OWNER_ANNOTATION: args.driver_owner,
                    DRIVER_VERSION_ANNOTATION: args.driver_version,
                    GPU_MODELS_ANNOTATION: ",".join(args.gpu_models),
                },
            ),
            opts=child,
        )
        # Before the release: an operand pod that Kyverno's webhooks see before the exclusion exists is
        # refused, and the atomic release rolls back.
        exclusion = self._kyverno_exclusion(name, config, child) if config.kyverno.enabled else []
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=config.release_name,
            namespace=config.namespace,
            **release_chart_args(config),
            values=args.values,
            atomic=True,
            cleanup_on_fail=True,
            timeout=config.timeout_seconds,
            max_history=10,
            create_namespace=False,
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[self.namespace, *exclusion, *args.depends_on])
            ),
        )
        self.status = self.release.status
        self.register_outputs({"namespace": config.namespace, "chartVersion": config.chart_version})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: the Helm release (which waits for its namespace and prerequisites).

        Never the component itself: the SDK expands a component to every child.
        """
        return [self.release]

    def _kyverno_exclusion(
        self, name: str, config: GpuOperatorConfig, child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The Kyverno exclusion of the operator namespace, for the release to wait on."""
        kyverno = config.kyverno
        if kyverno.mode == "webhookNamespaceSelector":
            patch = k8s.core.v1.ConfigMapPatch(
                f"{name}-kyverno-webhooks",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=kyverno.config_map,
                    namespace=kyverno.namespace,
                    annotations={PATCH_FIELD_MANAGER_ANNOTATION: FIELD_MANAGER, PATCH_FORCE_ANNOTATION: "true"},
                ),
                data={"webhooks": kyverno_webhooks(config.namespace, kyverno.namespace)},
                opts=child,
            )
            return [patch]
        exception = k8s.apiextensions.CustomResource(
            f"{name}-kyverno-exception",
            api_version="kyverno.io/v2",
            kind="PolicyException",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-operator", namespace=config.namespace),
            spec={
                "exceptions": [{"policyName": policy, "ruleNames": ["*"]} for policy in sorted(kyverno.policies)],
                "match": {
                    "any": [
                        {
                            "resources": {
                                "kinds": ["Pod", "DaemonSet", "Deployment", "Job"],
                                "namespaces": [config.namespace],
                            }
                        }
                    ]
                },
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.namespace])),
        )
        return [exception]
