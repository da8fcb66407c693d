"""The MIG decision of each pool and of the stack: what nodes are labelled with and what each GPU holds.

Plain data shared by the planning (components.mig.plan, components.mig.demand) and the outputs
(components.mig.outputs): a pool's config name and per-GPU layouts, the cluster-wide strategy, the
mig-parted config, and the planner's answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog import mig as catalog
from components.catalog.gpu_operator_chart import GPU_RESOURCE
from components.catalog.names import MIG_ALL_DISABLED as ALL_DISABLED
from components.catalog.names import MIG_CONFIG_LABEL
from components.catalog.pools import GpuPool
from components.mig.config import MigConfig

Layout = Mapping[str, int] | None


@dataclass(frozen=True)
class PoolMig:
    """The MIG decision for one pool: the config name its nodes are labelled with and each GPU's layout."""

    pool: GpuPool
    config_name: str
    gpu_layouts: tuple[Layout, ...]
    named: bool

    @property
    def strategy(self) -> catalog.MigStrategy:
        """single or mixed, for this pool's nodes alone."""
        return catalog.mig_strategy(self.gpu_layouts)

    def device_layouts(self) -> list[catalog.DeviceLayout]:
        """mig-parted entries: GPUs grouped by identical layout."""
        groups: dict[Any, list[int]] = {}
        for index, layout in enumerate(self.gpu_layouts):
            key = None if layout is None else tuple(sorted(layout.items()))
            groups.setdefault(key, []).append(index)
        all_gpus = len(groups) == 1
        return [
            catalog.DeviceLayout(
                model=self.pool.model.key,
                devices="all" if all_gpus else indexes,
                layout=None if key is None else dict(key),
            )
            for key, indexes in groups.items()
        ]

    def resources(self, strategy: catalog.MigStrategy) -> dict[str, int]:
        """Allocatable GPU resources of one node under ``strategy``."""
        total: dict[str, int] = {}
        for layout in self.gpu_layouts:
            for name, count in catalog.advertised_resources(self.pool.model.key, layout, strategy, 1).items():
                total[name] = total.get(name, 0) + count
        return dict(sorted(total.items()))


@dataclass
class MigPlanResult:
    """Every pool's MIG decision, the cluster-wide strategy and what the operator needs."""

    pools: dict[str, PoolMig] = field(default_factory=dict)
    strategy: catalog.MigStrategy = "single"
    parted_config: dict[str, Any] | None = None
    demand_plans: list[catalog.MigPlan] = field(default_factory=list)
    #: Layouts from demand: the plan per demanded model whose pools the program partitions itself.
    pool_plans: list[catalog.PoolsPlan] = field(default_factory=list)

    def resources_per_node(self, pool: GpuPool) -> dict[str, int]:
        """Allocatable GPU resources of one node of ``pool`` (whole GPUs for GPUs without MIG)."""
        decision = self.pools.get(pool.name)
        return decision.resources(self.strategy) if decision else {GPU_RESOURCE: pool.gpus_per_node}

    def labels(self, pool_name: str) -> dict[str, str]:
        """The MIG label of a pool's nodes (empty for pools whose GPUs cannot do MIG)."""
        decision = self.pools.get(pool_name)
        return {MIG_CONFIG_LABEL: decision.config_name} if decision else {}


def custom_config_name(pool: GpuPool, layouts: tuple[Layout, ...]) -> str:
    """``gpu-platform-<pool>-<digest>``: a changed layout gets a new name, so the node label changes.

    mig-manager acts only when ``nvidia.com/mig.config`` changes; with a fixed name an edited
    layout would never be applied to nodes already carrying it.
    """
    text = json.dumps([None if layout is None else sorted(layout.items()) for layout in layouts])
    return f"gpu-platform-{pool.name}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def planned_decision(pool: GpuPool, layouts: tuple[Layout, ...]) -> PoolMig:
    """A pool's decision from the planner's layouts: all-disabled by name when it partitions nothing."""
    if not any(layouts):
        return PoolMig(pool, ALL_DISABLED, (None,) * pool.gpus_per_node, named=True)
    return PoolMig(pool, custom_config_name(pool, layouts), layouts, named=False)


def resolve_pool(pool: GpuPool, mig: MigConfig | None) -> PoolMig | None:
    """The pool's MIG decision; None for GPUs without MIG. Raises catalog.MigError for a bad layout."""
    if not pool.model.mig_capable:
        if mig is not None:
            raise catalog.MigNotSupported(
                f"{pool.model.key} cannot do MIG; MIG-capable models: {', '.join(catalog.mig_models())}"
            )
        return None
    gpus = pool.gpus_per_node
    if mig is None or mig.layout == ALL_DISABLED:
        return PoolMig(pool, ALL_DISABLED, (None,) * gpus, named=True)
    if mig.layout is not None:
        layout = catalog.named_layout(pool.model.key, mig.layout)
        return PoolMig(pool, mig.layout, (layout,) * gpus, named=True)
    if mig.custom is not None:
        catalog.place(pool.model.key, mig.custom)
        custom = (dict(mig.custom),) * gpus
        return PoolMig(pool, custom_config_name(pool, custom), custom, named=False)
    layouts: list[Layout] = [None] * gpus
    for entry in mig.per_gpu or []:
        catalog.place(pool.model.key, entry.layout)
        for index in entry.devices:
            if not 0 <= index < gpus:
                raise catalog.MigLayoutError(f"GPU index {index} does not exist; the node has GPUs 0-{gpus - 1}")
            if layouts[index] is not None:
                raise catalog.MigLayoutError(f"GPU {index} is given two layouts")
            layouts[index] = dict(entry.layout)
    return PoolMig(pool, custom_config_name(pool, tuple(layouts)), tuple(layouts), named=False)


@dataclass(frozen=True)
class MigRequest:
    """What one pool's config asks of MIG: its ``mig`` key (and where it is), and whether the platform offers MIG."""

    config_path: str
    config: MigConfig | None
    platform_offers_mig: bool
