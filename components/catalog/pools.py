"""A GPU pool: a set of identical GPU nodes, whatever provides them (a Yandex node group, a bare-metal node, the
nodes of an existing cluster that a label selector picks).

The GPU Operator values (tolerations, driver checks), MIG, the smoke test and the outputs read pools,
so they do not care whether the nodes come from a cloud, a rack or someone else's provisioning. The stack's
platform (``components.stack.platforms``) builds them from the stack config, once per run; capabilities receive
them as plain data, and what differs between platforms is data here (``source``, ``node_selector``,
``gpu_counts``), never a switch on the platform.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from components.catalog.gpus import GpuModel
from components.catalog.kubernetes import Taint, tolerations_for


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
