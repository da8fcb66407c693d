"""The stack's GPU nodes seen as pools, whatever provides them.

A pool is a set of identical GPU nodes: a Yandex node group or a bare-metal node. The GPU
Operator values (tolerations, driver checks), MIG and the outputs read pools, so they do not care
whether the nodes come from a cloud or a rack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.catalog.gpus import GpuModel, gpu_model
from components.catalog.kubernetes import Taint, parse_taint, tolerations_for
from components.stack.config import StackConfig
from components.base.config_model import join_path
from components.catalog.names import NODE_GROUP_LABEL


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
    bare_metal: bool = False


def gpu_pools(stack: StackConfig) -> list[GpuPool]:
    """Every GPU pool of the stack, in a stable order."""
    pools = [
        GpuPool(
            name=name,
            config_path=join_path("nodeGroups", name),
            model=group.model,
            gpus_per_node=group.resources.gpus,
            max_nodes=group.scale.max_nodes,
            taints=tuple(group.parsed_taints),
            preinstalled_driver=group.gpu_environment == "runc_drivers_cuda",
            host_driver_removal=group.host_driver_removal,
            labels=dict(group.labels),
        )
        for name, group in sorted(stack.node_groups.items())
        if group.resources.gpus > 0
    ]
    if stack.bare_metal is not None:
        pools.extend(
            GpuPool(
                name=node.name,
                config_path=join_path("bareMetal", "nodes", index),
                model=gpu_model(node.gpu_model),
                gpus_per_node=node.gpus,
                max_nodes=1,
                taints=tuple(parse_taint(text) for text in node.taints),
                preinstalled_driver=True,
                labels=dict(node.labels),
                bare_metal=True,
            )
            for index, node in enumerate(stack.bare_metal.nodes)
        )
    return pools


def gpu_taints(pools: list[GpuPool]) -> list[Taint]:
    """Every distinct taint carried by GPU nodes, in a stable order."""
    return sorted({taint for pool in pools for taint in pool.taints}, key=str)


def pool_scheduling(pool: GpuPool) -> dict[str, Any]:
    """What a pod needs to land on the pool: a node selector and a toleration for each taint."""
    selector = {"kubernetes.io/hostname": pool.name} if pool.bare_metal else {NODE_GROUP_LABEL: pool.name}
    return {"nodeSelector": selector, "tolerations": tolerations_for(pool.taints)}
