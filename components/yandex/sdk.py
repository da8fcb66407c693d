"""The one module that imports the Yandex Pulumi SDK.

``pulumi-yandex-marketmaker`` is a community bridge of the current Terraform provider (the official
``pulumi-yandex`` is archived and has no ``gpu_settings``). Keeping every import here makes a later
switch of package one edit. The type tokens the mocks, the review and the policies recognise are in
``components.catalog.names`` (``NODE_GROUP_TYPE``, ``GET_CLUSTER_TOKEN``), which imports no SDK.
"""

from __future__ import annotations

import pulumi_yandex_marketmaker as yandex

KubernetesNodeGroup = yandex.KubernetesNodeGroup
get_kubernetes_cluster_output = yandex.get_kubernetes_cluster_output

NodeGroupInstanceTemplate = yandex.KubernetesNodeGroupInstanceTemplateArgs
NodeGroupResources = yandex.KubernetesNodeGroupInstanceTemplateResourcesArgs
NodeGroupBootDisk = yandex.KubernetesNodeGroupInstanceTemplateBootDiskArgs
NodeGroupGpuSettings = yandex.KubernetesNodeGroupInstanceTemplateGpuSettingsArgs
NodeGroupScheduling = yandex.KubernetesNodeGroupInstanceTemplateSchedulingPolicyArgs
NodeGroupNetworkInterface = yandex.KubernetesNodeGroupInstanceTemplateNetworkInterfaceArgs
NodeGroupContainerRuntime = yandex.KubernetesNodeGroupInstanceTemplateContainerRuntimeArgs
NodeGroupScalePolicy = yandex.KubernetesNodeGroupScalePolicyArgs
NodeGroupAutoScale = yandex.KubernetesNodeGroupScalePolicyAutoScaleArgs
NodeGroupFixedScale = yandex.KubernetesNodeGroupScalePolicyFixedScaleArgs
NodeGroupAllocationPolicy = yandex.KubernetesNodeGroupAllocationPolicyArgs
NodeGroupLocation = yandex.KubernetesNodeGroupAllocationPolicyLocationArgs
NodeGroupMaintenancePolicy = yandex.KubernetesNodeGroupMaintenancePolicyArgs
NodeGroupMaintenanceWindow = yandex.KubernetesNodeGroupMaintenancePolicyMaintenanceWindowArgs
NodeGroupDeployPolicy = yandex.KubernetesNodeGroupDeployPolicyArgs
