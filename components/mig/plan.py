"""MIG as code: per-pool layouts resolved against the catalog, the mig-parted config, node labels.

Everything here is decided before a resource exists: a layout the GPU cannot place is refused with
the pool's config path, the model and the reason. The result feeds three places: the GPU Operator
values (``mig.strategy``, ``migManager``), the node labels (``nvidia.com/mig.config``, set through
the node group's labels on Yandex and a NodePatch on bare metal), and the stack outputs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.base.problems import Problem, join_path
from components.catalog import mig as catalog
from components.catalog.gpu_operator_chart import GPU_RESOURCE
from components.catalog.names import MIG_ALL_DISABLED as ALL_DISABLED
from components.catalog.names import MIG_CONFIG_LABEL
from components.catalog.pools import GpuPool
from components.mig.config import MigConfig, MigDemand, MigSettings
from components.mig.recorded import RecordedPlan

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


def _custom_name(pool: GpuPool, layouts: tuple[Layout, ...]) -> str:
    """``gpu-platform-<pool>-<digest>``: a changed layout gets a new name, so the node label changes.

    mig-manager acts only when ``nvidia.com/mig.config`` changes; with a fixed name an edited
    layout would never be applied to nodes already carrying it.
    """
    text = json.dumps([None if layout is None else sorted(layout.items()) for layout in layouts])
    return f"gpu-platform-{pool.name}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def _planned(pool: GpuPool, layouts: tuple[Layout, ...]) -> PoolMig:
    """A pool's decision from the planner's layouts: all-disabled by name when it partitions nothing."""
    if not any(layouts):
        return PoolMig(pool, ALL_DISABLED, (None,) * pool.gpus_per_node, named=True)
    return PoolMig(pool, _custom_name(pool, layouts), layouts, named=False)


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
        return PoolMig(pool, _custom_name(pool, custom), custom, named=False)
    layouts: list[Layout] = [None] * gpus
    for entry in mig.per_gpu or []:
        catalog.place(pool.model.key, entry.layout)
        for index in entry.devices:
            if not 0 <= index < gpus:
                raise catalog.MigLayoutError(f"GPU index {index} does not exist; the node has GPUs 0-{gpus - 1}")
            if layouts[index] is not None:
                raise catalog.MigLayoutError(f"GPU {index} is given two layouts")
            layouts[index] = dict(entry.layout)
    return PoolMig(pool, _custom_name(pool, tuple(layouts)), tuple(layouts), named=False)


@dataclass(frozen=True)
class MigRequest:
    """What one pool's config asks of MIG: its ``mig`` key (and where it is), and whether the platform offers MIG."""

    config_path: str
    config: MigConfig | None
    platform_offers_mig: bool


def _from_demand(request: MigRequest, pool: GpuPool, settings: MigSettings) -> bool:
    """Whether the program computes the pool's layouts: its own ``fromDemand``, or the stack-wide one."""
    if request.config is not None:
        return request.config.from_demand is True
    demanded = {entry.gpu_model for entry in settings.demand}
    return (
        settings.from_demand and request.platform_offers_mig and pool.model.mig_capable and pool.model.key in demanded
    )


def plan_mig(
    pools: Sequence[GpuPool],
    requests: Mapping[str, MigRequest],
    settings: MigSettings,
    recorded: RecordedPlan | None = None,
) -> tuple[MigPlanResult, list[Problem]]:
    """Resolve every pool and the demand; problems carry config paths. Called once per run, by the stack plan.

    Pools in the layouts-from-demand mode are planned per demanded model after the others: the demand
    the explicitly configured pools of that model do not provide is partitioned onto them, stable
    against ``recorded`` (the layouts the previous plan gave them).
    """
    result = MigPlanResult()
    problems: list[Problem] = []
    unresolved: set[str] = set()  # models with a pool refused above: their layouts are not checked against demand
    planned: dict[str, list[GpuPool]] = {}  # model -> pools whose layouts come from demand
    demanded = {entry.gpu_model for entry in settings.demand}
    for pool in pools:
        request = requests[pool.name]
        path, mig, platform_offers_mig = request.config_path, request.config, request.platform_offers_mig
        if mig is not None and not platform_offers_mig:
            problems.append(Problem(path, f"the platform of {pool.config_path} does not offer MIG"))
            continue
        if _from_demand(request, pool, settings):
            if not pool.model.mig_capable:
                problems.append(Problem(join_path(path, "fromDemand"), f"{pool.model.key} cannot do MIG"))
            elif pool.model.key not in demanded:
                problems.append(
                    Problem(
                        join_path(path, "fromDemand"),
                        f"{pool.config_path} ({pool.model.key}) is planned from demand, but mig.demand has no entry "
                        f"for {pool.model.key}; add one (gpuModel: {pool.model.key}) or give the pool a layout",
                    )
                )
            else:
                planned.setdefault(pool.model.key, []).append(pool)
            continue
        try:
            decision = resolve_pool(pool, mig)
        except (catalog.MigError, ValueError) as error:
            key = join_path(path, "layout") if isinstance(error, catalog.UnknownMigConfig) else path
            problems.append(Problem(key, f"{pool.config_path} ({pool.model.key}): {error}"))
            unresolved.add(pool.model.key)
            continue
        if decision is not None:
            result.pools[pool.name] = decision
    for index, demand in enumerate(settings.demand):
        path = join_path("mig", "demand", index)
        if demand.gpu_model in planned:
            problems.extend(_plan_from_demand(result, path, demand, pools, planned[demand.gpu_model], recorded))
        else:
            problems.extend(_check_demand(result, path, demand, pools, unresolved))
    _decide_strategy(result, settings, problems)
    if not problems and any(not d.named for d in result.pools.values()):
        result.parted_config = _parted_config(result)
    return result, problems


def _decide_strategy(result: MigPlanResult, settings: MigSettings, problems: list[Problem]) -> None:
    strategies = {decision.strategy for decision in result.pools.values()}
    needed: catalog.MigStrategy = "mixed" if "mixed" in strategies else "single"
    configured = settings.strategy
    if configured == "single" and needed == "mixed":
        mixed = ", ".join(d.pool.config_path for d in result.pools.values() if d.strategy == "mixed")
        problems.append(
            Problem(
                "mig.strategy",
                f"single cannot serve GPUs with several profile types or differing layouts ({mixed}); use mixed or auto",
            )
        )
    result.strategy = needed if configured == "auto" else configured


def _explicit(result: MigPlanResult, pools: Sequence[GpuPool], model: str) -> list[tuple[GpuPool, PoolMig]]:
    return [(p, result.pools[p.name]) for p in pools if p.model.key == model and p.name in result.pools]


def _check_demand(
    result: MigPlanResult,
    path: str,
    demand: MigDemand,
    pools: Sequence[GpuPool],
    unresolved: set[str],
) -> list[Problem]:
    """The explicit mode: the planner's answer for the fleet, and what the configured layouts lack."""
    model_pools = [p for p in pools if p.model.key == demand.gpu_model]
    fleet = sum(p.gpus_per_node * p.max_nodes for p in model_pools)
    decided = _explicit(result, pools, demand.gpu_model)
    in_place = [(p.model.key, layout) for p, d in decided for layout in d.gpu_layouts * p.max_nodes]
    try:
        planned = catalog.plan(demand.gpu_model, demand.profiles, fleet, current=in_place)
    except (catalog.MigError, ValueError) as error:
        return [Problem(path, str(error))]
    result.demand_plans.append(planned)
    missing = "" if demand.gpu_model in unresolved else _not_provided(demand.profiles, decided)
    return [Problem(path, missing + _planned_instead(planned))] if missing else []


def _plan_from_demand(
    result: MigPlanResult,
    path: str,
    demand: MigDemand,
    pools: Sequence[GpuPool],
    planned_pools: Sequence[GpuPool],
    recorded: RecordedPlan | None,
) -> list[Problem]:
    """Layouts from demand: what explicit pools of the model leave, partitioned onto the planned pools."""
    provided: dict[str, int] = {}
    for pool, decision in _explicit(result, pools, demand.gpu_model):
        for layout in decision.gpu_layouts:
            for name, count in (layout or {}).items():
                provided[name] = provided.get(name, 0) + count * pool.max_nodes
    rest = {name: max(0, n - provided.get(name, 0)) for name, n in demand.profiles.items()}
    shapes = [
        catalog.PoolShape(
            pool.name,
            pool.model.key,
            pool.max_nodes,
            pool.gpus_per_node,
            recorded.layouts(pool.name, pool.model.key, pool.gpus_per_node) if recorded else None,
        )
        for pool in planned_pools
    ]
    try:
        plan = catalog.plan_pools(rest, shapes)
    except (catalog.MigError, ValueError) as error:
        names = ", ".join(pool.config_path for pool in planned_pools)
        return [Problem(path, f"layouts from demand ({names}): {error}")]
    result.pool_plans.append(plan)
    for pool, layouts in zip(planned_pools, plan.pools, strict=True):
        result.pools[pool.name] = _planned(pool, layouts.gpu_layouts)
    return []


def _not_provided(demand: Mapping[str, int], configured: Sequence[tuple[GpuPool, PoolMig]]) -> str:
    """What the configured layouts (every node of each pool, at its maximum size) lack of ``demand``; "" if nothing."""
    provided: dict[str, int] = {}
    for pool, decision in configured:
        for layout in decision.gpu_layouts:
            for name, count in (layout or {}).items():
                provided[name] = provided.get(name, 0) + count * pool.max_nodes
    missing = {name: n - provided.get(name, 0) for name, n in demand.items() if n > provided.get(name, 0)}
    if not missing:
        return ""
    lacking = ", ".join(f"{provided.get(name, 0)} of {demand[name]} x {name}" for name in missing)
    pools = ", ".join(pool.config_path for pool, _ in configured) or "no pool"
    return f"the layouts configured ({pools}) provide {lacking}: missing {catalog.count_text(missing)}"


def _planned_instead(planned: catalog.MigPlan) -> str:
    """Where to go instead: the planner's answer, and the CLI line that prints it as config."""
    wanted = " ".join(f"{name}={n}" for name, n in planned.demand.items())
    command = f"python -m components.catalog.mig plan --model {planned.model} --gpus {planned.fleet_size} --format yaml {wanted}"
    return (
        f"; the fleet can hold the demand on {planned.gpus_used} GPUs (re-partitioning {planned.repartitioned}): "
        f"`{command}` prints their layouts"
    )


def _parted_config(result: MigPlanResult) -> dict[str, Any]:
    configs: dict[str, list[catalog.DeviceLayout]] = {}
    seen: set[tuple[str, str]] = set()
    for decision in result.pools.values():
        if decision.config_name == ALL_DISABLED:
            continue
        key = (decision.config_name, decision.pool.model.key)
        if key in seen:
            continue
        seen.add(key)
        configs.setdefault(decision.config_name, []).extend(decision.device_layouts())
    return catalog.render_parted_config(configs)


def mig_values(settings: MigSettings, result: MigPlanResult) -> dict[str, Any]:
    """The GPU Operator values MIG needs: the strategy and, for custom layouts, our mig-parted config."""
    values: dict[str, Any] = {"mig": {"strategy": result.strategy}}
    manager: dict[str, Any] = {}
    if result.parted_config is not None:
        manager["config"] = {
            "create": True,
            "name": settings.config_map_name,
            "default": ALL_DISABLED,
            "data": {"config.yaml": yaml.safe_dump(result.parted_config, sort_keys=False)},
        }
    if settings.with_reboot:
        manager["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
    if manager:
        values["migManager"] = manager
    return values


def _proof(plan: catalog.MigPlan | catalog.PoolsPlan) -> dict[str, Any]:
    """What every planner answer reports: the demand, the GPUs used, the solver's proof, the GPUs it moves."""
    return {
        "demand": dict(plan.demand),
        "gpusUsed": plan.gpus_used,
        "lowerBound": plan.lower_bound,
        "optimal": plan.optimal,
        "solverStatus": plan.status,
        "fleetGpus": plan.fleet_size,
        "repartitionedGpus": plan.repartitioned,
    }


def demand_outputs(result: MigPlanResult) -> list[dict[str, Any]]:
    """The planner's answer for each declared demand: the proven fewest GPUs, per-GPU layouts and placements."""
    return [
        {
            "gpuModel": plan.model,
            **_proof(plan),
            "layouts": [dict(layout) for layout in plan.layouts],
            "placements": [gpu.describe() for gpu in plan.gpus],
        }
        for plan in result.demand_plans
    ]


def from_demand_outputs(result: MigPlanResult) -> list[dict[str, Any]]:
    """Layouts from demand: per demanded model, the proof, and per pool each GPU index's layout and placement."""
    return [
        {
            **_proof(plan),
            "recordedPlanUsed": plan.current_given,
            "pools": [
                {
                    "pool": pool.name,
                    "gpuModel": pool.model,
                    "nodes": pool.nodes,
                    "migConfig": result.pools[pool.name].config_name,
                    "gpuLayouts": [dict(layout) if layout else None for layout in pool.gpu_layouts],
                    "placements": [
                        catalog.place(pool.model, dict(layout)).describe() if layout else "MIG disabled"
                        for layout in pool.gpu_layouts
                    ],
                    "changedGpuIndexes": [index for index, changed in enumerate(pool.changed) if changed],
                    "repartitionedGpus": pool.repartitioned_gpus,
                }
                for pool in plan.pools
            ],
        }
        for plan in result.pool_plans
    ]
