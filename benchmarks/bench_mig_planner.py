"""Benchmark the MIG planner: proven optimum, time, and GPUs re-partitioned by a demand change.

Run: ``python -m benchmarks.bench_mig_planner`` (``make bench``). Prints, for the old branch and
bound's worst cases (issue 16) and for seeded random demands of 10 to 1,000,000 instances:

- GPUs used against the solver's proven bound, and whether every plan is optimal (target: always);
- wall and CPU time per plan after the one-off solver import (target: p95 under 100 ms, worst under
  1 s; wall time suffers when the machine is shared, so the load average is printed too);
- that a fleet exactly the size of the optimum is accepted and one GPU less refused;
- stability: after a change of up to 10% per profile, the GPUs a plan re-partitions when it knows the
  layouts in place, against a plan that does not (both on the same, optimal, number of GPUs), on a
  fleet with 10% unused GPUs and on one with none.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from components.catalog.mig import MigPlan, MigPlanError, mig_gpu, mig_models, plan, plan_fleet

SEED = 16
RANDOM_DEMANDS = 200
STABILITY_DEMANDS = 60

# The old planner's worst cases (issue 16): 25,001 GPUs where 20,001 suffice; refused on 5,002 GPUs.
WORST_CASES: list[tuple[str, dict[str, int], int]] = [
    ("+me/3g x 20001 (old: 25001)", {"1g.10gb+me": 20001, "3g.40gb": 20001}, 25001),
    ("+me/3g x 5002 (old: refused)", {"1g.10gb+me": 5002, "3g.40gb": 5002}, 5002),
    ("mixed 64 (old bench)", {"1g.10gb": 40, "2g.20gb": 20, "3g.40gb": 12, "4g.40gb": 6, "7g.80gb": 5}, 64),
    (
        "media-heavy (old bench)",
        {"1g.10gb": 31, "1g.10gb+me": 37, "1g.20gb": 17, "2g.20gb": 23, "3g.40gb": 28, "4g.40gb": 9, "7g.80gb": 4},
        64,
    ),
]


def _timed(call: Callable[[], MigPlan]) -> tuple[MigPlan, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _random_demand(rng: random.Random) -> tuple[str, dict[str, int]]:
    model = rng.choice(mig_models())
    names = [p.name for p in mig_gpu(model).profiles]
    chosen = rng.sample(names, rng.randint(1, len(names)))
    total = int(10 ** rng.uniform(1, 6))
    weights = [rng.random() for _ in chosen]
    demand = {name: max(1, round(total * w / sum(weights))) for name, w in zip(chosen, weights, strict=True)}
    return model, demand


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.1f} ms, p95 {_percentile(values, 0.95) * 1000:.1f} ms, worst {max(values) * 1000:.1f} ms"


def _fleet_checks(model: str, demand: Mapping[str, int], optimum: int) -> tuple[bool, bool]:
    """(a fleet of exactly the optimum is accepted, one GPU less is refused)."""
    accepted = plan(model, demand, optimum).gpus_used == optimum
    try:
        plan(model, demand, optimum - 1)
    except MigPlanError:
        return accepted, True
    return accepted, optimum == 0


def _without_stability(previous: MigPlan, fresh: MigPlan) -> int:
    """GPUs a plan made without the layouts in place re-partitions (same matching rule as the planner)."""
    left = Counter(tuple(sorted(layout.items())) for layout in previous.layouts)
    free = previous.fleet_size - previous.gpus_used
    changed = 0
    for layout in fresh.layouts:
        key = tuple(sorted(layout.items()))
        if left[key]:
            left[key] -= 1
        elif free:
            free -= 1
        else:
            changed += 1
    return changed


def _changed(rng: random.Random, demand: Mapping[str, int]) -> dict[str, int]:
    return {name: max(1, round(n * (1 + rng.uniform(-0.1, 0.1)))) for name, n in demand.items()}


def main() -> None:
    started = time.perf_counter()
    plan("H100-80GB", {"1g.10gb": 1}, 1)  # imports the solver
    print(f"solver import and first plan: {(time.perf_counter() - started) * 1000:.0f} ms")
    print(f"load average (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    print("\nthe old planner's worst cases (H100-80GB):")
    for label, demand, fleet in WORST_CASES:
        result, wall, cpu = _timed(lambda d=demand, f=fleet: plan("H100-80GB", d, f))  # type: ignore[misc]
        accepted, refused = _fleet_checks("H100-80GB", demand, result.gpus_used)
        print(
            f"  {label}: {result.gpus_used} GPUs, proven bound {result.lower_bound}, optimal={result.optimal}, "
            f"{wall * 1000:.1f} ms wall / {cpu * 1000:.1f} ms CPU; fleet = optimum accepted={accepted}, "
            f"optimum - 1 refused={refused}"
        )

    rng = random.Random(SEED)
    walls: list[float] = []
    cpus: list[float] = []
    optimal = at_bound = fleet_ok = 0
    sizes: list[int] = []
    for _ in range(RANDOM_DEMANDS):
        model, demand = _random_demand(rng)
        total = sum(demand.values())
        sizes.append(total)
        result, wall, cpu = _timed(lambda m=model, d=demand, t=total: plan(m, d, t))  # type: ignore[misc]
        walls.append(wall)
        cpus.append(cpu)
        optimal += result.optimal
        at_bound += result.gpus_used == result.lower_bound
        accepted, refused = _fleet_checks(model, demand, result.gpus_used)
        fleet_ok += accepted and refused
    print(f"\n{RANDOM_DEMANDS} random demands (seed {SEED}, every MIG model, {min(sizes)} to {max(sizes)} instances):")
    print(f"  optimal {optimal}/{RANDOM_DEMANDS}, GPUs used = proven bound {at_bound}/{RANDOM_DEMANDS}")
    print(f"  fleet = optimum accepted and optimum - 1 refused: {fleet_ok}/{RANDOM_DEMANDS}")
    print(f"  wall: {_ms(walls)}")
    print(f"  CPU:  {_ms(cpus)}")

    mixed, wall, _ = _timed(
        lambda: plan_fleet({"1g.10gb": 40000, "3g.40gb": 9000, "7g.80gb": 500}, {"A100-80GB": 4000, "H100-80GB": 9000})
    )
    print(
        f"\nmixed fleet A100-80GB x4000 + H100-80GB x9000: {mixed.gpus_used} GPUs "
        f"{dict(Counter(g.model for g in mixed.gpus))}, optimal={mixed.optimal}, {wall * 1000:.1f} ms"
    )

    _stability(random.Random(SEED + 1))


def _stability(rng: random.Random) -> None:
    for spare in (0.1, 0.0):
        _stability_run(random.Random(rng.random()), spare)


def _stability_run(rng: random.Random, spare: float) -> None:
    kept_share: list[float] = []
    fresh_share: list[float] = []
    walls: list[float] = []
    same_count = 0
    for _ in range(STABILITY_DEMANDS):
        model, demand = _random_demand(rng)
        changed = _changed(rng, demand)
        needed = max(plan(model, d, sum(d.values())).gpus_used for d in (demand, changed))
        fleet = needed + (max(1, round(needed * spare)) if spare else 0)
        previous = plan(model, demand, fleet)
        fresh = plan(model, changed, fleet)
        stable, wall, _ = _timed(lambda m=model, c=changed, f=fleet, p=previous: plan(m, c, f, current=p.in_place()))  # type: ignore[misc]
        walls.append(wall)
        same_count += stable.gpus_used == fresh.gpus_used
        kept_share.append(stable.repartitioned / max(1, stable.gpus_used))
        fresh_share.append(_without_stability(previous, fresh) / max(1, fresh.gpus_used))
    print(
        f"\nstability: {STABILITY_DEMANDS} random demands, each profile changed by up to 10%, "
        f"fleet = the larger optimum + {spare:.0%} unused GPUs:"
    )
    print(f"  same GPU count as without stability: {same_count}/{STABILITY_DEMANDS}")
    _share("with the layouts in place", kept_share)
    _share("without (plan from scratch)", fresh_share)
    print(f"  time with the layouts in place (two solves): {_ms(walls)}")


def _share(label: str, shares: list[Any]) -> None:
    print(
        f"  GPUs re-partitioned {label}: median {statistics.median(shares) * 100:.1f}%, "
        f"p95 {_percentile(shares, 0.95) * 100:.1f}%, worst {max(shares) * 100:.1f}%"
    )


if __name__ == "__main__":
    main()
