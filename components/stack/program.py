"""Builds the whole platform from the validated stack config, in dependency order.

Each capability is one ComponentResource; this module only wires them together so that
``__main__.py`` stays three lines and tests can build the same platform under mocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from components.bare_metal.node_labels import BareMetalNodeLabels, NodeLabelsArgs, bare_metal_labels
from components.catalog.drivers import minimum_driver
from components.catalog.gpu_operator_chart import GPU_RESOURCE
from components.cluster.access import ClusterAccess, ClusterAccessArgs
from components.stack.config import StackConfig
from components.stack.pools import gpu_pools, pool_scheduling
from components.gpu_operator.component import GpuOperator, GpuOperatorArgs
from components.gpu_operator.values import DriverPlan, build_values, driver_plan
from components.host_driver_removal.component import HostDriverRemoval, HostDriverRemovalArgs
from components.bare_metal.host_preparation import HostPreparation, HostPreparationArgs
from components.kubeflow.component import Kubeflow, KubeflowArgs
from components.catalog.names import MIG_FIELD_MANAGER
from components.mig.plan import MigPlanResult, plan_mig
from components.yandex.node_group import GpuNodeGroup, GpuNodeGroupArgs, replacement_key
from components.smoke_test.component import GpuSmokeTest, SmokeTarget, SmokeTestArgs


@dataclass
class Platform:
    """Everything the program created, for the outputs module."""

    config: StackConfig
    access: ClusterAccess
    mig: MigPlanResult
    node_groups: dict[str, GpuNodeGroup] = field(default_factory=dict)
    gpu_operator: GpuOperator | None = None
    driver: DriverPlan | None = None
    kubeflow: Kubeflow | None = None
    host_preparation: HostPreparation | None = None
    host_driver_removal: HostDriverRemoval | None = None
    node_labels: BareMetalNodeLabels | None = None
    mig_labels: BareMetalNodeLabels | None = None
    smoke_test: GpuSmokeTest | None = None


def build_platform(stack: StackConfig) -> Platform:
    """Register every resource the stack declares."""
    cluster = stack.cluster
    kubeconfig = None
    if cluster.bare_metal is not None:
        kubeconfig = pulumi.Config().require_secret(cluster.bare_metal.kubeconfig_secret)
    access = ClusterAccess(cluster.name, ClusterAccessArgs(cluster=cluster, kubeconfig=kubeconfig))
    mig, _ = plan_mig(stack)  # the config check already refused any MIG problem
    platform = Platform(config=stack, access=access, mig=mig)
    for group_name, group in sorted(stack.node_groups.items()):
        platform.node_groups[group_name] = GpuNodeGroup(
            f"gpu-{group_name}",
            GpuNodeGroupArgs(
                group_name=group_name,
                group=group,
                cluster_id=access.cluster_id,
                cluster_name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                extra_labels=mig.labels(group_name),
                environment=stack.environment.name,
                production=stack.environment.production,
            ),
        )
    operator_prerequisites: list[pulumi.Resource] = list(platform.node_groups.values())
    if stack.bare_metal is not None:
        operator_prerequisites.extend(_bare_metal(stack, platform))
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
                depends_on=operator_prerequisites,
            ),
        )
    if stack.bare_metal is not None and platform.gpu_operator is not None:
        # After the release: the label names a config that the release's mig-parted ConfigMap defines.
        platform.mig_labels = BareMetalNodeLabels(
            "mig-config",
            NodeLabelsArgs(
                labels={
                    node.name: platform.mig.labels(node.name)
                    for node in stack.bare_metal.nodes
                    if platform.mig.labels(node.name)
                },
                provider=access.provider,
                field_manager=MIG_FIELD_MANAGER,
                depends_on=[platform.gpu_operator],
            ),
        )
    removal_pools = [pool for pool in pools if pool.host_driver_removal]
    if removal_pools and platform.gpu_operator is not None:
        platform.host_driver_removal = HostDriverRemoval(
            "host-driver-removal",
            HostDriverRemovalArgs(
                config=stack.host_driver_removal,
                taints=[taint for pool in removal_pools for taint in pool.taints],
                operator_namespace=stack.gpu_operator.namespace,
                provider=access.provider,
                depends_on=[platform.gpu_operator],
            ),
        )
    if stack.smoke_test.enabled and platform.gpu_operator is not None:
        platform.smoke_test = GpuSmokeTest(
            "gpu-smoke-test",
            SmokeTestArgs(
                config=stack.smoke_test,
                targets=smoke_targets(stack, platform.mig),
                namespace=stack.gpu_operator.namespace,
                provider=access.provider,
                depends_on=[platform.gpu_operator, *operator_prerequisites],
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


def _bare_metal(stack: StackConfig, platform: Platform) -> list[pulumi.Resource]:
    """Host preparation over SSH and node labels; returns what the GPU Operator must wait for."""
    bare_metal = stack.bare_metal
    assert bare_metal is not None
    secrets = pulumi.Config()
    created: list[pulumi.Resource] = []
    if bare_metal.host_preparation.enabled:
        bastion = bare_metal.ssh.bastion
        host_driver = stack.gpu_operator.host_driver
        platform.host_preparation = HostPreparation(
            "host-preparation",
            HostPreparationArgs(
                config=bare_metal,
                required_min_driver=minimum_driver(stack.cuda.version, stack.cuda.check),
                expected_driver_version=host_driver.version if host_driver else "",
                private_key=secrets.require_secret(bare_metal.ssh.private_key_secret),
                bastion_private_key=(
                    secrets.require_secret(bastion.private_key_secret)
                    if bastion and bastion.private_key_secret
                    else None
                ),
            ),
        )
        created.append(platform.host_preparation)
    platform.node_labels = BareMetalNodeLabels(
        "gpu-nodes",
        NodeLabelsArgs(
            labels={node.name: bare_metal_labels(node) for node in bare_metal.nodes},
            provider=platform.access.provider,
        ),
    )
    created.append(platform.node_labels)
    return created


def smoke_targets(stack: StackConfig, mig: MigPlanResult) -> list[SmokeTarget]:
    """One target per GPU pool and per GPU resource it advertises (each MIG profile in use)."""
    targets: list[SmokeTarget] = []
    for pool in gpu_pools(stack):
        if pool.name in stack.smoke_test.skip_pools:
            continue
        decision = mig.pools.get(pool.name)
        resources = list(decision.resources(mig.strategy)) if decision else [GPU_RESOURCE]
        scheduling = pool_scheduling(pool)
        targets.extend(
            SmokeTarget(
                pool=pool.name,
                resource=resource,
                node_selector=scheduling["nodeSelector"],
                tolerations=scheduling["tolerations"],
                revision="" if pool.bare_metal else replacement_key(stack.node_groups[pool.name]),
            )
            for resource in resources
        )
    return targets
