"""Stack outputs: the contract other teams read with ``StackReference``.

Names are camelCase and stable; adding a key keeps ``contractVersion``, renaming or removing one
bumps it. Secrets (the kubeconfig) stay Pulumi secrets. docs/outputs.md describes every key, and
tests/contracts/<stack>-outputs.json pins the contract of each example stack.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.catalog.gpu_operator_chart import GPU_RESOURCE
from components.catalog.kubeflow_manifests import DEX_ISSUER
from components.stack.pools import gpu_pools, pool_scheduling
from components.kubeflow.component import kubeflow_namespaces
from components.mig.plan import demand_outputs
from components.yandex.node_group import replacement_fields
from components.stack.program import Platform

CONTRACT_VERSION = "1"


def node_group_outputs(platform: Platform) -> dict[str, Any]:
    """Per GPU node group: identity, hardware and how to schedule onto it."""
    result: dict[str, Any] = {}
    for name, component in platform.node_groups.items():
        group = platform.config.node_groups[name]
        result[name] = {
            "id": component.node_group_id,
            "cloudName": component.cloud_name,
            "platform": group.platform,
            "gpuModel": group.model.key,
            "gpuArchitecture": group.model.architecture.value,
            "gpusPerNode": group.resources.gpus,
            "maxNodes": group.scale.max_nodes,
            "gpuEnvironment": group.gpu_environment,
            "preemptible": group.preemptible,
            "taints": list(group.taints),
            "labels": component.labels,
            "scheduling": _scheduling(platform, name),
            "replacementFields": replacement_fields(group),
        }
    return result


def _scheduling(platform: Platform, pool_name: str) -> dict[str, Any]:
    pool = next(p for p in gpu_pools(platform.config) if p.name == pool_name)
    return pool_scheduling(pool)


def gpu_pool_outputs(platform: Platform) -> dict[str, Any]:
    """Every GPU pool (Yandex group or bare-metal node): hardware, resources, how to schedule onto it."""
    result: dict[str, Any] = {}
    for pool in gpu_pools(platform.config):
        decision = platform.mig.pools.get(pool.name)
        resources = decision.resources(platform.mig.strategy) if decision else {GPU_RESOURCE: pool.gpus_per_node}
        first = next(iter(resources))
        result[pool.name] = {
            "source": "bare-metal-node" if pool.bare_metal else "yandex-node-group",
            "gpuModel": pool.model.key,
            "gpuArchitecture": pool.model.architecture.value,
            "gpusPerNode": pool.gpus_per_node,
            "maxNodes": pool.max_nodes,
            "migConfig": decision.config_name if decision else None,
            "resourcesPerNode": resources,
            "scheduling": pool_scheduling(pool),
            "podResources": {"limits": {first: 1}},
        }
    return result


def gpu_operator_outputs(platform: Platform) -> dict[str, Any] | None:
    """The operator's namespace and chart, and the driver the GPU nodes run."""
    if platform.gpu_operator is None or platform.driver is None:
        return None
    operator = platform.config.gpu_operator
    return {
        "namespace": operator.namespace,
        "releaseName": operator.release_name,
        "chartVersion": operator.chart_version,
        "driverOwner": platform.driver.owner,
        "driverVersion": platform.driver.version,
        "maxCuda": platform.driver.max_cuda,
        "gpuResourceNames": sorted(
            {name for pool in gpu_pool_outputs(platform).values() for name in pool["resourcesPerNode"]}
        ),
    }


def kubeflow_outputs(platform: Platform) -> dict[str, Any] | None:
    """Where Kubeflow is reached, which version, and its identity provider."""
    if platform.kubeflow is None or platform.config.kubeflow is None:
        return None
    config = platform.config.kubeflow
    return {
        "url": platform.kubeflow.url,
        "version": config.tag,
        "namespaces": kubeflow_namespaces(config.install_cert_manager),
        "dexIssuer": DEX_ISSUER,
        "profiles": sorted(profile.name for profile in config.profiles),
    }


def export_outputs(platform: Platform) -> None:
    """Export the contract."""
    stack = platform.config
    pulumi.export("contractVersion", CONTRACT_VERSION)
    pulumi.export(
        "cluster",
        {
            "name": stack.cluster.name,
            "kind": stack.cluster.kind,
            "id": platform.access.cluster_id,
            "kubernetesVersion": stack.cluster.kubernetes_version,
            "environment": stack.environment.name,
            "production": stack.environment.production,
        },
    )
    pulumi.export("kubeconfig", platform.access.kubeconfig)
    pulumi.export("cuda", {"version": stack.cuda.version, "check": stack.cuda.check.value})
    pulumi.export("gpuPools", gpu_pool_outputs(platform))
    pulumi.export("gpuNodeGroups", node_group_outputs(platform))
    pulumi.export("gpuOperator", gpu_operator_outputs(platform))
    pulumi.export("kubeflow", kubeflow_outputs(platform))
    pulumi.export(
        "mig",
        {"strategy": platform.mig.strategy, "demand": demand_outputs(platform.mig)},
    )
