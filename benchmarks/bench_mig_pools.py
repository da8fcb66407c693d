"""Benchmark layouts from demand: per-pool layouts on identical nodes, proven optimal, time, stability.

Run: ``python -m benchmarks.bench_mig_pools`` (``make bench``). Seeded random fleets of 1 to 6 pools
(H100-80GB and A100-80GB; 1 to 40 nodes of 1 to 8 GPUs; bare-metal nodes are pools of one) and random
demands that fit them. Prints:

- optimal plans and GPUs used against the solver's proven bound (target: always optimal);
- wall time per plan after the solver import (target as for the fleet planner: p95 under 100 ms);
- stability: after a change of up to 10% per profile, the GPUs re-partitioned when the recorded plan is
  given, against planning from scratch (both at the same, optimal, GPU count).
"""

from __future__ import annotations

import os
import random
import statistics
import time

from components.catalog.mig import MigPlanError, PoolShape, PoolsPlan, mig_gpu, plan_pools

SEED = 16
FLEETS = 120
MODELS = ("H100-80GB", "A100-80GB")


def _fleet(rng: random.Random, model: str) -> list[PoolShape]:
    return [
        PoolShape(f"pool-{index}", model, rng.choice([1, 1, 2, 4, 10, 40]), rng.choice([1, 2, 4, 8]))
        for index in range(rng.randint(1, 6))
    ]


def _demand(rng: random.Random, model: str, pools: list[PoolShape]) -> dict[str, int]:
    gpus = sum(p.nodes * p.gpus_per_node for p in pools)
    names = [p.name for p in mig_gpu(model).profiles]
    chosen = rng.sample(names, rng.randint(1, 3))
    slices = max(1, int(gpus * 7 * rng.uniform(0.1, 0.6)))  # room to spare: uniform nodes need some
    weights = [rng.random() for _ in chosen]
    sizes = {p.name: p.compute_slices for p in mig_gpu(model).profiles}
    return {n: max(1, round(slices * w / sum(weights) / sizes[n])) for n, w in zip(chosen, weights, strict=True)}


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return (
        f"median {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, worst {max(values) * 1000:.1f} ms"
    )


def _recorded(pools: list[PoolShape], plan: PoolsPlan) -> list[PoolShape]:
    return [
        PoolShape(p.name, p.model, p.nodes, p.gpus_per_node, planned.gpu_layouts)
        for p, planned in zip(pools, plan.pools, strict=True)
    ]


def main() -> None:
    rng = random.Random(SEED)
    started = time.perf_counter()
    plan_pools({"1g.10gb": 1}, [PoolShape("warm-up", "H100-80GB", 1, 1)])
    print(f"solver import and first plan: {(time.perf_counter() - started) * 1000:.0f} ms")
    print(f"load average (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    walls: list[float] = []
    optimal = at_bound = refused = 0
    kept: list[float] = []
    fresh: list[float] = []
    same_count = 0
    for _ in range(FLEETS):
        model = rng.choice(MODELS)
        pools = _fleet(rng, model)
        demand = _demand(rng, model, pools)
        wall = time.perf_counter()
        try:
            first = plan_pools(demand, pools)
        except MigPlanError:
            refused += 1
            continue
        walls.append(time.perf_counter() - wall)
        optimal += first.optimal
        at_bound += first.gpus_used == first.lower_bound
        changed = {n: max(1, round(c * rng.uniform(0.9, 1.1))) for n, c in demand.items()}
        try:
            stable = plan_pools(changed, _recorded(pools, first))
            scratch = plan_pools(changed, pools)
        except MigPlanError:
            continue
        same_count += stable.gpus_used == scratch.gpus_used
        kept.append(stable.repartitioned / max(1, stable.gpus_used))
        # From scratch, every GPU whose layout differs from the first plan's is re-partitioned.
        moved = sum(
            p.nodes * sum(a != b for a, b in zip(before.gpu_layouts, after.gpu_layouts, strict=True))
            for p, before, after in zip(pools, first.pools, scratch.pools, strict=True)
        )
        fresh.append(moved / max(1, scratch.gpus_used))
    planned = len(walls)
    print(f"\n{FLEETS} random fleets of 1-6 pools (seed {SEED}); {planned} planned, {refused} refused as too small:")
    print(f"  optimal {optimal}/{planned}, GPUs used = proven bound {at_bound}/{planned}")
    print(f"  wall: {_ms(walls)}")
    print(f"\nstability after a change of up to 10% per profile ({len(kept)} fleets):")
    print(f"  same GPU count as from scratch: {same_count}/{len(kept)}")
    for label, shares in (("with the recorded plan", kept), ("from scratch", fresh)):
        ordered = sorted(shares)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
        print(
            f"  GPUs re-partitioned {label}: median {statistics.median(shares) * 100:.1f}%, "
            f"p95 {p95 * 100:.1f}%, worst {max(shares) * 100:.1f}%"
        )


if __name__ == "__main__":
    main()
