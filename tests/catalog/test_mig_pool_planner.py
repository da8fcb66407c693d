"""Layouts from demand: per pool and GPU index, the fewest partitioned GPUs, identical nodes, stable changes."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from components.catalog.mig import MigLayoutError, MigPlanError, PoolShape, PoolsPlan, place, plan_pools, valid_layouts
from tests.properties import examples


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


# --- re-partitioning counted over every pool, recorded or not (issue #26 item 6) ---


def test_cutting_an_unrecorded_pool_costs_as_much_as_re_cutting_a_recorded_one() -> None:
    # Pool a's node holds 7 x 1g.10gb on GPU 0 and a whole GPU 1; pool b (one GPU) was never planned, so its
    # GPU is whole (the operator labels an unlabelled MIG node all-disabled). 2 x 3g.40gb fit on one GPU:
    # re-cutting a's GPU 0 changes 1 GPU; cutting b's GPU also empties a's GPU 0: 2 GPUs.
    pools = [
        PoolShape("a", "H100-80GB", 1, 2, ({"1g.10gb": 7}, None)),
        PoolShape("b", "H100-80GB", 1, 1),
    ]
    plan = plan_pools({"3g.40gb": 2}, pools)
    assert plan.gpus_used == 1
    assert plan.repartitioned == 1
    assert plan.pools[0].gpu_layouts == ({"3g.40gb": 2}, None)
    assert plan.pools[1].gpu_layouts == (None,) and plan.pools[1].changed == (False,)


def test_gpus_of_an_unrecorded_pool_left_whole_are_not_counted_as_re_cut() -> None:
    plan = plan_pools({"7g.80gb": 1}, [PoolShape("fresh", "H100-80GB", 2, 4)])
    # One node's worth of identical layouts: 2 nodes x 1 GPU cut, the other 3 GPUs per node stay whole.
    assert plan.repartitioned == plan.gpus_used == 2
    assert plan.pools[0].changed == (True, False, False, False)


_A30 = "A30-24GB"
_A30_LAYOUTS: tuple[dict[str, int] | None, ...] = (None, *(dict(layout) for layout in valid_layouts(_A30)))
_A30_NAMES = ("1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb")


def _exhaustive(demand: Mapping[str, int], pools: list[PoolShape]) -> tuple[int, int] | None:
    """(fewest partitioned GPUs, then fewest re-cut GPUs) over every assignment of every valid layout.

    Independent of the planner: every multiset of layouts (whole GPU or any valid layout, not only the
    maximal ones) per pool's node, every combination across pools. A GPU is re-cut when its layout
    differs from the one in place: the recorded layout, or a whole GPU where nothing is recorded. States
    are merged per amount provided (capped at the demand), keeping the best pair: still exhaustive.
    """
    wanted = tuple(demand.get(name, 0) for name in _A30_NAMES)
    states: dict[tuple[int, ...], tuple[int, int]] = {tuple(0 for _ in wanted): (0, 0)}
    for pool in pools:
        now = Counter(
            tuple(sorted((layout or {}).items())) for layout in (pool.current or (None,) * pool.gpus_per_node)
        )
        options: dict[tuple[int, ...], tuple[int, int]] = {}
        for combo in itertools.combinations_with_replacement(range(len(_A30_LAYOUTS)), pool.gpus_per_node):
            chosen = [_A30_LAYOUTS[i] or {} for i in combo]
            provided = tuple(sum(layout.get(name, 0) for layout in chosen) * pool.nodes for name in _A30_NAMES)
            kept = sum((Counter(tuple(sorted(layout.items())) for layout in chosen) & now).values())
            cost = (pool.nodes * sum(1 for layout in chosen if layout), pool.nodes * (pool.gpus_per_node - kept))
            key = tuple(min(p, w) for p, w in zip(provided, wanted, strict=True))
            if key not in options or cost < options[key]:
                options[key] = cost
        merged: dict[tuple[int, ...], tuple[int, int]] = {}
        for have, (used, recut) in states.items():
            for adds, (more_used, more_recut) in options.items():
                key = tuple(min(a + b, w) for a, b, w in zip(have, adds, wanted, strict=True))
                cost = (used + more_used, recut + more_recut)
                if key not in merged or cost < merged[key]:
                    merged[key] = cost
        states = merged
    return states.get(wanted)


@st.composite
def _small_fleets(draw: st.DrawFn) -> tuple[dict[str, int], list[PoolShape]]:
    """1-3 A30 pools of 1-3 nodes and 1-2 GPUs each, and a demand; the first pool recorded, the others maybe."""
    pools = []
    for index in range(draw(st.integers(1, 3))):
        gpus = draw(st.integers(1, 2))
        recorded = index == 0 or draw(st.booleans())
        current = tuple(draw(st.sampled_from(_A30_LAYOUTS)) for _ in range(gpus)) if recorded else None
        pools.append(PoolShape(f"p{index}", _A30, draw(st.integers(1, 3)), gpus, current))
    demand = {name: draw(st.integers(0, 5)) for name in draw(st.sets(st.sampled_from(_A30_NAMES), max_size=3))}
    return demand, pools


@settings(max_examples=examples(80))
@given(_small_fleets())
@example(  # found by ``make fuzz`` against the planner that left unrecorded pools out of the second objective
    ({"1g.6gb": 1}, [PoolShape("p0", _A30, 1, 1, ({"4g.24gb": 1},)), PoolShape("p1", _A30, 1, 1)]),
)
def test_the_planner_re_cuts_as_few_gpus_as_an_exhaustive_search_over_every_pool(
    fleet: tuple[dict[str, int], list[PoolShape]],
) -> None:
    demand, pools = fleet
    best = _exhaustive(demand, pools)
    if best is None:
        with pytest.raises(MigPlanError):
            plan_pools(demand, pools)
        return
    plan = plan_pools(demand, pools)
    assert _covers(plan, demand)
    assert (plan.gpus_used, plan.repartitioned) == best
    for shape, planned in zip(pools, plan.pools, strict=True):
        before = shape.current or (None,) * shape.gpus_per_node
        assert planned.changed == tuple(
            (dict(old or {}) != dict(new or {})) for old, new in zip(before, planned.gpu_layouts, strict=True)
        )
