"""Layouts from demand: each pool's per-GPU MIG layouts, the fewest GPUs partitioned, proven optimal.

``plan_fleet`` answers "how few GPUs hold this demand" for interchangeable GPUs. A stack cannot label
GPUs one by one: every node of a pool carries the same ``nvidia.com/mig.config`` (a Yandex node group
labels all its nodes alike; a bare-metal node is a pool of one), and that config may give each GPU
*index* its own layout. So the program needs, per pool, one layout per GPU index, the same on every
node of the pool. That is again a small integer program, solved with the same MILP solver
(``milp.solve``: HiGHS through ``highspy``, silent, answer re-checked in integers):

- Variables ``y[p, L]``: GPUs per node of pool ``p`` cut in layout ``L``, where ``L`` ranges over the
  model's *maximal* layouts (nothing more fits: no slice is left idle), the layouts the pool has in
  place now, and "MIG disabled" (the GPU stays whole, advertised as ``nvidia.com/gpu``). Per pool,
  ``sum_L y[p, L]`` is the node's GPU count.
- Coverage: ``sum_p nodes_p * sum_L y[p, L] * L[profile] >= demand[profile]`` for every profile.
- Objective: the fewest partitioned GPUs, ``sum_p nodes_p * sum_{L partitioned} y[p, L]``; the rest of
  the fleet keeps whole GPUs for jobs that want them.
- Stability: a second solve keeps the GPU count at the optimum and maximises the GPUs left as they are
  (``z[p, L] <= y[p, L]``, ``z[p, L] <=`` GPUs per node in ``L`` now), counted over EVERY pool, since
  re-partitioning a GPU evicts its workloads. What a pool holds now is its recorded layouts (the
  previous plan) or, with nothing recorded, whole GPUs (``in_place`` says why): so cutting a GPU of an
  unrecorded pool costs as much as re-cutting a recorded one, and neither is preferred for free.

GPU indexes are then assigned so that a GPU keeps its index where its layout survives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from components.catalog.mig.errors import MigPlanError
from components.catalog.mig.milp import INF, SOLVER, Row, Vector, solve
from components.catalog.mig.placement import place
from components.catalog.mig.planner import (
    Layout,
    count_text,
    layout_vector,
    lower_bound,
    maximal_layouts,
    profile_names,
)
from components.catalog.mig.profiles import mig_gpu


@dataclass(frozen=True)
class PoolShape:
    """Identical nodes whose GPUs the plan may cut, and what each GPU index holds now (if known)."""

    name: str
    model: str
    nodes: int
    gpus_per_node: int
    current: tuple[Layout, ...] | None = None  # per GPU index; None: nothing recorded (see ``in_place``)


def in_place(pool: PoolShape) -> tuple[Layout, ...]:
    """What each GPU index of the pool's nodes holds now, as far as the plan can know.

    The recorded layouts; with nothing recorded, every GPU is taken as MIG-disabled (None): that is
    what a MIG-capable node without a ``nvidia.com/mig.config`` label gets, since the GPU Operator
    labels it ``all-disabled`` when ``migManager.config.default`` is ``all-disabled``, the chart's
    default (NVIDIA/gpu-operator v26.7.0 ``controllers/nodelabeling_controller.go``, ``migConfigDisabledValue``;
    ``deployments/gpu-operator/values.yaml`` ``migManager.config.default``). So an unrecorded GPU
    left whole is not re-cut, and one the plan partitions is.
    """
    return pool.current if pool.current is not None else (None,) * pool.gpus_per_node


@dataclass(frozen=True)
class PoolLayouts:
    """One pool's answer: the layout of each GPU index (None: MIG disabled), the same on every node."""

    name: str
    model: str
    nodes: int
    gpu_layouts: tuple[Mapping[str, int] | None, ...]
    changed: tuple[bool, ...]  # per GPU index: its layout differs from the one in place (``in_place``)

    @property
    def partitioned_gpus(self) -> int:
        return self.nodes * sum(1 for layout in self.gpu_layouts if layout)

    @property
    def repartitioned_gpus(self) -> int:
        """GPUs of the pool whose layout the change re-partitions (evicting what runs on them)."""
        return self.nodes * sum(self.changed)

    def provided(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for layout in self.gpu_layouts:
            for name, count in (layout or {}).items():
                total[name] += count * self.nodes
        return dict(total)


@dataclass(frozen=True)
class PoolsPlan:
    """Every pool's layouts for one demand, and the solver's proof."""

    demand: Mapping[str, int]
    pools: tuple[PoolLayouts, ...]
    lower_bound: int
    status: str
    optimal: bool  # True for every returned plan: anything else is raised as MigPlanError
    current_given: bool

    @property
    def gpus_used(self) -> int:
        return sum(pool.partitioned_gpus for pool in self.pools)

    @property
    def repartitioned(self) -> int:
        return sum(pool.repartitioned_gpus for pool in self.pools)

    @property
    def fleet_size(self) -> int:
        return sum(pool.nodes * len(pool.gpu_layouts) for pool in self.pools)


def _check(pools: Sequence[PoolShape]) -> None:
    if not pools:
        raise MigPlanError("no pool to plan on")
    for pool in pools:
        mig_gpu(pool.model)  # UnknownGpuModel / MigNotSupported list the allowed models
        for key, value in (("nodes", pool.nodes), ("GPUs per node", pool.gpus_per_node)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise MigPlanError(f"{pool.name}: {key} must be an integer >= 0, got {value!r}")
        if pool.current is not None:
            if len(pool.current) != pool.gpus_per_node:
                raise MigPlanError(
                    f"{pool.name}: {len(pool.current)} recorded GPU layouts for a node of {pool.gpus_per_node} GPUs"
                )
            for layout in pool.current:
                if layout:
                    place(pool.model, dict(layout))  # MigLayoutError says why it cannot be in place


def plan_pools(demand: Mapping[str, int], pools: Sequence[PoolShape]) -> PoolsPlan:
    """Per pool, a layout per GPU index (identical nodes) so that all pools together hold ``demand``.

    Raises ``MigPlanError`` when the pools cannot hold the demand (with the GPUs it needs and what is
    still missing per profile with every GPU partitioned) or the solver proves no optimum.
    """
    _check(pools)
    models = list(dict.fromkeys(pool.model for pool in pools))
    names = profile_names(models, demand)
    wanted = layout_vector(names, demand)
    zero: Vector = tuple(0 for _ in names)

    # Columns: (pool index, layout vector, kind); kind "use" is y[p, L], kind "keep" is z[p, L]. Every pool
    # has GPUs in place: its recorded layouts, or, with nothing recorded, whole GPUs (``in_place``).
    columns: list[tuple[int, Vector, str]] = []
    upper: list[float] = []
    for index, pool in enumerate(pools):
        now = Counter(layout_vector(names, layout) for layout in in_place(pool))
        layouts = dict.fromkeys([zero, *(layout_vector(names, m) for m in maximal_layouts(pool.model)), *sorted(now)])
        for vector in layouts:
            columns.append((index, vector, "use"))
            upper.append(pool.gpus_per_node)
        for vector, count in sorted(now.items()):
            columns.append((index, vector, "keep"))
            upper.append(count)
    current_given = any(pool.current is not None for pool in pools)

    rows: list[Row] = []
    for i, need in enumerate(wanted):
        coverage = [pools[p].nodes * v[i] if kind == "use" else 0 for p, v, kind in columns]
        rows.append((coverage, float(need), INF))
    for index, pool in enumerate(pools):
        rows.append(
            (
                [1 if p == index and kind == "use" else 0 for p, _, kind in columns],
                pool.gpus_per_node,
                pool.gpus_per_node,
            )
        )
    for c, (p, vector, kind) in enumerate(columns):  # z[p, L] <= y[p, L]
        if kind == "keep":
            use = columns.index((p, vector, "use"))
            rows.append(([1 if j == c else -1 if j == use else 0 for j in range(len(columns))], -INF, 0.0))

    gpus_row = [pools[p].nodes if kind == "use" and any(v) else 0 for p, v, kind in columns]
    first = solve(gpus_row, rows, upper)
    if first is None:
        raise MigPlanError(_shortfall(names, wanted, pools, columns, rows, upper))
    solution = first
    # With every GPU in place whole, a GPU is re-cut exactly when it is partitioned: the first answer is
    # already the one that re-cuts fewest. Otherwise a second solve, at the same GPU count, keeps the most
    # GPUs of every pool, recorded or not, as they are.
    if any(layout for pool in pools for layout in in_place(pool)):
        kept_row = [-pools[p].nodes if kind == "keep" else 0 for p, _, kind in columns]
        second = solve(kept_row, [*rows, (gpus_row, 0.0, float(first.objective))], upper)
        if second is None:  # cannot happen: the first solution is feasible here
            raise MigPlanError(f"the MILP solver ({SOLVER}) lost the plan of {first.objective} GPUs")
        solution = second
    chosen: list[Counter[Vector]] = [Counter() for _ in pools]
    for (p, vector, kind), count in zip(columns, solution.x, strict=True):
        if kind == "use" and count:
            chosen[p][vector] = count
    planned = tuple(_indexed(names, pool, chosen[p]) for p, pool in enumerate(pools))
    return PoolsPlan(
        demand=MappingProxyType({n: c for n, c in zip(names, wanted, strict=True) if c}),
        pools=planned,
        lower_bound=min(first.bound, first.objective),
        status=first.status,
        optimal=True,
        current_given=current_given,
    )


def _indexed(names: Sequence[str], pool: PoolShape, chosen: Counter[Vector]) -> PoolLayouts:
    """Layouts by GPU index: a GPU keeps its index where its recorded layout survives, the rest in order."""
    left = Counter(chosen)
    slots: list[Vector | None] = [None] * pool.gpus_per_node
    current = [layout_vector(names, layout) for layout in in_place(pool)]
    # Partitioned GPUs keep their layout first; whole GPUs stay whole from the highest index down, so the
    # GPUs a change newly cuts are the lowest free indexes (a tidy ``GPUs 0-2`` instead of 0-1 and 7).
    order = [i for i, v in enumerate(current) if any(v)] + [
        i for i, v in reversed(list(enumerate(current))) if not any(v)
    ]
    for index in order:
        vector = current[index]
        if left[vector]:
            slots[index] = vector
            left[vector] -= 1
    rest = sorted(left.elements(), key=lambda v: (not any(v), tuple(-c for c in reversed(v))))
    filled = [slot if slot is not None else rest.pop(0) for slot in slots]
    layouts: list[Mapping[str, int] | None] = []
    changed: list[bool] = []
    for index, vector in enumerate(filled):
        layout = {n: c for n, c in zip(names, vector, strict=True) if c}
        layouts.append(dict(place(pool.model, layout).layout) if layout else None)
        changed.append(vector != current[index])
    return PoolLayouts(pool.name, pool.model, pool.nodes, tuple(layouts), tuple(changed))


def _shortfall(
    names: Sequence[str],
    wanted: Vector,
    pools: Sequence[PoolShape],
    columns: Sequence[tuple[int, Vector, str]],
    rows: Sequence[Row],
    upper: Sequence[float],
) -> str:
    """The refusal: what the demand needs, what the pools have, and what stays missing with all of them cut."""
    slack = len(names)
    widened = [
        ([*row, *(1 if j == i else 0 for j in range(slack))] if i < slack else [*row, *[0] * slack], lb, ub)
        for i, (row, lb, ub) in enumerate(rows)
    ]
    missing = solve([0] * len(columns) + [1] * slack, widened, [*upper, *wanted])
    short = {} if missing is None else {n: m for n, m in zip(names, missing.x[len(columns) :], strict=True) if m}
    demand = {n: c for n, c in zip(names, wanted, strict=True) if c}
    have = sum(pool.nodes * pool.gpus_per_node for pool in pools)
    needs = lower_bound(pools[0].model, demand) if len({p.model for p in pools}) == 1 else None
    size = f"needs at least {needs} GPUs of {pools[0].model}, " if needs is not None else ""
    pool_names = ", ".join(pool.name for pool in pools)
    missing_text = count_text(short)
    return (
        f"{count_text(demand)} {size}the pools planned from demand ({pool_names}) "
        f"have {have}; with all of them partitioned, still missing {missing_text}"
    )
