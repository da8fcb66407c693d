"""A GPU pool: a set of identical GPU nodes, whatever provides them (a Yandex node group, a bare-metal node).

The GPU Operator values (tolerations, driver checks), MIG, the smoke test and the outputs read pools,
so they do not care whether the nodes come from a cloud or a rack. ``components.stack.pools`` builds
them from the stack config, once per run; capabilities receive them as plain data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from components.catalog.gpus import GpuModel
from components.catalog.kubernetes import Taint, tolerations_for
from components.catalog.names import HOSTNAME_LABEL, NODE_GROUP_LABEL


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
    #: Changes when the pool's nodes are replaced (a Yandex group's replacement key; "" on bare metal),
    #: so work bound to the nodes (the smoke Jobs) runs again on the new ones.
    revision: str = ""

    @property
    def source(self) -> str:
        """Where the nodes come from, as the outputs name it."""
        return "bare-metal-node" if self.bare_metal else "yandex-node-group"


def gpu_taints(pools: Iterable[GpuPool]) -> list[Taint]:
    """Every distinct taint carried by GPU nodes, in a stable order."""
    return sorted({taint for pool in pools for taint in pool.taints}, key=str)


def pool_scheduling(pool: GpuPool) -> dict[str, Any]:
    """What a pod needs to land on the pool: a node selector and a toleration for each taint."""
    selector = {HOSTNAME_LABEL: pool.name} if pool.bare_metal else {NODE_GROUP_LABEL: pool.name}
    return {"nodeSelector": selector, "tolerations": tolerations_for(pool.taints)}
