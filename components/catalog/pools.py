"""A GPU pool: a set of identical GPU nodes, whatever provides them (a Yandex node group, a bare-metal node, the
nodes of an existing cluster that a label selector picks).

The GPU Operator values (tolerations, driver checks), MIG, the smoke test and the outputs read pools,
so they do not care whether the nodes come from a cloud, a rack or someone else's provisioning. The stack's
platform (``components.stack.platforms``) builds them from the stack config, once per run; capabilities receive
them as plain data, and what differs between platforms is data here (``source``, ``node_selector``,
``gpu_counts``), never a switch on the platform.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog.gpus import GpuModel
from components.catalog.kubernetes import Taint, tolerations_for
from components.catalog.names import (
    GPU_MODEL_LABEL,
    GPU_NODE_LABEL,
    HOST_DRIVER_REMOVAL_ENABLED,
    HOST_DRIVER_REMOVAL_LABEL,
    NODE_GROUP_LABEL,
)


@dataclass(frozen=True)
class GpuPool:
    """Identical GPU nodes, and where in the config they are declared."""

    name: str
    config_path: str
    model: GpuModel
    gpus_per_node: int
    max_nodes: int
    taints: tuple[Taint, ...]
    preinstalled_driver: bool
    host_driver_removal: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    #: Where the nodes come from, as the outputs name it (``gpuPools.<pool>.source``): the platform's word.
    source: str = ""
    #: The labels that select exactly the pool's nodes: what a pod's nodeSelector, the status command and the
    #: node agent match a node by (a group's label, a host's name, or the selector an existing cluster's pool gives).
    node_selector: dict[str, str] = field(default_factory=dict)
    #: The value of the pool label (``gpu-platform.io/node-group``) its nodes carry: the pool's name, or the
    #: bare-metal ``pool`` that hosts share (one node agent budget).
    pool_label: str = ""
    #: Every GPU count a node of the pool can have (a recorded MIG plan is checked against it); None: no fact.
    gpu_counts: tuple[int, ...] | None = None
    #: Changes when the pool's nodes are replaced (a Yandex group's replacement key; "" elsewhere),
    #: so work bound to the nodes (the smoke Jobs) runs again on the new ones.
    revision: str = ""


def gpu_taints(pools: Iterable[GpuPool]) -> list[Taint]:
    """Every distinct taint carried by GPU nodes, in a stable order."""
    return sorted({taint for pool in pools for taint in pool.taints}, key=str)


def pool_scheduling(pool: GpuPool) -> dict[str, Any]:
    """What a pod needs to land on the pool: a node selector and a toleration for each taint."""
    return {"nodeSelector": dict(pool.node_selector), "tolerations": tolerations_for(pool.taints)}


def gpu_node_labels(
    pool_label: str,
    gpu_model: str,
    *,
    host_driver_removal: bool = False,
    labels: Mapping[str, str] | None = None,
    owned: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every label the program puts on a GPU node of a pool, whatever puts it there (a Yandex group at creation, a
    bare-metal host's NodePatch, the node agent's labeller on an existing cluster): the GPU, pool and model labels
    and the hand-over opt-in, then the config's own ``labels``, then ``owned`` (what the stack decides: the driver
    group, the MIG config), which no config label can replace. Sorted, so every writer writes the same map."""
    result = {NODE_GROUP_LABEL: pool_label, GPU_MODEL_LABEL: gpu_model, GPU_NODE_LABEL: "true"}
    if host_driver_removal:
        result[HOST_DRIVER_REMOVAL_LABEL] = HOST_DRIVER_REMOVAL_ENABLED
    result.update(labels or {})
    result.update(owned or {})
    return dict(sorted(result.items()))
