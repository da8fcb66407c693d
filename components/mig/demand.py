"""``mig.demand`` against the pools: the explicit mode's check, and the layouts-from-demand plan.

Explicit mode: the planner's answer for the fleet, and what the configured layouts lack of the demand.
Layouts from demand: what the explicitly configured pools of a model leave of its demand is partitioned
onto its ``fromDemand`` pools (catalog.mig.pool_planner), stable against the recorded plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.base.problems import Problem, join_path
from components.catalog import mig as catalog
from components.catalog.pools import GpuPool
from components.mig.config import MigDemand
from components.mig.decisions import MigPlanResult, PoolMig, planned_decision
from components.mig.plan_yaml import MIG_COMMAND
from components.mig.recorded import RecordedPlan


def explicit_decisions(result: MigPlanResult, pools: Sequence[GpuPool], model: str) -> list[tuple[GpuPool, PoolMig]]:
    return [(p, result.pools[p.name]) for p in pools if p.model.key == model and p.name in result.pools]


def check_demand(
    result: MigPlanResult,
    path: str,
    demand: MigDemand,
    pools: Sequence[GpuPool],
    unresolved: set[str],
) -> list[Problem]:
    """The explicit mode: the planner's answer for the fleet, and what the configured layouts lack."""
    model_pools = [p for p in pools if p.model.key == demand.gpu_model]
    fleet = sum(p.gpus_per_node * p.max_nodes for p in model_pools)
    decided = explicit_decisions(result, pools, demand.gpu_model)
    in_place = [(p.model.key, layout) for p, d in decided for layout in d.gpu_layouts * p.max_nodes]
    try:
        planned = catalog.plan(demand.gpu_model, demand.profiles, fleet, current=in_place)
    except (catalog.MigError, ValueError) as error:
        return [Problem(_demand_key(path, error), str(error))]
    result.demand_plans.append(planned)
    missing = "" if demand.gpu_model in unresolved else _not_provided(demand.profiles, decided)
    return [Problem(path, missing + _planned_instead(planned))] if missing else []


def _demand_key(path: str, error: Exception) -> str:
    """The key of a demand entry a refusal is about: its model, one of its profiles, or the entry."""
    if isinstance(error, catalog.UnknownGpuModel):
        return join_path(path, "gpuModel")
    if isinstance(error, catalog.UnknownMigProfile):
        return join_path(path, "profiles")
    return path


def plan_from_demand(
    result: MigPlanResult,
    path: str,
    demand: MigDemand,
    pools: Sequence[GpuPool],
    planned_pools: Sequence[GpuPool],
    recorded: RecordedPlan | None,
) -> list[Problem]:
    """Layouts from demand: what explicit pools of the model leave, partitioned onto the planned pools."""
    provided: dict[str, int] = {}
    for pool, decision in explicit_decisions(result, pools, demand.gpu_model):
        for layout in decision.gpu_layouts:
            for name, count in (layout or {}).items():
                provided[name] = provided.get(name, 0) + count * pool.max_nodes
    rest = {name: max(0, n - provided.get(name, 0)) for name, n in demand.profiles.items()}
    shapes: list[catalog.PoolShape] = []
    problems: list[Problem] = []
    for pool in planned_pools:
        current, refused = recorded.in_place(pool) if recorded else (None, [])
        problems.extend(refused)
        shapes.append(catalog.PoolShape(pool.name, pool.model.key, pool.max_nodes, pool.gpus_per_node, current))
    if problems:
        return problems
    try:
        plan = catalog.plan_pools(rest, shapes)
    except (catalog.MigError, ValueError) as error:
        names = ", ".join(pool.config_path for pool in planned_pools)
        return [Problem(path, f"layouts from demand ({names}): {error}")]
    result.pool_plans.append(plan)
    for pool, layouts in zip(planned_pools, plan.pools, strict=True):
        result.pools[pool.name] = planned_decision(pool, layouts.gpu_layouts)
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
    command = f"{MIG_COMMAND} plan --model {planned.model} --gpus {planned.fleet_size} --format yaml {wanted}"
    return (
        f"; the fleet can hold the demand on {planned.gpus_used} GPUs (re-partitioning {planned.repartitioned}): "
        f"`{command}` prints their layouts"
    )
