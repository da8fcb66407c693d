"""The layouts-from-demand mode, through the stack: prod with gpu-node-3 planned from demand, dev stack-wide.

What a user notices: the node gets the layouts the demand needs beyond what the explicit nodes provide,
labelled and rendered like hand-written ones; a recorded plan keeps GPUs as they are; every mistake is
refused at its key.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.catalog.mig import place
from components.catalog.names import MIG_CONFIG_LABEL
from components.mig.recorded import record_file_name, render_recorded_plan
from preview.run.runner import run_program
from tests.helpers import plan_raw, refusal, set_path, stack_raw
from tests.preview.support import project_copy, stack_config

NODE_3_MIG = "bareMetal.nodes.2.mig"
FROM_DEMAND = {"fromDemand": True}


def _prod_from_demand(**changes: Any) -> dict[str, Any]:
    raw = set_path(stack_raw("prod"), NODE_3_MIG, FROM_DEMAND)
    for path, value in changes.items():
        raw = set_path(raw, path.replace("__", "."), value)
    return raw


def test_the_node_is_cut_for_what_the_explicit_nodes_leave_and_the_rest_stays_whole() -> None:
    plan = plan_raw(_prod_from_demand())
    # gpu-node-1 (all-1g.10gb) and gpu-node-2 (3g+2g+2x1g per GPU) provide 72 x 1g.10gb and 8 x 3g.40gb of
    # the demand (40 x 1g.10gb, 12 x 3g.40gb): 4 x 3g.40gb are left, two GPUs of gpu-node-3.
    (planned,) = plan.mig.pool_plans
    assert dict(planned.demand) == {"3g.40gb": 4}
    decision = plan.mig.pools["gpu-node-3"]
    assert decision.gpu_layouts == ({"3g.40gb": 2}, {"3g.40gb": 2}, None, None, None, None, None, None)
    assert plan.mig.resources_per_node(plan.pool("gpu-node-3")) == {"nvidia.com/gpu": 6, "nvidia.com/mig-3g.40gb": 4}
    assert planned.optimal and planned.gpus_used == planned.lower_bound == 2


def test_the_planned_layouts_reach_the_mig_parted_config_and_the_node_label() -> None:
    plan = plan_raw(_prod_from_demand())
    name = plan.mig.pools["gpu-node-3"].config_name
    assert name.startswith("gpu-platform-gpu-node-3-")
    assert plan.mig.labels("gpu-node-3") == {MIG_CONFIG_LABEL: name}
    entries = plan.mig.parted_config["mig-configs"][name]  # type: ignore[index]
    assert [(entry["devices"], entry["mig-enabled"]) for entry in entries] == [
        ([0, 1], True),
        ([2, 3, 4, 5, 6, 7], False),
    ]
    assert entries[0]["mig-devices"] == {"3g.40gb": 2}


def test_a_bigger_demand_moves_more_gpus_and_changes_the_label() -> None:
    small = plan_raw(_prod_from_demand())
    raw = set_path(stack_raw("prod"), NODE_3_MIG, FROM_DEMAND)
    raw["mig"]["demand"][0]["profiles"] = {"1g.10gb": 40, "3g.40gb": 20}
    raw["kubeflow"]["gpuQuotaCheck"] = "warn"  # the node keeps 2 whole GPUs, below team-llm's quota of 4
    big = plan_raw(raw)
    assert big.mig.resources_per_node(big.pool("gpu-node-3"))["nvidia.com/mig-3g.40gb"] == 12
    assert big.mig.pools["gpu-node-3"].config_name != small.mig.pools["gpu-node-3"].config_name


def test_stack_wide_mode_plans_every_pool_of_the_demanded_model_without_its_own_mig_key() -> None:
    raw = stack_raw("dev")
    del raw["nodeGroups"]["a100"]["mig"]
    raw["mig"] = {"fromDemand": True, "demand": [{"gpuModel": "A100-80GB", "profiles": {"1g.10gb": 7, "3g.40gb": 2}}]}
    plan = plan_raw(raw)
    decision = plan.mig.pools["a100"]
    # Two single-GPU nodes, identical: each node's GPU holds half the demand, rounded up.
    (layout,) = decision.gpu_layouts
    assert layout is not None and layout["1g.10gb"] * 2 >= 7 and layout["3g.40gb"] * 2 >= 2
    place("A100-80GB", dict(layout))
    assert "v100" not in plan.mig.pools  # V100 cannot do MIG: not planned, not refused


@pytest.mark.parametrize(
    ("raw", "key", "text"),
    [
        (
            set_path(stack_raw("prod"), "mig.demand", []) | {"bareMetal": _prod_from_demand()["bareMetal"]},
            "bareMetal.nodes[2].mig.fromDemand",
            "mig.demand has no entry for H100-80GB; add one (gpuModel: H100-80GB) or give the pool a layout",
        ),
        (
            _prod_from_demand(mig__demand=[{"gpuModel": "H100-80GB", "profiles": {"7g.80gb": 30}}]),
            "mig.demand[0]",
            "layouts from demand (bareMetal.nodes[2]): 30 x 7g.80gb needs at least 30 GPUs of H100-80GB, the pools "
            "planned from demand (gpu-node-3) have 8; with all of them partitioned, still missing 22 x 7g.80gb",
        ),
        (
            set_path(stack_raw("dev"), "nodeGroups.v100.mig", FROM_DEMAND),
            "nodeGroups.v100.mig",
            "does not offer MIG",
        ),
        (
            _prod_from_demand(bareMetal__nodes__2__mig={"fromDemand": True, "layout": "all-1g.10gb"}),
            "bareMetal.nodes[2].mig",
            "set exactly one of layout, custom, perGpu or fromDemand (got layout, fromDemand)",
        ),
        (
            _prod_from_demand(bareMetal__nodes__2__mig={"fromDemand": False}),
            "bareMetal.nodes[2].mig.fromDemand",
            "allowed: True",
        ),
    ],
    ids=["no-demand-entry", "too-small", "no-mig-platform", "two-modes", "false"],
)
def test_a_mistake_is_refused_at_its_key(raw: dict[str, Any], key: str, text: str) -> None:
    lines = refusal(raw)
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


def test_two_demand_entries_for_one_model_are_refused() -> None:
    raw = stack_raw("prod")
    raw["mig"]["demand"].append({"gpuModel": "H100-80GB", "profiles": {"1g.10gb": 1}})
    (line,) = refusal(raw)
    assert line.startswith("mig: ") and "demand[1].gpuModel 'H100-80GB' is already demand[0]" in line


# ----------------------------------------------------------------------------------------------
# The recorded plan (mig-plans/<stack>.yaml), read by the real program


def _prod_project(tmp_path: Path, recorded: str | None, gpus: int | None = None) -> Path:
    config = copy.deepcopy(stack_config("prod"))
    config["gpu-platform:bareMetal"]["nodes"][2]["mig"] = FROM_DEMAND
    if gpus is not None:  # fewer GPUs than the Profiles' quotas count on: oversubscribe, with a warning
        config["gpu-platform:bareMetal"]["nodes"][2]["gpus"] = gpus
        config["gpu-platform:kubeflow"]["gpuQuotaCheck"] = "warn"
    project = project_copy(tmp_path, "prod", config)
    if recorded is not None:
        (project / record_file_name("prod")).parent.mkdir(parents=True, exist_ok=True)
        (project / record_file_name("prod")).write_text(recorded)
    return project


def _recorded(layouts: list[dict[str, int] | None]) -> str:
    return render_recorded_plan(
        "prod", [{"pool": "gpu-node-3", "gpuModel": "H100-80GB", "nodes": 1, "gpuLayouts": layouts}]
    )


def test_the_program_keeps_recorded_layouts_that_still_serve_the_demand(tmp_path: Path) -> None:
    # The recorded plan cut GPUs 4 and 5; the demand still fits there, so nothing moves to GPUs 0-1.
    recorded = [None, None, None, None, {"3g.40gb": 2}, {"3g.40gb": 2}, None, None]
    run = run_program("prod", root=_prod_project(tmp_path, _recorded(recorded)))
    assert run.config_error is None, run.config_error
    (planned,) = run.outputs["mig"]["layoutsFromDemand"]
    (pool,) = planned["pools"]
    assert pool["gpuLayouts"] == recorded
    assert planned["recordedPlanUsed"] and planned["repartitionedGpus"] == 0 and pool["changedGpuIndexes"] == []


def test_without_a_recorded_plan_every_partitioned_gpu_counts_as_new(tmp_path: Path) -> None:
    run = run_program("prod", root=_prod_project(tmp_path, None))
    (planned,) = run.outputs["mig"]["layoutsFromDemand"]
    assert not planned["recordedPlanUsed"] and planned["repartitionedGpus"] == 2
    assert planned["pools"][0]["placements"][:3] == [
        "3g.40gb@0-3 3g.40gb@4-7",
        "3g.40gb@0-3 3g.40gb@4-7",
        "MIG disabled",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("version: 2\npools: {}\n", "mig-plans/prod.yaml:1: version: 2 is not allowed; allowed: 1"),
        ("[unclosed\n", "mig-plans/prod.yaml:2: not a recorded MIG plan: while parsing a flow sequence"),
        ("- a\n", "mig-plans/prod.yaml:1: must be a mapping with version and pools, got list"),
        # Two comment lines, version, pools, the pool, gpuModel, nodes, gpus: gpus[0] is line 9. The model once.
        (
            _recorded([{"3g.40gb": 3}, *[None] * 7]),
            "mig-plans/prod.yaml:9: pools.gpu-node-3.gpus[0]: H100-80GB: 3 x 3g.40gb requested; at most 2 per GPU",
        ),
    ],
    ids=["version", "yaml", "shape", "unplaceable"],
)
def test_a_broken_recorded_plan_is_refused_at_its_line_with_the_key(tmp_path: Path, text: str, problem: str) -> None:
    run = run_program("prod", root=_prod_project(tmp_path, text))
    assert run.config_error is not None
    (only,) = run.config_error.problems
    assert str(only).startswith(problem)
    assert str(only).count("H100-80GB") <= 1


def test_a_pool_written_twice_is_refused_at_the_second_one(tmp_path: Path) -> None:
    once = _recorded([{"3g.40gb": 2}, *[None] * 7])
    pool = once[once.index("  gpu-node-3:") :]
    text = once + pool  # the pool again, after the first: YAML would keep the second silently
    run = run_program("prod", root=_prod_project(tmp_path, text))
    assert run.config_error is not None
    second = text.count("\n", 0, text.rindex("  gpu-node-3:")) + 1
    first = text.count("\n", 0, text.index("  gpu-node-3:")) + 1
    assert [str(p) for p in run.config_error.problems] == [
        f"mig-plans/prod.yaml:{second}: pools.gpu-node-3: duplicate key 'gpu-node-3' (first at line {first}); "
        "YAML keeps only one of them"
    ]


def test_a_record_with_more_gpus_than_the_node_can_have_is_refused_at_its_line(tmp_path: Path) -> None:
    text = _recorded([{"3g.40gb": 2}, *[None] * 8])  # 9 GPUs: an H100 host carries 4 or 8 (1 to 8 in PCIe)
    run = run_program("prod", root=_prod_project(tmp_path, text))
    assert run.config_error is not None
    (problem,) = run.config_error.problems
    assert problem.path == "mig-plans/prod.yaml:8"  # the line of `gpus:`
    assert problem.message.startswith(
        "pools.gpu-node-3.gpus: 9 GPU layouts recorded, but a node of bareMetal.nodes[2] (H100-80GB) has 8 and "
        "cannot have 9 (possible: 1, 2, 3, 4, 5, 6, 7, 8)"
    )


def test_a_record_for_another_gpu_model_is_refused_at_its_line(tmp_path: Path) -> None:
    text = render_recorded_plan(
        "prod", [{"pool": "gpu-node-3", "gpuModel": "A100-80GB", "nodes": 1, "gpuLayouts": [None] * 8}]
    )
    run = run_program("prod", root=_prod_project(tmp_path, text))
    assert run.config_error is not None
    (problem,) = run.config_error.problems
    assert problem.path == "mig-plans/prod.yaml:6"  # the line of `gpuModel:`
    assert problem.message.startswith(
        "pools.gpu-node-3.gpuModel: A100-80GB is recorded, but bareMetal.nodes[2] has H100-80GB GPUs"
    )


def test_a_node_whose_gpu_count_shrinks_keeps_the_layouts_of_the_gpus_it_still_has(tmp_path: Path) -> None:
    # Recorded on 8 GPUs: GPUs 1 and 5 cut. The node now has 4: GPU 1 survives and is kept as it is; the
    # demand's second GPU is cut on GPU 0 (the lowest whole one). One GPU re-cut, not every layout moved.
    recorded = [None, {"3g.40gb": 2}, None, None, None, {"3g.40gb": 2}, None, None]
    run = run_program("prod", root=_prod_project(tmp_path, _recorded(recorded), gpus=4))
    assert run.config_error is None, run.config_error
    (planned,) = run.outputs["mig"]["layoutsFromDemand"]
    (pool,) = planned["pools"]
    assert pool["gpuLayouts"] == [{"3g.40gb": 2}, {"3g.40gb": 2}, None, None]
    assert planned["repartitionedGpus"] == 1 and pool["changedGpuIndexes"] == [0]


def test_the_recorded_file_round_trips(tmp_path: Path) -> None:
    layouts = [{"3g.40gb": 2}, None, None, None, None, None, None, None]
    document = yaml.safe_load(_recorded(layouts))
    assert document == {"version": 1, "pools": {"gpu-node-3": {"gpuModel": "H100-80GB", "nodes": 1, "gpus": layouts}}}
