"""The ``mig`` stack outputs: the planner's answers, with the solver's proof and every GPU's placement."""

from __future__ import annotations

from typing import Any

from components.catalog import mig as catalog
from components.mig.decisions import MigPlanResult


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
