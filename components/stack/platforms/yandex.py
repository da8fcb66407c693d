"""Yandex Managed Kubernetes: GPU node groups the program creates in an existing cluster.

The Yandex SDK (seconds of import) is loaded only when a Yandex stack builds its resources: the node-group
component and the cluster lookup are imported inside ``create_nodes`` and ``cluster_access``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pulumi

from components.base.problems import Problem, join_path
from components.catalog.drivers import PREINSTALLED_ENVIRONMENT
from components.catalog.names import GPU_NODE_GROUP_TYPE, NODE_GROUP_LABEL
from components.catalog.pools import GpuPool, pool_scheduling
from components.catalog.yandex import YANDEX_GPU_PLATFORMS, yandex_label_value_problem
from components.cluster.access import ClusterAccessArgs
from components.cluster.config import YandexClusterConfig
from components.gpu_operator.drivers import PoolDriverRequest
from components.mig.decisions import MigRequest
from components.stack.platforms.base import GpuPlatform, PlatformNodes, json_section
from components.yandex.config import node_group_name_problem
from components.yandex.naming import node_labels, replacement_fields, replacement_key

if TYPE_CHECKING:
    from components.stack.config import StackConfig
    from components.stack.plan import Plan

#: Every GPU count a Yandex VM shape offers (a recorded MIG plan of a group is checked against them).
_VM_GPU_COUNTS = tuple(sorted({n for platform in YANDEX_GPU_PLATFORMS.values() for n in platform.allowed_gpus}))


class YandexPlatform(GpuPlatform):
    """``cluster.kind: yandex``: each GPU node group (``nodeGroups``, after ``nodeGroupDefaults``) is a pool."""

    kind = "yandex"
    sections = ("nodeGroupDefaults", "nodeGroups")
    pool_source = "yandex-node-group"
    pool_noun = "Yandex node group"
    creates = (GPU_NODE_GROUP_TYPE,)

    def problems(self, stack: StackConfig) -> Iterator[Problem]:
        for name, group in stack.node_groups.items():
            path = join_path("nodeGroups", name)
            name_problem = node_group_name_problem(name)
            if name_problem:
                yield Problem(path, name_problem)
            yield from group.problems(path)
            yield from group.version_skew_problems(
                stack.cluster.kubernetes_version, join_path(path, "kubernetesVersion")
            )
        problem = yandex_label_value_problem(stack.environment.name)
        if problem:  # the environment name is the value of every node group's ``environment`` label
            yield Problem("environment.name", f"{problem}; it labels every node group")

    def handover_pools(self, stack: StackConfig) -> dict[str, bool]:
        return {name: group.host_driver_removal for name, group in stack.node_groups.items()}

    def written_pool_names(self, config: Mapping[str, Any]) -> set[str]:
        groups = json_section(config, "nodeGroups")
        return set(groups) if isinstance(groups, dict) else set()

    def pool_names(self, stack: StackConfig) -> list[str]:
        return list(stack.gpu_node_groups)

    def other_pools(self, stack: StackConfig) -> list[str]:
        return [name for name in stack.node_groups if name not in stack.gpu_node_groups]

    def operator_driver_pools(self, stack: StackConfig) -> dict[str, bool]:
        return {
            name: group.gpu_environment != PREINSTALLED_ENVIRONMENT for name, group in stack.gpu_node_groups.items()
        }

    def pools(self, stack: StackConfig) -> tuple[GpuPool, ...]:
        return tuple(
            GpuPool(
                name=name,
                config_path=join_path("nodeGroups", name),
                model=group.model,
                gpus_per_node=group.resources.gpus,
                max_nodes=group.scale.max_nodes,
                taints=tuple(group.parsed_taints),
                preinstalled_driver=group.gpu_environment == PREINSTALLED_ENVIRONMENT,
                host_driver_removal=group.host_driver_removal,
                labels=dict(group.labels),
                source=self.pool_source,
                node_selector={NODE_GROUP_LABEL: name},
                pool_label=name,
                gpu_counts=_VM_GPU_COUNTS,
                revision=replacement_key(group),
            )
            for name, group in sorted(stack.gpu_node_groups.items())
        )

    def mig_requests(self, stack: StackConfig) -> dict[str, MigRequest]:
        return {
            name: MigRequest(join_path("nodeGroups", name, "mig"), group.mig, group.platform_facts.mig_supported)
            for name, group in stack.node_groups.items()
        }

    def driver_requests(self, stack: StackConfig) -> dict[str, PoolDriverRequest]:
        return {
            name: PoolDriverRequest(join_path("nodeGroups", name, "driver"), group.driver)
            for name, group in stack.gpu_node_groups.items()
        }

    def cluster_access(self, plan: Plan, secrets: Mapping[str, pulumi.Output[str]]) -> ClusterAccessArgs:
        from components.yandex.cluster import find_cluster  # the Yandex SDK: Yandex stacks only

        cluster = plan.config.cluster
        if not isinstance(cluster, YandexClusterConfig):  # the registry picks this platform by this kind
            raise TypeError(f"the Yandex platform needs a yandex cluster, not {cluster.kind}")
        found = find_cluster(cluster.name, cluster.cluster_id, cluster.endpoint)
        return ClusterAccessArgs(cluster, found.kubeconfig, cluster_id=found.cluster_id, endpoint=found.endpoint)

    def create_nodes(
        self, plan: Plan, cluster_id: pulumi.Output[str], secrets: Mapping[str, pulumi.Output[str]]
    ) -> PlatformNodes:
        from components.yandex.node_group import GpuNodeGroup, GpuNodeGroupArgs  # the Yandex SDK (see above)

        stack = plan.config
        groups = {
            name: GpuNodeGroup(
                f"gpu-{name}",
                GpuNodeGroupArgs(
                    group_name=name,
                    group=group,
                    cluster_id=cluster_id,
                    cluster_name=stack.cluster.name,
                    kubernetes_version=stack.cluster.kubernetes_version,
                    extra_labels=plan.node_labels(name),
                    environment=stack.environment.name,
                    production=stack.environment.production,
                ),
            )
            for name, group in sorted(stack.node_groups.items())
        }
        ready = [resource for group in groups.values() for resource in group.ready]
        return PlatformNodes(ready=ready, created={"nodeGroups": groups})

    def declared_node_labels(self, plan: Plan) -> dict[str, dict[str, str]]:
        groups = plan.config.node_groups
        return {
            pool.name: {**node_labels(pool.name, groups[pool.name]), **plan.node_labels(pool.name)}
            for pool in plan.pools
        }

    def outputs(self, plan: Plan, nodes: PlatformNodes) -> dict[str, Any]:
        """``gpuNodeGroups``: per GPU node group, identity, hardware and how to schedule onto it."""
        result: dict[str, Any] = {}
        for name, component in nodes.created.get("nodeGroups", {}).items():
            group = plan.config.node_groups[name]
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
                "scheduling": pool_scheduling(plan.pool(name)),
                "replacementFields": replacement_fields(group),
            }
        return {"gpuNodeGroups": result}
