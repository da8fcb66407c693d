"""MIG as code: every pool's layouts decided (``plan_mig``), the strategy, the operator's MIG values.

Everything here is decided before a resource exists: a layout the GPU cannot place is refused with
the pool's config path, the model and the reason. The result (components.mig.decisions) feeds three
places: the GPU Operator values (``mig.strategy``, ``migManager``), the node labels
(``nvidia.com/mig.config``, set through the node group's labels on Yandex and a NodePatch on bare
metal), and the stack outputs (components.mig.outputs). ``mig.demand`` is handled in components.mig.demand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.base import yaml_text
from components.base.problems import Problem, join_path
from components.catalog import mig as catalog
from components.catalog.names import MIG_ALL_DISABLED as ALL_DISABLED
from components.catalog.pools import GpuPool
from components.mig.config import MigSettings
from components.mig.decisions import MigPlanResult, MigRequest, resolve_pool
from components.mig.demand import check_demand, plan_from_demand
from components.mig.recorded import RecordedPlan


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
            problems.extend(plan_from_demand(result, path, demand, pools, planned[demand.gpu_model], recorded))
        else:
            problems.extend(check_demand(result, path, demand, pools, unresolved))
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
            "data": {"config.yaml": yaml_text.dump(result.parted_config, sort_keys=False)},
        }
    if settings.with_reboot:
        manager["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
    if manager:
        values["migManager"] = manager
    return values
