"""Node labels that gpu-platform owns, in one place.

Node groups get them at creation (so autoscaled nodes carry them too), bare-metal nodes through a
NodePatch; the GPU Operator values, the smoke test and the stack outputs select on them.
"""

from __future__ import annotations

GPU_NODE_LABEL = "gpu-platform.io/gpu"  # "true" on every GPU node the stack manages
NODE_GROUP_LABEL = "gpu-platform.io/node-group"  # the Yandex node group (or bare-metal pool) name
GPU_MODEL_LABEL = "gpu-platform.io/gpu-model"  # the catalog model key, e.g. "V100-32GB"
FIELD_MANAGER = "gpu-platform"  # server-side apply field manager of every patch the program owns
