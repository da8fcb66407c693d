"""Place a per-GPU MIG layout the way the hardware does, or say precisely why it cannot be placed.

Summing slices is not enough: a 1-memory-slice GI can never start at memory slice 7, a 2g only at
0/2/4, a 4g only at 0. So ``place`` searches over concrete start positions (backtracking, larger
profiles first, identical instances in increasing start order so no permutation is tried twice) and
returns the placement it found. mig-parted itself tries creation orders until one succeeds
(``pkg/mig/config/config.go`` ``iteratePermutationsUntilSuccess``), so "some placement exists" is
exactly the condition under which mig-manager can apply the layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from components.catalog.mig.errors import MigLayoutError
from components.catalog.mig.profiles import MigGpu, Profile, mig_gpu


@dataclass(frozen=True)
class PlacedInstance:
    """One GPU instance at a concrete memory-slice position."""

    profile: str
    start: int
    memory_slices: int
    compute_slices: int

    @property
    def end(self) -> int:
        """Last memory slice used (inclusive)."""
        return self.start + self.memory_slices - 1

    def describe(self) -> str:
        """``3g.40gb@4-7``: the profile and the memory slices it occupies."""
        span = str(self.start) if self.memory_slices == 1 else f"{self.start}-{self.end}"
        return f"{self.profile}@{span}"


@dataclass(frozen=True)
class Placement:
    """A layout that fits one GPU, with every instance's start position (sorted by start)."""

    model: str
    instances: tuple[PlacedInstance, ...]

    @property
    def pairs(self) -> tuple[tuple[str, int], ...]:
        """(profile, start) for every instance."""
        return tuple((i.profile, i.start) for i in self.instances)

    @property
    def layout(self) -> Mapping[str, int]:
        """Profile -> count, in catalog (smallest-first) order: what mig-parted's ``mig-devices`` holds."""
        counts: dict[str, int] = {}
        for profile in mig_gpu(self.model).profiles:
            n = sum(1 for i in self.instances if i.profile == profile.name)
            if n:
                counts[profile.name] = n
        return MappingProxyType(counts)

    @property
    def compute_slices(self) -> int:
        return sum(i.compute_slices for i in self.instances)

    @property
    def memory_slices(self) -> int:
        return sum(i.memory_slices for i in self.instances)

    def describe(self) -> str:
        """``4g.40gb@0-3 3g.40gb@4-7`` (or ``(no GPU instances)``)."""
        return " ".join(i.describe() for i in self.instances) or "(no GPU instances)"


def _normalise(gpu: MigGpu, layout: Mapping[str, int]) -> dict[str, int]:
    """Check names and counts; drop zero counts. Key order follows the catalog."""
    for name, count in layout.items():
        gpu.profile(name)  # raises UnknownMigProfile with the allowed names
        if isinstance(count, bool) or not isinstance(count, int):
            raise MigLayoutError(f"{gpu.model}: count for {name} must be an integer, got {count!r}")
        if count < 0:
            raise MigLayoutError(f"{gpu.model}: count for {name} must be >= 0, got {count}")
    return {p.name: layout[p.name] for p in gpu.profiles if layout.get(p.name, 0) > 0}


def _check_counts(gpu: MigGpu, counts: Mapping[str, int]) -> None:
    """Limits that do not depend on positions: GI total, one +me, per-profile maxima."""
    total = sum(counts.values())
    limit = gpu.geometry.max_gpu_instances
    if total > limit:
        raise MigLayoutError(f"{gpu.model}: {total} GPU instances requested; at most {limit}")
    media = {name: n for name, n in counts.items() if gpu.profile(name).media_extensions}
    if sum(media.values()) > 1:
        listed = ", ".join(f"{n} x {name}" for name, n in media.items())
        raise MigLayoutError(f"{gpu.model}: {listed} requested; at most one +me (media extensions) instance per GPU")
    for name, n in counts.items():
        maximum = gpu.profile(name).max_instances
        if n > maximum:
            raise MigLayoutError(f"{gpu.model}: {n} x {name} requested; at most {maximum} per GPU")


def _instances(gpu: MigGpu, counts: Mapping[str, int]) -> list[Profile]:
    """One entry per GI, larger (and less flexible) profiles first: they constrain the search most."""
    order = sorted(
        (gpu.profile(name) for name in counts),
        key=lambda p: (-p.memory_slices, -p.compute_slices, len(p.starts), p.name),
    )
    return [p for p in order for _ in range(counts[p.name])]


def _search(instances: list[Profile], total_memory: int) -> list[int] | None:
    """Start positions for ``instances`` with no memory overlap, or None if none exist."""
    starts: list[int] = []

    def go(index: int, occupied: int) -> bool:
        if index == len(instances):
            return True
        profile = instances[index]
        same_as_previous = index > 0 and instances[index - 1].name == profile.name
        for start in profile.starts:
            if same_as_previous and start <= starts[-1]:
                continue  # identical GIs: only increasing starts, so each set is tried once
            if start + profile.memory_slices > total_memory:
                continue
            mask = ((1 << profile.memory_slices) - 1) << start
            if occupied & mask:
                continue
            starts.append(start)
            if go(index + 1, occupied | mask):
                return True
            starts.pop()
        return False

    return starts if go(0, 0) else None


def _span(start: int, end: int) -> str:
    return f"memory slice {start}" if start == end else f"memory slices {start}-{end}"


def _explain(gpu: MigGpu, instances: list[Profile], counts: Mapping[str, int]) -> str:
    """Why no placement exists, told through a first-fit attempt in the search's order.

    The exhaustive search already proved that nothing fits; first-fit then fails too, and the first GI
    it cannot place, with the GIs sitting on each of its allowed starts, is a concrete, checkable reason.
    """
    placed: list[PlacedInstance] = []
    reason: str | None = None
    for profile in instances:
        free = [
            s
            for s in profile.starts
            if s + profile.memory_slices <= gpu.geometry.memory_slices
            and all(s + profile.memory_slices - 1 < p.start or s > p.end for p in placed)
        ]
        if free:
            placed.append(PlacedInstance(profile.name, free[0], profile.memory_slices, profile.compute_slices))
            continue
        blockers: list[PlacedInstance] = []
        for s in profile.starts:
            for p in placed:
                overlaps = not (s + profile.memory_slices - 1 < p.start or s > p.end)
                if overlaps and p not in blockers:
                    blockers.append(p)
        used = ", ".join(f"{_span(p.start, p.end)} already used by {p.profile}" for p in blockers)
        reason = f"no free placement left for {profile.name} (allowed starts {list(profile.starts)}; {used})"
        break
    compute = sum(gpu.profile(n).compute_slices * c for n, c in counts.items())
    memory = sum(gpu.profile(n).memory_slices * c for n, c in counts.items())
    geometry = gpu.geometry
    over = []
    if compute > geometry.compute_slices:
        over.append(f"{compute} of {geometry.compute_slices} compute slices")
    if memory > geometry.memory_slices:
        over.append(f"{memory} of {geometry.memory_slices} memory slices")
    if over:
        totals = f"the layout needs {' and '.join(over)}"
    else:
        totals = (
            f"the totals fit ({compute} of {geometry.compute_slices} compute, "
            f"{memory} of {geometry.memory_slices} memory slices) but the allowed start positions do not"
        )
    return f"{gpu.model}: {totals}" if reason is None else f"{gpu.model}: {reason}; {totals}"


def place(model: str, layout: Mapping[str, int]) -> Placement:
    """Place ``layout`` (profile -> count) on one GPU of ``model``, or raise ``MigLayoutError``.

    Zero counts are ignored; an empty layout is valid (MIG enabled, no instances: ``all-enabled``).
    A placement is a pure function of the model and the counts, and a fleet asks for the same few layouts
    once per node (thousands of times at fleet scale), so successful placements are remembered.
    """
    # Only exact ints are remembered: 1.0 and True equal 1 as dict keys, and must still be refused.
    if not all(type(name) is str and type(count) is int for name, count in layout.items()):
        return _place(model, layout)
    key = tuple(sorted(layout.items()))
    return _remembered(model, key)


@cache
def _remembered(model: str, key: tuple[tuple[str, int], ...]) -> Placement:
    return _place(model, dict(key))


def _place(model: str, layout: Mapping[str, int]) -> Placement:
    gpu = mig_gpu(model)
    counts = _normalise(gpu, layout)
    _check_counts(gpu, counts)
    instances = _instances(gpu, counts)
    starts = _search(instances, gpu.geometry.memory_slices)
    compute = sum(p.compute_slices for p in instances)
    if starts is None or compute > gpu.geometry.compute_slices:
        raise MigLayoutError(_explain(gpu, instances, counts))
    placed = sorted(
        (PlacedInstance(p.name, s, p.memory_slices, p.compute_slices) for p, s in zip(instances, starts, strict=True)),
        key=lambda i: (i.start, i.profile),
    )
    return Placement(model=model, instances=tuple(placed))


def is_placeable(model: str, layout: Mapping[str, int]) -> bool:
    """True when ``place`` would succeed (unknown models/profiles still raise)."""
    try:
        place(model, layout)
    except MigLayoutError as error:
        if type(error) is not MigLayoutError:
            raise  # UnknownMigProfile: bad input, not a "no"
        return False
    return True


@cache
def valid_layouts(model: str) -> tuple[Mapping[str, int], ...]:
    """Every non-empty layout that fits one GPU of ``model`` (a few hundred at most; cached).

    Enumerated once per model by trying every count vector within the per-profile maxima and the
    slice/GI totals, and keeping those ``place`` accepts. The planner builds its search on this list.
    """
    gpu = mig_gpu(model)
    profiles = gpu.profiles
    geometry = gpu.geometry
    found: list[Mapping[str, int]] = []

    def go(index: int, counts: dict[str, int], compute: int, memory: int, gis: int) -> None:
        if index == len(profiles):
            if counts and is_placeable(model, counts):
                found.append(MappingProxyType(dict(counts)))
            return
        profile = profiles[index]
        for n in range(profile.max_instances + 1):
            c, m, g = compute + n * profile.compute_slices, memory + n * profile.memory_slices, gis + n
            if c > geometry.compute_slices or m > geometry.memory_slices or g > geometry.max_gpu_instances:
                break
            if n:
                counts[profile.name] = n
            go(index + 1, counts, c, m, g)
            counts.pop(profile.name, None)

    go(0, {}, 0, 0, 0)
    return tuple(found)
