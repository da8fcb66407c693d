"""Fleet simulation of the node agent: 200 nodes, a budget of 10, some nodes failing.

The real state machine and executor of every node run against the fake Kubernetes API of the tests
(in-process transport) with an accelerated clock; the other actors (the operator's driver, reboots,
mig-manager, kubelet) behave as in the fault tests. One line per scenario:

    rollout: nodes=200 budget=10 waves=<n> max_in_maintenance=<n> double_holds=<n> stuck_without_reason=<n> sim_seconds=<n>

``waves`` is the largest number of successive holders of one slot Lease (a pool of N nodes with a budget
of B needs ceil(N/B)); the target is that, +1 where a failure halts the rollout, with
max_in_maintenance <= budget, double_holds = 0 and stuck_without_reason = 0. ``max_in_maintenance`` is
the most nodes at once whose Node says they hold a slot (cordoned ... smoke-testing), a node whose agent
died counted too.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

from components.catalog.node_agent import State
from components.node_agent.agent.machine import Install
from tests.node_agent.harness import START, Cluster

NODES = 200
BUDGET = 10


def _pool(flow: str = "driver") -> Cluster:
    cluster = Cluster(count=NODES, budget=BUDGET, flow=flow, http=False)
    for host in cluster.hosts.values():
        host.uninstall_seconds = 0.0  # the uninstall is instant here; reboots and the driver take the time
        host.modules_busy = True
    return cluster


def healthy() -> tuple[Cluster, int]:
    return _pool(), 0


def some_failing() -> tuple[Cluster, int]:
    cluster = _pool()
    for index in range(0, NODES, 40):  # five package-managed hosts: refused, never cordoned
        cluster.hosts[f"node-{index:03d}"].install = Install.PACKAGE
    for index in range(7, NODES, 50):  # four whose GPU pods a PDB protects forever: they fail untouched
        cluster.store.pdb_blocked.add(("team", f"train-node-{index:03d}"))
    return cluster, 0


def failure_halts() -> tuple[Cluster, int]:
    """One node's uninstall fails after it touched the node: the pool halts until the operator clears it."""
    cluster = _pool()
    cluster.hosts["node-055"].uninstall_rc = 1
    return cluster, 1


def holder_death() -> tuple[Cluster, int]:
    """One holder dies before touching (reclaimed after the TTL), one after (halts until cleared)."""
    cluster = _pool()
    cluster.store.pdb_blocked.add(("team", "train-node-033"))  # keeps it in evicting, untouched, until killed
    return cluster, 1


def _operator(cluster: Cluster, scenario: str) -> Callable[[], None]:
    """What an operator does in the scenario: clears a halted slot after an hour, as docs/node-agent.md says."""
    halted_at: dict[str, float] = {}
    killed: set[str] = set()

    def act() -> None:
        now = cluster.clock.now()
        if scenario == "holder-death":
            if not {"node-033", "node-033-restarted"} & killed and cluster.state("node-033") == State.EVICTING:
                cluster.kill("node-033")
                killed.add("node-033")
                cluster.store.pdb_blocked.clear()
            holders = {lease["spec"].get("holderIdentity") for lease in cluster.store.leases.values()}
            if "node-033" in killed and "node-033" not in holders:
                cluster.start("node-033")  # the DaemonSet's next pod, once its expired slot was reclaimed
                killed.discard("node-033")
                killed.add("node-033-restarted")
            if not {"node-121", "node-121-restarted"} & killed and cluster.state("node-121") == State.VERIFYING:
                cluster.kill("node-121")
                killed.add("node-121")
        for (namespace, name), lease in list(cluster.store.leases.items()):
            notes = lease["metadata"].get("annotations") or {}
            holder = lease["spec"].get("holderIdentity", "")
            stale = holder in killed and "gpu-platform.io/node-agent.touched" in notes
            if "gpu-platform.io/node-agent.failed" in notes or stale:
                since = halted_at.setdefault(name, now)
                if now - since >= 3600:
                    del cluster.store.leases[(namespace, name)]  # kubectl -n NS delete lease NAME
                    if holder in killed:
                        cluster.start(holder)  # fixed and restarted by the operator
                        killed.discard(holder)
                        killed.add(f"{holder}-restarted")

    return act


def run(scenario: str, build: Callable[[], tuple[Cluster, int]]) -> bool:
    cluster, halts = build()
    operator = _operator(cluster, scenario)
    for _ in range(20_000):
        if cluster.settled() and not any(name for name in cluster.hosts if cluster.state(name) == State.WAITING_SLOT):
            break
        cluster.round()
        operator()
    waves = max((len(chain) for chain in cluster.holders.values()), default=0)
    stuck = len(cluster.stuck_without_reason())
    sim_seconds = int(cluster.clock.now() - START)
    print(
        f"rollout: nodes={NODES} budget={BUDGET} waves={waves} max_in_maintenance={cluster.stats.max_in_maintenance} "
        f"double_holds={cluster.stats.double_holds} stuck_without_reason={stuck} sim_seconds={sim_seconds}"
    )
    target = math.ceil(NODES / BUDGET) + halts
    return (
        waves <= target
        and cluster.stats.max_in_maintenance <= BUDGET
        and cluster.stats.double_holds == 0
        and stuck == 0
    )


def main() -> int:
    scenarios = {
        "healthy": healthy,
        "some-failing": some_failing,
        "failure-halts": failure_halts,
        "holder-death": holder_death,
    }
    results = [run(name, build) for name, build in scenarios.items()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
