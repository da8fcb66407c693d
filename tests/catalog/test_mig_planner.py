"""Planner: valid per-GPU layouts on the proven fewest GPUs, mixed fleets, stability, clear refusals, the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from functools import cache
from itertools import product
from math import ceil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.catalog.mig import (
    MigLayoutError,
    MigPlan,
    MigPlanError,
    UnknownMigProfile,
    lower_bound,
    mig_gpu,
    mig_models,
    place,
    plan,
    plan_fleet,
)
from components.mig.config import MigConfig
from tests.catalog.test_mig_placement import brute_force_placeable, check_placement
from tests.properties import examples

ROOT = Path(__file__).resolve().parents[2]


def check_plan(result: MigPlan, demand: dict[str, int]) -> None:
    """Every GPU's layout fits (checked from the facts), and together they hold exactly the demand."""
    total: Counter[str] = Counter()
    for gpu in result.gpus:
        check_placement(gpu.model, dict(gpu.layout), gpu)
        assert gpu.instances, "a GPU with nothing on it is a wasted GPU"
        total.update(gpu.layout)
    assert dict(total) == {name: n for name, n in demand.items() if n}
    assert result.gpus_used == result.lower_bound and result.optimal
    assert result.gpus_used <= result.fleet_size
    assert Counter(gpu.model for gpu in result.gpus) <= Counter(result.fleet)


def test_ten_small_and_three_large_fit_on_three_h100s():
    demand = {"1g.10gb": 10, "3g.40gb": 3}
    result = plan("H100-80GB", demand, 16)
    check_plan(result, demand)
    assert (result.gpus_used, result.lower_bound, result.optimal) == (3, 3, True)
    assert dict(result.demand) == demand


@pytest.mark.parametrize(
    ("demand", "gpus"),
    [
        ({"1g.10gb": 7}, 1),
        ({"1g.10gb": 14}, 2),
        ({"1g.10gb": 15}, 3),
        ({"7g.80gb": 5}, 5),
        ({"4g.40gb": 3, "3g.40gb": 3}, 3),
        ({"2g.20gb": 4}, 2),
        ({"3g.40gb": 3}, 2),
        ({"1g.10gb+me": 3}, 3),  # one media-extension GI per GPU
    ],
)
def test_simple_demands_meet_the_lower_bound(demand, gpus):
    result = plan("H100-80GB", demand, 64)
    check_plan(result, demand)
    assert result.gpus_used == result.lower_bound == gpus
    assert result.optimal


def test_the_bound_sees_that_a_gpu_with_a_media_gi_holds_only_one_3g():
    # Slice sums say 3 GPUs (15 compute, 19 memory slices); but 3g + 3g fills the memory, so each of the
    # three +me GPUs takes at most one 3g and the fourth 3g needs a fourth GPU.
    demand = {"1g.10gb+me": 3, "3g.40gb": 4}
    assert lower_bound("H100-80GB", demand) == 4
    result = plan("H100-80GB", demand, 8)
    check_plan(result, demand)
    assert result.gpus_used == 4


def test_shortfall_states_how_many_gpus_are_needed_and_what_is_missing():
    with pytest.raises(
        MigPlanError,
        match=r"^H100-80GB: 5 x 7g\.80gb needs 5 GPUs, fleet has 4 \(short by 1\); "
        r"with the whole fleet partitioned, still missing 1 x 7g\.80gb$",
    ):
        plan("H100-80GB", {"7g.80gb": 5}, 4)
    with pytest.raises(MigPlanError, match="needs 1 GPUs, fleet has 0"):
        plan("A30-24GB", {"1g.6gb": 1}, 0)


def test_the_shortfall_per_profile_is_the_least_the_full_fleet_can_leave():
    # Two GPUs: 7 x 1g each leaves 6 x 1g + 4 x 3g missing (10 instances); any 3g on them leaves more.
    with pytest.raises(MigPlanError) as error:
        plan("H100-80GB", {"1g.10gb": 20, "3g.40gb": 4}, 2)
    assert str(error.value).endswith(
        "needs 5 GPUs, fleet has 2 (short by 3); with the whole fleet partitioned, still missing 6 x 1g.10gb + 4 x 3g.40gb"
    )


@pytest.mark.parametrize("size", [5002, 20001])
def test_the_old_planners_worst_case_is_planned_on_the_optimum(size):
    # One +me GI and one 3g share a GPU; the old search returned 25,001 GPUs for 20,001 of each.
    demand = {"1g.10gb+me": size, "3g.40gb": size}
    result = plan("H100-80GB", demand, size + size // 4)
    check_plan(result, demand)
    assert result.gpus_used == size


def test_a_fleet_exactly_the_size_of_the_optimum_is_accepted():
    demand = {"1g.10gb+me": 5002, "3g.40gb": 5002}
    result = plan("H100-80GB", demand, 5002)
    check_plan(result, demand)
    assert result.gpus_used == result.fleet_size == 5002
    with pytest.raises(MigPlanError, match=r"needs 5002 GPUs, fleet has 5001 \(short by 1\)"):
        plan("H100-80GB", demand, 5001)


def test_a_mixed_fleet_uses_the_models_that_offer_each_profile():
    demand = {"1g.6gb": 4, "1g.10gb": 7, "3g.40gb": 1}
    result = plan_fleet(demand, {"H100-80GB": 4, "A30-24GB": 2})
    check_plan(result, demand)
    assert result.gpus_used == 3
    assert Counter(gpu.model for gpu in result.gpus) == {"A30-24GB": 1, "H100-80GB": 2}
    assert result.model == "A30-24GB + H100-80GB"


def test_a_mixed_fleet_of_one_profile_set_fills_either_model():
    # A100-80GB and H100-80GB share profile names: 3 x 7g and 21 x 1g need 6 GPUs, whichever model.
    demand = {"7g.80gb": 3, "1g.10gb": 21}
    result = plan_fleet(demand, {"A100-80GB": 2, "H100-80GB": 4})
    check_plan(result, demand)
    assert result.gpus_used == 6
    with pytest.raises(MigPlanError, match=r"needs 6 GPUs, fleet has 5 \(short by 1\)"):
        plan_fleet(demand, {"A100-80GB": 1, "H100-80GB": 4})


def test_a_profile_that_only_a_short_model_offers_is_refused_with_what_is_missing():
    with pytest.raises(MigPlanError) as error:
        plan_fleet({"1g.6gb": 5}, {"A30-24GB": 1, "H100-80GB": 8})
    assert "not enough of the models that offer these profiles" in str(error.value)
    assert str(error.value).endswith("still missing 1 x 1g.6gb")
    with pytest.raises(UnknownMigProfile, match=r"^A30-24GB \+ H100-80GB: unknown MIG profile '1g\.5gb'; allowed"):
        plan_fleet({"1g.5gb": 1}, {"H100-80GB": 1, "A30-24GB": 1})


IN_PLACE = [{"3g.40gb": 2}] * 4 + [{"1g.10gb": 7}] * 4  # 8 GPUs: 8 x 3g and 28 x 1g


def test_an_unchanged_demand_changes_no_gpu():
    first = plan("H100-80GB", {"3g.40gb": 8, "1g.10gb": 28}, 8)
    again = plan("H100-80GB", {"3g.40gb": 8, "1g.10gb": 28}, 8, current=first.in_place())
    assert again.repartitioned == 0
    assert sorted(map(str, map(dict, again.layouts))) == sorted(map(str, map(dict, first.layouts)))


def test_stability_re_partitions_the_fewest_gpus():
    # 52 compute slices: 8 GPUs at least. One 7 x 1g GPU becomes 3g + 4 x 1g, the other seven stay.
    demand = {"3g.40gb": 9, "1g.10gb": 25}
    result = plan("H100-80GB", demand, 8, current=IN_PLACE)
    assert result.gpus_used == 8 and result.repartitioned == 1
    changed = [gpu.describe() for gpu, flag in zip(result.gpus, result.repartitioned_flags, strict=True) if flag]
    assert changed == ["1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4-7"]
    for gpu in result.gpus:
        check_placement("H100-80GB", dict(gpu.layout), gpu)
    assert all(result.provided()[name] >= n for name, n in demand.items())
    # Without the layouts in place the same demand is planned as if every GPU were new.
    fresh = plan("H100-80GB", demand, 8)
    assert fresh.gpus_used == 8 and not fresh.current_given


def test_kept_layouts_may_hold_more_than_the_demand():
    # 27 x 1g: the four 7 x 1g GPUs stay as they are (28 slices) rather than one being cut to 6.
    result = plan("H100-80GB", {"3g.40gb": 8, "1g.10gb": 27}, 8, current=IN_PLACE)
    assert (result.gpus_used, result.repartitioned) == (8, 0)
    assert result.provided() == {"3g.40gb": 8, "1g.10gb": 28}


def test_extra_gpus_trade_a_gpu_for_fewer_changes():
    # 9 x 3g + 28 x 1g fill 8 GPUs only as 1 x (2 x 3g) + 7 x (3g + 4 x 1g): six GPUs in place change
    # (the ninth, unused GPU takes the seventh). Allowed one extra GPU, the ninth takes the new 3g alone.
    demand = {"3g.40gb": 9, "1g.10gb": 28}
    strict = plan("H100-80GB", demand, 9, current=IN_PLACE)
    assert (strict.gpus_used, strict.repartitioned) == (8, 6)
    traded = plan("H100-80GB", demand, 9, current=IN_PLACE, extra_gpus=1)
    assert (traded.gpus_used, traded.repartitioned) == (9, 0)


def test_gpus_nothing_describes_are_free_to_partition():
    first = plan("H100-80GB", {"1g.10gb": 40, "3g.40gb": 12}, 24)
    grown = plan("H100-80GB", {"1g.10gb": 44, "3g.40gb": 12}, 24, current=first.in_place())
    assert grown.gpus_used == 12 and grown.repartitioned == 0


def test_current_layouts_are_checked():
    with pytest.raises(MigPlanError, match="2 current layouts given for H100-80GB, but the fleet has 1 GPUs"):
        plan("H100-80GB", {"1g.10gb": 1}, 1, current=[{"1g.10gb": 1}, None])
    with pytest.raises(MigLayoutError, match="at most 7"):
        plan("H100-80GB", {"1g.10gb": 1}, 1, current=[{"1g.10gb": 8}])


def test_empty_demand_needs_no_gpus():
    result = plan("H100-80GB", {"1g.10gb": 0}, 0)
    assert (result.gpus_used, result.lower_bound, result.optimal) == (0, 0, True)


def test_a_model_without_mig_or_an_empty_fleet_is_refused():
    with pytest.raises(MigPlanError, match="no GPU model"):
        plan_fleet({"1g.10gb": 1}, {})
    with pytest.raises(ValueError, match="cannot do MIG"):
        plan_fleet({"1g.10gb": 1}, {"V100-32GB": 4})


def test_bad_demands_are_refused():
    with pytest.raises(UnknownMigProfile, match=r"1g\.5gb"):
        plan("H100-80GB", {"1g.5gb": 1}, 4)
    with pytest.raises(MigPlanError, match="must be an integer >= 0"):
        plan("H100-80GB", {"1g.10gb": -1}, 4)
    with pytest.raises(MigPlanError, match="fleet size"):
        plan("H100-80GB", {"1g.10gb": 1}, -1)


def test_a_64_gpu_mixed_demand_is_packed_on_the_lower_bound():
    demand = {"1g.10gb": 40, "2g.20gb": 20, "3g.40gb": 12, "4g.40gb": 6, "7g.80gb": 5}
    result = plan("H100-80GB", demand, 64)
    check_plan(result, demand)
    assert result.gpus_used == result.lower_bound == 25
    assert result.optimal


@cache
def _per_gpu_layouts(model: str) -> tuple[tuple[int, ...], ...]:
    """Every non-empty placeable count vector, found by brute force (independent of the planner)."""
    profiles = mig_gpu(model).profiles
    found = []
    for counts in product(*(range(p.max_instances + 1) for p in profiles)):
        layout = {p.name: n for p, n in zip(profiles, counts, strict=True) if n}
        if layout and brute_force_placeable(model, layout):
            found.append(counts)
    return tuple(found)


def brute_force_fewest_gpus(model: str, demand: tuple[int, ...]) -> int:
    layouts = _per_gpu_layouts(model)

    @cache
    def fewest(rest: tuple[int, ...]) -> int:
        if not any(rest):
            return 0
        return 1 + min(
            fewest(tuple(r - v for r, v in zip(rest, layout, strict=True)))
            for layout in layouts
            if all(v <= r for v, r in zip(layout, rest, strict=True))
        )

    return fewest(demand)


@st.composite
def small_demands(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    model = draw(st.sampled_from(mig_models()))
    demand: dict[str, int] = {}
    for _ in range(draw(st.integers(0, 9))):
        name = draw(st.sampled_from(mig_gpu(model).profiles)).name
        demand[name] = demand.get(name, 0) + 1
    return model, demand


@settings(max_examples=examples(150))
@given(small_demands())
def test_plans_are_valid_and_as_small_as_brute_force_finds(case):
    model, demand = case
    result = plan(model, demand, 64)
    check_plan(result, demand)
    vector = tuple(demand.get(p.name, 0) for p in mig_gpu(model).profiles)
    assert result.gpus_used == brute_force_fewest_gpus(model, vector)
    assert result.optimal


@settings(max_examples=examples(150))
@given(
    st.sampled_from(mig_models()).flatmap(
        lambda model: st.tuples(
            st.just(model),
            st.fixed_dictionaries({p.name: st.integers(0, 40) for p in mig_gpu(model).profiles}),
        )
    )
)
def test_large_plans_are_valid_and_respect_simple_bounds(case):
    model, demand = case
    gpu = mig_gpu(model)
    result = plan(model, demand, 10_000)
    check_plan(result, demand)
    profiles = {p.name: p for p in gpu.profiles}
    compute = sum(profiles[n].compute_slices * c for n, c in demand.items())
    memory = sum(profiles[n].memory_slices * c for n, c in demand.items())
    assert result.lower_bound >= ceil(compute / gpu.geometry.compute_slices)
    assert result.lower_bound >= ceil(memory / gpu.geometry.memory_slices)
    assert result.lower_bound >= max(ceil(c / profiles[n].max_instances) for n, c in demand.items())


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.mig", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_plan_prints_layouts_and_the_bound():
    result = run_cli("plan", "--model", "H100-80GB", "--gpus", "16", "1g.10gb=10", "3g.40gb=3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "H100-80GB: GPUs used 3 of 16, proven optimal: " + plan("H100-80GB", {"1g.10gb": 1}, 1).status
    assert "Optimal" in lines[0]
    assert len(lines) == 4 and all(line.startswith(f"gpu {i}: ") for i, line in enumerate(lines[1:]))
    assert sum(line.count("3g.40gb@") for line in lines) == 3


def test_cli_plan_shortfall_exits_1():
    result = run_cli("plan", "--model", "H100-80GB", "--gpus", "4", "7g.80gb=5")
    assert result.returncode == 1
    assert result.stderr == (
        "error: H100-80GB: 5 x 7g.80gb needs 5 GPUs, fleet has 4 (short by 1); "
        "with the whole fleet partitioned, still missing 1 x 7g.80gb\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("plan", "--model", "H100-80GB", "--gpus", "-3", "7g.80gb=1"),
        ("plan", "--model", "H100-80GB", "--gpus", "4"),
        ("plan", "--model", "V100-32GB", "--gpus", "4", "1g.10gb=1"),
        ("plan", "--model", "H100-80GB", "--gpus", "4", "1g.10gb=x"),
    ],
)
def test_cli_plan_bad_input_exits_2(args):
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


def test_cli_yaml_is_config_that_provides_the_demand():
    result = run_cli("plan", "--model", "H100-80GB", "--gpus", "24", "--format", "yaml", "1g.10gb=40", "3g.40gb=12")
    assert result.returncode == 0, result.stderr
    demand_doc, *nodes = list(yaml.safe_load_all(result.stdout))
    assert demand_doc == {
        "gpu-platform:mig": {"demand": [{"gpuModel": "H100-80GB", "profiles": {"1g.10gb": 40, "3g.40gb": 12}}]}
    }
    assert len(nodes) == 2, "11 GPUs on nodes of 8"
    held: Counter[str] = Counter()
    for node in nodes:
        mig = MigConfig.model_validate(node["mig"])  # the stack's own config model accepts it
        entries = [(list(range(8)), mig.custom)] if mig.custom else [(e.devices, e.layout) for e in mig.per_gpu or []]
        for devices, layout in entries:
            assert layout is not None and all(0 <= d < 8 for d in devices)
            check_placement("H100-80GB", layout, place("H100-80GB", layout))
            for _ in devices:
                held.update(layout)
    assert held == {"1g.10gb": 40, "3g.40gb": 12}


def test_cli_plans_a_mixed_fleet():
    result = run_cli("plan", "--fleet", "A30-24GB=2", "--fleet", "H100-80GB=4", "1g.6gb=4", "1g.10gb=7")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("A30-24GB + H100-80GB: GPUs used 2 of 6, proven optimal")
    assert [line.split()[2] for line in lines[1:]] == ["A30-24GB", "H100-80GB"]
    both = run_cli("plan", "--fleet", "A30-24GB=2", "--model", "H100-80GB", "--gpus", "4", "1g.6gb=4")
    assert both.returncode == 2 and both.stderr.startswith("error: give either --model")


def _modules_after(code: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(run.stdout.split())


def test_the_solver_is_loaded_only_when_a_demand_is_planned():
    preview = _modules_after(
        "from preview.run.runner import run_program\nassert run_program('dev').config_error is None"
    )
    assert "highspy" not in preview and "components.catalog.mig.planner" in preview
    planned = _modules_after("from components.catalog.mig import plan\nplan('H100-80GB', {'1g.10gb': 1}, 1)")
    assert "highspy" in planned
