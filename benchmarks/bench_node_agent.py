"""Soak of the node agent: the real controller and executors, 200 nodes, a budget of 10, faults at every call.

Each run is the simulated world of the fault tests (``tests/node_agent/sim``: an API server that answers 409
to stale writes, deletes pods gracefully and blocks evictions with PDBs; mig-manager, the operator's driver,
the device plugin, kubelet, the scheduler, ReplicaSets and reboots as their sources say) with every API call
of the controller and the executors failing with probability ``p`` (503, a timeout before or after the write,
a 409). Even seeds hand drivers over, odd seeds change MIG layouts. One line per fault rate:

    rollout: nodes=200 budget=10 fault_rate=<p> seeds=50 waves=<median> max_in_maintenance=<n>
             invariant_violations=<n> stuck_without_reason=<n>

``waves``: the most successive holders of one slot (ceil(200/10) = 20 when no slot is lost);
``max_in_maintenance``: the most nodes in maintenance at once over every seed (the budget: 10);
``invariant_violations``: I1-I6 over every seed (0); ``stuck_without_reason``: nodes that end neither done nor
with a reason, over every seed (0). A second line gives the simulated and the wall time.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from tests.node_agent.sim.world import START, World

NODES = 200
BUDGET = 10
SEEDS = int(os.environ.get("NODE_AGENT_SOAK_SEEDS", "50"))
RATES = (0.01, 0.1)


def soak(job: tuple[float, int]) -> tuple[int, int, int, int, int, float, int]:
    """One seed: ``(waves, max_in_maintenance, violations, stuck, not_done, sim_minutes, faults)``."""
    rate, seed = job
    world = World(
        nodes=NODES, flow="driver" if seed % 2 == 0 else "mig", budget=str(BUDGET), seed=seed, fault_rate=rate
    )
    world.settle(limit=12 * 3600.0)
    metrics = world.metrics
    violations = sum(metrics.violations.values()) + len(world.api.forbidden)
    not_done = sum(1 for state in world.states().values() if state != "done")
    return (
        metrics.waves,
        metrics.max_in_maintenance,
        violations,
        len(world.stuck_without_reason()),
        not_done,
        (world.t - START) / 60.0,
        world.faults.injected,
    )


def main() -> int:
    ok = True
    workers = max(1, min(2, os.cpu_count() or 1))
    for rate in RATES:
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(soak, [(rate, seed) for seed in range(SEEDS)]))
        waves = int(statistics.median(r[0] for r in results))
        most = max(r[1] for r in results)
        violations = sum(r[2] for r in results)
        stuck = sum(r[3] for r in results)
        not_done = sum(r[4] for r in results)
        print(
            f"rollout: nodes={NODES} budget={BUDGET} fault_rate={rate} seeds={SEEDS} waves={waves} "
            f"max_in_maintenance={most} invariant_violations={violations} stuck_without_reason={stuck}"
        )
        print(
            f"rollout-detail: fault_rate={rate} faults_injected={sum(r[6] for r in results)} "
            f"nodes_not_done={not_done} sim_minutes_median={statistics.median(r[5] for r in results):.0f} "
            f"wall_seconds={time.perf_counter() - started:.0f}"
        )
        ok = ok and most <= BUDGET and violations == 0 and stuck == 0 and not_done == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
