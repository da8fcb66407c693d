"""Builds the whole platform from the validated stack config, in dependency order.

Each capability is one ComponentResource; this module only wires them together so that
``__main__.py`` stays three lines and tests can build the same platform under mocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from components.cluster_access import ClusterAccess, ClusterAccessArgs
from components.config import StackConfig
from components.gpu_fleet import gpu_pools
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.gpu_operator_values import DriverPlan, build_values, driver_plan
from components.kubeflow import Kubeflow, KubeflowArgs
from components.node_group import GpuNodeGroup, GpuNodeGroupArgs


@dataclass
class Platform:
    """Everything the program created, for the outputs module."""

    config: StackConfig
    access: ClusterAccess
    node_groups: dict[str, GpuNodeGroup] = field(default_factory=dict)
    gpu_operator: GpuOperator | None = None
    driver: DriverPlan | None = None
    kubeflow: Kubeflow | None = None


def build_platform(stack: StackConfig) -> Platform:
    """Register every resource the stack declares."""
    cluster = stack.cluster
    kubeconfig = None
    if cluster.bare_metal is not None:
        kubeconfig = pulumi.Config().require_secret(cluster.bare_metal.kubeconfig_secret)
    access = ClusterAccess(cluster.name, ClusterAccessArgs(cluster=cluster, kubeconfig=kubeconfig))
    platform = Platform(config=stack, access=access)
    for group_name, group in sorted(stack.node_groups.items()):
        platform.node_groups[group_name] = GpuNodeGroup(
            f"gpu-{group_name}",
            GpuNodeGroupArgs(
                group_name=group_name,
                group=group,
                cluster_id=access.cluster_id,
                cluster_name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                environment=stack.environment.name,
                production=stack.environment.production,
            ),
        )
    pools = gpu_pools(stack)
    if stack.gpu_operator.enabled and pools:
        platform.driver = driver_plan(stack, pools)
        platform.gpu_operator = GpuOperator(
            "gpu-operator",
            GpuOperatorArgs(
                config=stack.gpu_operator,
                values=build_values(stack),
                driver_owner=platform.driver.owner if platform.driver else "operator",
                driver_version=platform.driver.version if platform.driver else "",
                gpu_models=sorted({pool.model.key for pool in pools}),
                provider=access.provider,
                depends_on=list(platform.node_groups.values()),
            ),
        )
    kubeflow = stack.kubeflow
    if kubeflow is not None and kubeflow.enabled:
        secrets = pulumi.Config()
        platform.kubeflow = Kubeflow(
            "kubeflow",
            KubeflowArgs(
                config=kubeflow,
                stack=pulumi.get_stack(),
                provider=access.provider,
                dex_password_hash=secrets.require_secret(kubeflow.dex.password_hash_secret),
                oidc_client_secret=(
                    secrets.require_secret(kubeflow.oidc_client_secret_key) if kubeflow.oidc_client_secret_key else None
                ),
            ),
        )
    return platform
