"""Planner: valid per-GPU layouts, as few GPUs as possible, and a clear shortfall message."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from functools import cache
from itertools import product
from math import ceil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.catalog.mig import (
    MigPlan,
    MigPlanError,
    UnknownMigProfile,
    lower_bound,
    mig_gpu,
    mig_models,
    plan,
)
from tests.catalog.test_mig_placement import brute_force_placeable, check_placement

ROOT = Path(__file__).resolve().parents[2]


def check_plan(result: MigPlan, demand: dict[str, int]) -> None:
    """Every GPU's layout fits (checked from the facts), and together they hold exactly the demand."""
    total: Counter[str] = Counter()
    for gpu in result.gpus:
        check_placement(result.model, dict(gpu.layout), gpu)
        assert gpu.instances, "a GPU with nothing on it is a wasted GPU"
        total.update(gpu.layout)
    assert dict(total) == {name: n for name, n in demand.items() if n}
    assert result.gpus_used >= result.lower_bound
    assert result.gpus_used <= result.fleet_size


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


def test_shortfall_states_how_many_gpus_are_needed():
    with pytest.raises(MigPlanError, match=r"^H100-80GB: 5 x 7g\.80gb needs 5 GPUs, fleet has 4 \(short by 1\)$"):
        plan("H100-80GB", {"7g.80gb": 5}, 4)
    with pytest.raises(MigPlanError, match="needs 1 GPUs, fleet has 0"):
        plan("A30-24GB", {"1g.6gb": 1}, 0)


def test_a_search_cut_short_still_returns_a_valid_plan():
    demand = {"1g.10gb+me": 2, "3g.40gb": 1, "4g.40gb": 1}
    full = plan("H100-80GB", demand, 8)
    assert (full.gpus_used, full.optimal) == (2, True)  # 4g + me on one GPU, 3g + me on the other
    cut = plan("H100-80GB", demand, 8, node_budget=0)
    check_plan(cut, demand)
    assert not cut.optimal and cut.gpus_used > cut.lower_bound == 2


def test_empty_demand_needs_no_gpus():
    result = plan("H100-80GB", {"1g.10gb": 0}, 0)
    assert (result.gpus_used, result.lower_bound, result.optimal) == (0, 0, True)


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


@settings(max_examples=150, deadline=None)
@given(small_demands())
def test_plans_are_valid_and_as_small_as_brute_force_finds(case):
    model, demand = case
    result = plan(model, demand, 64)
    check_plan(result, demand)
    vector = tuple(demand.get(p.name, 0) for p in mig_gpu(model).profiles)
    assert result.gpus_used == brute_force_fewest_gpus(model, vector)
    assert result.optimal


@settings(max_examples=150, deadline=None)
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
        [sys.executable, "-m", "components.catalog.mig", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_plan_prints_layouts_and_the_bound():
    result = run_cli("plan", "--model", "H100-80GB", "--gpus", "16", "1g.10gb=10", "3g.40gb=3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "H100-80GB: GPUs used 3 of 16, lower bound 3 (optimal)"
    assert len(lines) == 4 and all(line.startswith(f"gpu {i}: ") for i, line in enumerate(lines[1:]))
    assert sum(line.count("3g.40gb@") for line in lines) == 3


def test_cli_plan_shortfall_exits_1():
    result = run_cli("plan", "--model", "H100-80GB", "--gpus", "4", "7g.80gb=5")
    assert result.returncode == 1
    assert result.stderr == "error: H100-80GB: 5 x 7g.80gb needs 5 GPUs, fleet has 4 (short by 1)\n"


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
