"""Names that gpu-platform owns, in one place: node labels, annotations, resource type tokens.

Node groups get the labels at creation (so autoscaled nodes carry them too), bare-metal nodes
through a NodePatch; the GPU Operator values, the smoke test and the stack outputs select on them.
This module imports nothing, so the policy pack reads the same names without the provider SDKs.
"""

from __future__ import annotations

GPU_NODE_LABEL = "gpu-platform.io/gpu"  # "true" on every GPU node the stack manages
NODE_GROUP_LABEL = "gpu-platform.io/node-group"  # the Yandex node group (or bare-metal pool) name
GPU_MODEL_LABEL = "gpu-platform.io/gpu-model"  # the catalog model key, e.g. "V100-32GB"
FIELD_MANAGER = "gpu-platform"  # server-side apply field manager of every patch the program owns
MIG_FIELD_MANAGER = "gpu-platform-mig"  # owns nvidia.com/mig.config on bare-metal nodes (applied after the operator)

# The GPU Operator namespace records the driver facts for the policy pack.
DRIVER_OWNER_ANNOTATION = "gpu-platform.io/driver-owner"
DRIVER_VERSION_ANNOTATION = "gpu-platform.io/driver-version"
GPU_MODELS_ANNOTATION = "gpu-platform.io/gpu-models"

# Pulumi type token of the Yandex node group (components.yandex.sdk wraps the SDK class).
NODE_GROUP_TYPE = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"
