"""``mig.demand`` in the program: the planner's proven answer in the outputs, and the explicit layouts checked against it."""

from __future__ import annotations

from collections import Counter

from components.catalog import mig as catalog
from preview.run.runner import run_program
from tests.helpers import refusal, set_path, stack_raw


def test_prod_layouts_provide_its_demand_and_the_plan_is_in_the_outputs() -> None:
    # gpu-node-1: 8 x 7 x 1g; gpu-node-2: 8 x (3g + 2g + 2 x 1g); gpu-node-3: 4 x 2 x 3g -> 72 x 1g, 16 x 3g.
    (demand,) = run_program("prod").outputs["mig"]["demand"]
    assert demand["demand"] == {"1g.10gb": 40, "3g.40gb": 12}
    assert (demand["gpusUsed"], demand["lowerBound"], demand["optimal"]) == (11, 11, True)
    assert "Optimal" in demand["solverStatus"]
    # 11 GPUs hold 88 memory slices: every GPU full, so 1 x (2 x 3g) + 10 x (3g + 4 x 1g). Only the
    # 2 x 3g GPU exists in the configured layouts (gpu-node-3), so ten GPUs would be re-partitioned.
    assert demand["repartitionedGpus"] == 10
    held: Counter[str] = Counter()
    for layout, text in zip(demand["layouts"], demand["placements"], strict=True):
        assert catalog.place("H100-80GB", layout).describe() == text
        held.update(layout)
    assert held == demand["demand"]


def test_layouts_that_do_not_provide_the_demand_are_refused_with_what_is_missing() -> None:
    raw = stack_raw("prod")
    del raw["bareMetal"]["nodes"][2]["mig"]  # gpu-node-3 whole again: only gpu-node-2's 8 x 3g remain
    (line,) = refusal(raw)
    assert line.startswith(
        "mig.demand[0]: the layouts configured (bareMetal.nodes[0], bareMetal.nodes[1], bareMetal.nodes[2]) "
        "provide 8 of 12 x 3g.40gb: missing 4 x 3g.40gb; the fleet can hold the demand on 11 GPUs"
    )
    assert "python -m tools.mig plan --model H100-80GB --gpus 24 --format yaml 1g.10gb=40 3g.40gb=12" in line


def test_every_missing_profile_is_named() -> None:
    demand = [{"gpuModel": "H100-80GB", "profiles": {"1g.10gb": 80, "2g.20gb": 9, "3g.40gb": 12}}]
    (line,) = refusal(set_path(stack_raw("prod"), "mig.demand", demand))
    assert "provide 72 of 80 x 1g.10gb, 8 of 9 x 2g.20gb: missing 8 x 1g.10gb + 1 x 2g.20gb;" in line


def test_a_fleet_too_small_is_reported_once_without_the_layouts_check() -> None:
    raw = set_path(stack_raw("prod"), "mig.demand", [{"gpuModel": "H100-80GB", "profiles": {"7g.80gb": 30}}])
    (line,) = refusal(raw)
    assert line == (
        "mig.demand[0]: H100-80GB: 30 x 7g.80gb needs 30 GPUs, fleet has 24 (short by 6); "
        "with the whole fleet partitioned, still missing 6 x 7g.80gb"
    )
