"""The Yandex GPU node group ComponentResource.

Changing ``gpuEnvironment`` (and, on this provider version, the taints or the scale kind: the
catalog's ``replacements`` table) replaces the node group. Pulumi replaces create-before-delete by
default, but two groups cannot share a cloud-side name, so the name carries a short digest of exactly
those fields: a replacement brings up a new, differently named group first and deletes the old one only
when the new one is ready, so the cluster never has zero GPU nodes. The zone, the subnet, NAT and the
security groups change in place: the subnet goes in the network interface, never in the deprecated
``allocation_policy.location.subnet_id`` (which the provider replaces on).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.catalog.names import GPU_NODE_GROUP_TYPE
from components.yandex import sdk as yandex_sdk
from components.yandex.config import NodeGroupConfig
from components.yandex.naming import cloud_name, node_labels


@dataclass(frozen=True)
class GpuNodeGroupArgs:
    """Inputs of one GPU node group."""

    group_name: str
    group: NodeGroupConfig
    cluster_id: pulumi.Input[str]
    cluster_name: str
    kubernetes_version: str
    extra_labels: dict[str, str] | None = None
    environment: str = ""
    production: bool = False


class GpuNodeGroup(pulumi.ComponentResource):
    """A Yandex Managed Kubernetes node group of GPU nodes."""

    node_group: yandex_sdk.KubernetesNodeGroup
    node_group_id: pulumi.Output[str]
    cloud_name: str
    labels: dict[str, str]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_NODE_GROUP_TYPE, name, None, opts)
        group = args.group
        self.cloud_name = cloud_name(args.cluster_name, args.group_name, group)
        self.labels = dict(sorted({**node_labels(args.group_name, group), **(args.extra_labels or {})}.items()))
        self.node_group = yandex_sdk.KubernetesNodeGroup(
            f"{name}-group",
            name=self.cloud_name,
            description=f"gpu-platform GPU group {args.group_name} ({group.model.key}, {group.gpu_environment})",
            cluster_id=args.cluster_id,
            version=group.kubernetes_version or args.kubernetes_version,
            instance_template=self._instance_template(group),
            scale_policy=self._scale_policy(group),
            allocation_policy=yandex_sdk.NodeGroupAllocationPolicy(
                locations=[yandex_sdk.NodeGroupLocation(zone=group.location.zone)]
            ),
            maintenance_policy=yandex_sdk.NodeGroupMaintenancePolicy(
                auto_upgrade=group.maintenance.auto_upgrade,
                auto_repair=group.maintenance.auto_repair,
                maintenance_windows=[
                    yandex_sdk.NodeGroupMaintenanceWindow(day=w.day, start_time=w.start_time, duration=w.duration)
                    for w in group.maintenance.windows
                ],
            ),
            deploy_policy=yandex_sdk.NodeGroupDeployPolicy(
                max_expansion=group.deploy.max_expansion, max_unavailable=group.deploy.max_unavailable
            ),
            node_labels=self.labels,
            node_taints=list(group.taints),
            labels={
                "managed-by": "gpu-platform",
                "node-group": args.group_name,
                "environment": args.environment,
                "production": str(args.production).lower(),
            },
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=False),
        )
        self.node_group_id = self.node_group.id
        self.register_outputs({"nodeGroupId": self.node_group_id, "cloudName": self.cloud_name})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: the node group (never the component, which the SDK expands)."""
        return [self.node_group]

    @staticmethod
    def _instance_template(group: NodeGroupConfig) -> yandex_sdk.NodeGroupInstanceTemplate:
        return yandex_sdk.NodeGroupInstanceTemplate(
            platform_id=group.platform,
            resources=yandex_sdk.NodeGroupResources(
                gpus=group.resources.gpus,
                cores=group.resources.cores,
                memory=group.resources.memory,
                core_fraction=group.resources.core_fraction,
            ),
            boot_disk=yandex_sdk.NodeGroupBootDisk(type=group.boot_disk.type, size=group.boot_disk.size),
            gpu_settings=yandex_sdk.NodeGroupGpuSettings(gpu_environment=group.gpu_environment),
            scheduling_policy=yandex_sdk.NodeGroupScheduling(preemptible=group.preemptible),
            network_interfaces=[
                yandex_sdk.NodeGroupNetworkInterface(
                    subnet_ids=[group.location.subnet_id],
                    nat=group.nat,
                    security_group_ids=list(group.security_group_ids) or None,
                )
            ],
            container_runtime=yandex_sdk.NodeGroupContainerRuntime(type="containerd"),
        )

    @staticmethod
    def _scale_policy(group: NodeGroupConfig) -> yandex_sdk.NodeGroupScalePolicy:
        if group.scale.auto is not None:
            auto = group.scale.auto
            return yandex_sdk.NodeGroupScalePolicy(
                auto_scale=yandex_sdk.NodeGroupAutoScale(min=auto.min, max=auto.max, initial=auto.initial)
            )
        assert group.scale.fixed is not None  # the config model guarantees exactly one
        return yandex_sdk.NodeGroupScalePolicy(fixed_scale=yandex_sdk.NodeGroupFixedScale(size=group.scale.fixed.size))
