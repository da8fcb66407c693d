"""Layouts from demand: per pool and GPU index, the fewest partitioned GPUs, identical nodes, stable changes."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping

import pytest

from components.catalog.mig import MigLayoutError, MigPlanError, PoolShape, PoolsPlan, place, plan_pools, valid_layouts


def _provided(plan: PoolsPlan) -> Counter[str]:
    total: Counter[str] = Counter()
    for pool in plan.pools:
        total.update(pool.provided())
    return total


def _covers(plan: PoolsPlan, demand: Mapping[str, int]) -> bool:
    provided = _provided(plan)
    return all(provided[name] >= n for name, n in demand.items())


def _brute_force(model: str, nodes: int, gpus: int, demand: Mapping[str, int]) -> int | None:
    """Fewest partitioned GPUs over every assignment of valid layouts to the GPU indexes of identical nodes."""
    layouts = [{}, *(dict(layout) for layout in valid_layouts(model))]  # {}: the GPU stays whole
    best: int | None = None
    for combo in itertools.combinations_with_replacement(range(len(layouts)), gpus):
        provided: Counter[str] = Counter()
        for index in combo:
            for name, count in layouts[index].items():
                provided[name] += count * nodes
        if all(provided[name] >= n for name, n in demand.items()):
            used = nodes * sum(1 for index in combo if layouts[index])
            best = used if best is None else min(best, used)
    return best


@pytest.mark.parametrize(
    ("nodes", "gpus", "demand"),
    [
        (1, 2, {"1g.6gb": 5}),
        (2, 2, {"2g.12gb": 3, "1g.6gb": 1}),
        (3, 1, {"4g.24gb": 2}),
        (1, 3, {"1g.6gb+me": 2, "2g.12gb": 2}),
        (2, 3, {"1g.6gb": 7, "2g.12gb+me": 1}),
    ],
)
def test_the_plan_uses_as_few_gpus_as_an_exhaustive_search_finds(nodes: int, gpus: int, demand: dict[str, int]) -> None:
    # A30 (4 slices): small enough to enumerate every assignment of layouts to a node's GPUs.
    plan = plan_pools(demand, [PoolShape("a30", "A30-24GB", nodes, gpus)])
    assert plan.optimal and plan.gpus_used == _brute_force("A30-24GB", nodes, gpus, demand)
    assert plan.lower_bound == plan.gpus_used
    assert _covers(plan, demand)


def test_every_node_of_a_pool_gets_the_same_layouts_and_every_layout_is_placeable() -> None:
    plan = plan_pools({"1g.10gb": 20, "3g.40gb": 5}, [PoolShape("a100", "A100-80GB", 3, 3)])
    (pool,) = plan.pools
    assert pool.nodes == 3 and len(pool.gpu_layouts) == 3
    for layout in pool.gpu_layouts:
        if layout:
            place("A100-80GB", dict(layout))  # raises if the GPU could not hold it
    assert _covers(plan, {"1g.10gb": 20, "3g.40gb": 5})
    # Per node at least 7 x 1g.10gb and 2 x 3g.40gb (5 over 3 identical nodes), 13 slices: two GPUs a node.
    assert plan.gpus_used == 6 and plan.lower_bound == 6


def test_gpus_the_demand_does_not_need_stay_whole() -> None:
    plan = plan_pools({"3g.40gb": 4}, [PoolShape("gpu-node-3", "H100-80GB", 1, 8)])
    (pool,) = plan.pools
    assert pool.gpu_layouts == ({"3g.40gb": 2}, {"3g.40gb": 2}, None, None, None, None, None, None)
    assert plan.gpus_used == 2 and pool.changed == (True, True, False, False, False, False, False, False)


def test_a_pool_of_exactly_the_optimum_is_accepted() -> None:
    plan = plan_pools({"7g.80gb": 8}, [PoolShape("h100", "H100-80GB", 1, 8)])
    assert plan.gpus_used == 8 and all(layout == {"7g.80gb": 1} for layout in plan.pools[0].gpu_layouts)


def test_a_demand_the_pools_cannot_hold_is_refused_with_the_shortfall() -> None:
    with pytest.raises(MigPlanError) as caught:
        plan_pools({"7g.80gb": 10, "1g.10gb": 1}, [PoolShape("gpu-node-3", "H100-80GB", 1, 8)])
    message = str(caught.value)
    assert "needs at least 11 GPUs of H100-80GB" in message
    assert "(gpu-node-3) have 8" in message
    assert "still missing 2 x 7g.80gb" in message or "still missing 1 x 1g.10gb + 2 x 7g.80gb" in message


def test_an_unchanged_demand_against_its_own_recorded_plan_re_partitions_nothing() -> None:
    shapes = [PoolShape("a", "H100-80GB", 2, 4), PoolShape("b", "H100-80GB", 1, 8)]
    demand = {"1g.10gb": 33, "2g.20gb": 6, "3g.40gb": 5}
    first = plan_pools(demand, shapes)
    recorded = [
        PoolShape(s.name, s.model, s.nodes, s.gpus_per_node, p.gpu_layouts)
        for s, p in zip(shapes, first.pools, strict=True)
    ]
    again = plan_pools(demand, recorded)
    assert again.current_given and again.repartitioned == 0
    assert [p.gpu_layouts for p in again.pools] == [p.gpu_layouts for p in first.pools]


def test_a_ten_percent_demand_change_keeps_most_gpus_and_their_indexes() -> None:
    shapes = [PoolShape("a", "H100-80GB", 2, 4), PoolShape("b", "H100-80GB", 1, 8)]
    first = plan_pools({"1g.10gb": 40, "3g.40gb": 6}, shapes)
    recorded = [
        PoolShape(s.name, s.model, s.nodes, s.gpus_per_node, p.gpu_layouts)
        for s, p in zip(shapes, first.pools, strict=True)
    ]
    changed = plan_pools({"1g.10gb": 44, "3g.40gb": 6}, recorded)
    fresh = plan_pools({"1g.10gb": 44, "3g.40gb": 6}, shapes)
    assert changed.gpus_used == fresh.gpus_used  # stability never costs GPUs
    assert changed.repartitioned < fresh.repartitioned
    for before, after in zip(first.pools, changed.pools, strict=True):
        for index, (old, new) in enumerate(zip(before.gpu_layouts, after.gpu_layouts, strict=True)):
            assert after.changed[index] == (old != new)


def test_a_recorded_layout_the_gpu_cannot_hold_is_refused() -> None:
    with pytest.raises(MigPlanError, match="1 recorded GPU layouts for a node of 2 GPUs"):
        plan_pools({"1g.10gb": 1}, [PoolShape("a", "H100-80GB", 1, 2, ({"1g.10gb": 7},))])
    with pytest.raises(MigLayoutError, match=r"7g\.80gb"):
        plan_pools({"1g.10gb": 1}, [PoolShape("a", "H100-80GB", 1, 1, ({"7g.80gb": 2},))])
