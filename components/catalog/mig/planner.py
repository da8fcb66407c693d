"""Pack a demand for MIG devices (profile -> count) onto the fewest GPUs of a fleet, proven optimal.

The problem is a small integer program, so it is handed to a MILP solver instead of a search of our own:

- Variables: how many GPUs of each model take each *maximal* placeable layout (``valid_layouts``
  with nothing more addable: 44 on a 7-slice GPU, 8 on an A30). Every GPU of any plan is a subset of
  a maximal layout, and every subset of a valid layout is valid (removing a GI only frees slices), so
  maximal layouts lose nothing; the plan trims the surplus off afterwards.
- One covering constraint per profile (the layouts chosen hold at least the demand), one capacity
  constraint per GPU model (no more GPUs than the fleet has). Objective: the fewest GPUs.
- Stability (``current``: the layouts in place now, e.g. a previous plan's ``in_place()`` or the
  stack's configured layouts): a second solve keeps the GPU count at the optimum (or up to
  ``extra_gpus`` above it, the configurable trade-off) and minimises the GPUs whose layout changes,
  since re-partitioning a GPU evicts its workloads. A GPU can stay in its current layout as is; GPUs
  of the fleet that ``current`` does not describe are free and cost nothing to partition.
- Every answer is the solver's proven optimum (``mip_rel_gap`` 0, integral objective): a status other
  than optimal is an error (``MigPlanError`` with the solver's message), never a heuristic answer.
  An infeasible demand is refused with the GPUs it needs and the shortfall per profile that the
  full fleet still leaves (a third solve: the fewest instances missing).

Solver: HiGHS (through its binding ``highspy``), chosen over Google OR-tools after trying both on this
model (docs/mig.md, "Why HiGHS, not OR-tools", has the figures). OR-tools' CP-SAT is faster (p95 5 ms
against 59 ms of CPU on random demands of up to 10^6 instances), but both are well inside the target, and
OR-tools 9.15 cannot be installed beside the Pulumi policy SDK: it needs protobuf >= 6.33.1,
pulumi-policy 1.21.0 pins protobuf ~= 5.29.5. ``highspy`` needs only numpy (about 50 MB installed against
about 250 MB for OR-tools with numpy, pandas and protobuf), HiGHS is MIT-licensed (OR-tools: Apache-2.0),
and its serial MIP solve is deterministic for the same input. The solver is imported only inside
``milp.solve``, so a stack without ``mig.demand`` never loads it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from components.catalog.mig.errors import MigPlanError, UnknownMigProfile
from components.catalog.mig.milp import INF, SOLVER, Vector, solve
from components.catalog.mig.placement import Placement, place, valid_layouts
from components.catalog.mig.profiles import mig_gpu, mig_models

Layout = Mapping[str, int] | None
# GPUs in place now: (model, layout) for one GPU, or (model, layout, count) for ``count`` identical ones;
# a layout of None or {} is a GPU with MIG disabled.
CurrentGpu = tuple[str, Layout] | tuple[str, Layout, int]
InPlace = Counter[tuple[str, tuple[tuple[str, int], ...]]]  # (model, sorted layout items) -> GPUs


@dataclass(frozen=True)
class MigPlan:
    """Per-GPU placements that together hold the demand, and the solver's proof."""

    demand: Mapping[str, int]
    fleet: Mapping[str, int]  # model -> GPUs the fleet has
    gpus: tuple[Placement, ...]  # the GPUs the plan uses; ``Placement.model`` says which model each is
    repartitioned_flags: tuple[bool, ...]  # per GPU: its layout differs from the one in place now
    lower_bound: int  # the solver's proven bound on the GPU count (``gpus_used`` unless extra_gpus allowed more)
    status: str  # the solver's status message for the GPU-count solve
    optimal: bool  # always True for a returned plan: anything else is raised as MigPlanError
    current_given: bool  # whether ``repartitioned`` compares against layouts in place

    @property
    def model(self) -> str:
        """The fleet's GPU model, or ``A + B`` for a mixed fleet."""
        return " + ".join(self.fleet)

    @property
    def fleet_size(self) -> int:
        return sum(self.fleet.values())

    @property
    def gpus_used(self) -> int:
        return len(self.gpus)

    @property
    def layouts(self) -> tuple[Mapping[str, int], ...]:
        """Profile -> count per GPU, e.g. to render as mig-parted ``DeviceLayout`` entries."""
        return tuple(gpu.layout for gpu in self.gpus)

    @property
    def repartitioned(self) -> int:
        """GPUs whose layout the change re-partitions (every GPU used when nothing was in place)."""
        return sum(self.repartitioned_flags)

    def provided(self) -> dict[str, int]:
        """Instances per profile the plan's GPUs hold (the demand, plus what kept GPUs hold beyond it)."""
        total: Counter[str] = Counter()
        for gpu in self.gpus:
            total.update(gpu.layout)
        return dict(total)

    def in_place(self) -> tuple[CurrentGpu, ...]:
        """The plan as ``current`` for the next plan: (model, layout, GPUs) per distinct layout, once applied."""
        groups: dict[int, tuple[Placement, int]] = {}  # by object: the plan repeats one Placement per layout
        for gpu in self.gpus:
            groups[id(gpu)] = (gpu, groups[id(gpu)][1] + 1 if id(gpu) in groups else 1)
        return tuple((gpu.model, dict(gpu.layout), n) for gpu, n in groups.values())


@cache
def maximal_layouts(model: str) -> tuple[Mapping[str, int], ...]:
    """The placeable layouts of ``model`` to which no further GI can be added (cached per model)."""
    names = tuple(p.name for p in mig_gpu(model).profiles)
    valid = {tuple(layout.get(n, 0) for n in names) for layout in valid_layouts(model)}

    def grows(v: Vector) -> bool:
        return any((*v[:i], v[i] + 1, *v[i + 1 :]) in valid for i in range(len(names)))

    return tuple(
        MappingProxyType({n: c for n, c in zip(names, v, strict=True) if c}) for v in sorted(valid) if not grows(v)
    )


def _fleet(fleet: Mapping[str, int]) -> dict[str, int]:
    """Check the fleet; models in catalog order so the same fleet always gives the same program."""
    if not fleet:
        raise MigPlanError("the fleet has no GPU model; give at least one MODEL=GPUS")
    for model, size in fleet.items():
        mig_gpu(model)  # UnknownGpuModel / MigNotSupported list the allowed models
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise MigPlanError(f"fleet size must be an integer >= 0, got {size!r} for {model}")
    return {model: fleet[model] for model in mig_models() if model in fleet}


def profile_names(models: Iterable[str], demand: Mapping[str, int]) -> tuple[str, ...]:
    """Profile names the fleet offers, in catalog order; every demanded name must be among them."""
    names: list[str] = []
    for model in models:
        names += [p.name for p in mig_gpu(model).profiles if p.name not in names]
    for name, count in demand.items():
        if name not in names:
            raise UnknownMigProfile(
                f"{' + '.join(models)}: unknown MIG profile {name!r}; allowed profiles: {', '.join(names)}"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MigPlanError(f"demand for {name} must be an integer >= 0, got {count!r}")
    return tuple(names)


def layout_vector(names: Sequence[str], layout: Layout) -> Vector:
    """``layout`` as counts in the order of ``names`` (a disabled GPU is all zeros)."""
    return tuple((layout or {}).get(n, 0) for n in names)


def _current(fleet: Mapping[str, int], current: Iterable[CurrentGpu]) -> InPlace:
    """GPUs in place now, counted per (model, layout); each layout placeable, no more GPUs than the fleet."""
    counts: InPlace = Counter()
    # Per layout object (the same dict often stands for many GPUs), holding the object so its id stays its own.
    keys: dict[int, tuple[Layout, tuple[tuple[str, int], ...]]] = {}
    for item in current:
        model, layout = item[0], item[1]
        count = item[2] if len(item) == 3 else 1
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MigPlanError(f"a current layout's GPU count must be an integer >= 0, got {count!r}")
        if id(layout) not in keys:
            keys[id(layout)] = (layout, tuple(sorted((n, c) for n, c in (layout or {}).items() if c)))
        counts[(model, keys[id(layout)][1])] += count
    per_model: Counter[str] = Counter()
    for (model, key), n in counts.items():  # each distinct layout checked once: fleets reach 10^5 GPUs
        if model not in fleet:
            raise MigPlanError(f"a current layout is for {model}, which the fleet does not have ({', '.join(fleet)})")
        if key:
            place(model, dict(key))  # MigLayoutError says why it cannot be in place
        per_model[model] += n
    for model, n in per_model.items():
        if n > fleet[model]:
            raise MigPlanError(f"{n} current layouts given for {model}, but the fleet has {fleet[model]} GPUs")
    return counts


def count_text(counts: Mapping[str, int], empty: str = "nothing") -> str:
    """``40 x 1g.10gb + 12 x 3g.40gb`` (zero counts left out), as every planner message and print says it."""
    return " + ".join(f"{n} x {name}" for name, n in counts.items() if n) or empty


def _describe(names: Sequence[str], counts: Mapping[str, int]) -> str:
    return count_text({n: counts.get(n, 0) for n in names})


def plan_fleet(
    demand: Mapping[str, int],
    fleet: Mapping[str, int],
    *,
    current: Iterable[CurrentGpu] = (),
    extra_gpus: int = 0,
) -> MigPlan:
    """The fewest GPUs of ``fleet`` (model -> GPUs, one model or several) that hold ``demand``.

    With ``current`` (layouts in place now), among plans of that size (or up to ``extra_gpus`` more)
    the one that changes the fewest GPUs. Raises ``MigPlanError`` when the fleet cannot hold the
    demand (with the GPUs needed and what is missing per profile) or the solver proves no optimum.
    """
    if isinstance(extra_gpus, bool) or not isinstance(extra_gpus, int) or extra_gpus < 0:
        raise MigPlanError(f"extra_gpus must be an integer >= 0, got {extra_gpus!r}")
    sizes = _fleet(fleet)
    names = profile_names(sizes, demand)
    wanted = layout_vector(names, demand)
    in_place = _current(sizes, current)
    current_given = bool(in_place)

    # Columns: (model, layout vector, kind) with kind "keep" (GPUs in place left as they are, at most as
    # many as have that layout), "new" (GPUs given a maximal layout: free GPUs first, then GPUs in place)
    # and, per model with GPUs in place, one "changes" column: at least the new GPUs beyond the free ones,
    # i.e. the GPUs in place that get re-partitioned. One "new" column per layout (not one per source)
    # keeps the second solve free of symmetric twins, which made it slow.
    zero = tuple(0 for _ in names)
    columns: list[tuple[str, Vector, str]] = []
    upper: list[float] = []
    placed = {model: sum(n for (m, _), n in in_place.items() if m == model) for model in sizes}
    for model, size in sizes.items():
        for (m, key), n in sorted(in_place.items()):
            if m == model and key:
                columns.append((model, layout_vector(names, dict(key)), "keep"))
                upper.append(n)
        for layout in maximal_layouts(model):
            columns.append((model, layout_vector(names, layout), "new"))
            upper.append(size)
        if placed[model]:
            columns.append((model, zero, "changes"))
            upper.append(placed[model])

    def coverage_rows(slack: int = 0) -> list[tuple[list[int], float, float]]:
        return [
            ([vector[i] for _, vector, _ in columns] + [1 if j == i else 0 for j in range(slack)], float(need), INF)
            for i, need in enumerate(wanted)
        ]

    def capacity_rows(slack: int = 0) -> list[tuple[list[int], float, float]]:
        rows = []
        for model, size in sizes.items():
            gpus = [1 if m == model and kind != "changes" else 0 for m, _, kind in columns] + [0] * slack
            rows.append((gpus, 0.0, float(size)))
            if placed[model]:  # new GPUs - changes <= free GPUs
                new = [
                    (1 if kind == "new" else -1 if kind == "changes" else 0) if m == model else 0
                    for m, _, kind in columns
                ]
                rows.append((new + [0] * slack, -INF, float(size - placed[model])))
        return rows

    gpus_row = [0 if kind == "changes" else 1 for _, _, kind in columns]
    base = coverage_rows() + capacity_rows()
    first = solve(gpus_row, base, upper)
    if first is None:
        raise MigPlanError(_shortfall(names, wanted, sizes, columns, upper, capacity_rows, coverage_rows))
    solution, status, bound = first, first.status, first.bound
    if current_given:
        limit = first.objective + extra_gpus
        changes_row = [1 if kind == "changes" else 0 for _, _, kind in columns]
        second = solve(changes_row, [*base, (gpus_row, 0.0, float(limit))], upper)
        if second is None:  # cannot happen: the first solution is feasible here
            raise MigPlanError(f"the MILP solver ({SOLVER}) lost the plan of {first.objective} GPUs")
        solution = second
        if extra_gpus:  # the trade-off allowed more GPUs: now the fewest GPUs at that number of changes
            third = solve(gpus_row, [*base, (changes_row, 0.0, float(second.objective))], upper)
            solution = third or second
    gpus, flags = _ordered(names, _trimmed(wanted, columns, solution.x), in_place, sizes)
    return MigPlan(
        demand=MappingProxyType({n: c for n, c in zip(names, wanted, strict=True) if c}),
        fleet=MappingProxyType(sizes),
        gpus=tuple(gpus),
        repartitioned_flags=tuple(flags),
        lower_bound=min(bound, len(gpus)),
        status=status,
        optimal=True,
        current_given=current_given,
    )


def _shortfall(
    names: Sequence[str],
    wanted: Vector,
    sizes: Mapping[str, int],
    columns: Sequence[tuple[str, Vector, str]],
    upper: Sequence[float],
    capacity_rows: Callable[[int], list[tuple[list[int], float, float]]],
    coverage_rows: Callable[[int], list[tuple[list[int], float, float]]],
) -> str:
    """The refusal: GPUs the demand needs without the fleet's limit, and what the full fleet leaves missing."""
    every = [layout_vector(names, layout) for model in sizes for layout in maximal_layouts(model)]
    cover = [([v[i] for v in every], float(need), float("inf")) for i, need in enumerate(wanted)]
    unlimited = solve([1] * len(every), cover, [float("inf")] * len(every))
    if unlimited is None:  # cannot happen: every demanded profile fits alone on a GPU of some model
        raise MigPlanError("the MILP solver found no plan even for an unlimited fleet")
    slack = [1] * len(names)
    rows = coverage_rows(len(names)) + capacity_rows(len(names))
    missing = solve([0] * len(columns) + slack, rows, [*upper, *wanted])
    short = {} if missing is None else dict(zip(names, missing.x[len(columns) :], strict=True))
    fleet = sum(sizes.values())
    demand = dict(zip(names, wanted, strict=True))
    needs = unlimited.objective
    if needs > fleet:
        size = f"fleet has {fleet} (short by {needs - fleet})"
    else:
        size = f"fleet has {fleet}, but not enough of the models that offer these profiles"
    return (
        f"{' + '.join(sizes)}: {_describe(names, demand)} needs {needs} GPUs, {size}; "
        f"with the whole fleet partitioned, still missing {_describe(names, short)}"
    )


Group = tuple[str, Vector, bool, int]  # (model, layout vector, kept as it is, how many GPUs)


def _trimmed(wanted: Vector, columns: Sequence[tuple[str, Vector, str]], x: Sequence[int]) -> list[Group]:
    """The chosen GPUs in groups of identical ones, the surplus trimmed off GPUs that are not kept.

    Works on groups, not single GPUs, so the cost grows with distinct layouts, not with the fleet.
    """
    groups: list[Group] = [
        (m, v, kind == "keep", n) for (m, v, kind), n in zip(columns, x, strict=True) if n and kind != "changes"
    ]
    surplus = [sum(g[1][i] * g[3] for g in groups) - need for i, need in enumerate(wanted)]
    for i in range(len(wanted)):
        trimmed: list[Group] = []
        for model, vector, kept, n in groups:
            if kept or not surplus[i] or not vector[i]:
                trimmed.append((model, vector, kept, n))
                continue
            each = min(vector[i], surplus[i] // n)  # cut from every GPU of the group
            rest = 0 if each == vector[i] else min(surplus[i] - each * n, n)  # one more cut from ``rest`` GPUs
            surplus[i] -= each * n + rest
            cut = (*vector[:i], vector[i] - each, *vector[i + 1 :])
            if rest:
                trimmed.append((model, (*cut[:i], cut[i] - 1, *cut[i + 1 :]), kept, rest))
            if n - rest:
                trimmed.append((model, cut, kept, n - rest))
        groups = trimmed
    return [g for g in groups if any(g[1])]  # an emptied GPU would contradict optimality; dropped all the same


def _ordered(
    names: Sequence[str], groups: Sequence[Group], in_place: InPlace, sizes: Mapping[str, int]
) -> tuple[list[Placement], list[bool]]:
    """Placed GPUs (per model, unchanged first) and, per GPU, whether its layout changes.

    A planned GPU is matched with a GPU in place that has the same layout where one is left; the others
    go to GPUs nothing describes first (no change), then to the remaining GPUs in place (a change).
    """
    merged: Counter[tuple[str, Vector]] = Counter()
    for model, vector, _, n in groups:
        merged[(model, vector)] += n
    left = Counter({(m, layout_vector(names, dict(key))): n for (m, key), n in in_place.items()})
    free = {model: size - sum(n for (m, _), n in in_place.items() if m == model) for model, size in sizes.items()}
    runs: list[tuple[str, Vector, bool, int]] = []
    for (model, vector), n in merged.items():
        same = min(left[(model, vector)], n)
        on_free = min(free[model], n - same)
        free[model] -= on_free
        runs += [(model, vector, False, same), (model, vector, not in_place, on_free)]
        runs.append((model, vector, True, n - same - on_free))
    order = {model: i for i, model in enumerate(sizes)}
    runs.sort(key=lambda r: (order[r[0]], r[2], tuple(-c for c in reversed(r[1]))))
    gpus: list[Placement] = []
    flags: list[bool] = []
    for model, vector, changed, n in runs:
        if n:
            placement = place(model, {name: c for name, c in zip(names, vector, strict=True) if c})
            gpus += [placement] * n
            flags += [changed] * n
    return gpus, flags


def plan(
    model: str,
    demand: Mapping[str, int],
    fleet_size: int,
    *,
    current: Iterable[CurrentGpu | Layout] = (),
    extra_gpus: int = 0,
) -> MigPlan:
    """``plan_fleet`` for a fleet of one model; ``current`` may then give bare layouts."""
    if isinstance(fleet_size, bool) or not isinstance(fleet_size, int) or fleet_size < 0:
        raise MigPlanError(f"fleet size must be an integer >= 0, got {fleet_size!r}")
    gpus: list[CurrentGpu] = [item if isinstance(item, tuple) else (model, item) for item in current]
    return plan_fleet(demand, {model: fleet_size}, current=gpus, extra_gpus=extra_gpus)


def lower_bound(model: str, demand: Mapping[str, int]) -> int:
    """Fewest GPUs of ``model`` that can hold ``demand`` (the proven optimum, with no fleet limit)."""
    enough = sum(c for c in demand.values() if isinstance(c, int) and c > 0)  # one instance per GPU always fits
    return plan(model, demand, enough).gpus_used
