"""A fake host, an accelerated clock and a cluster of agents for the fault tests and the fleet simulation.

The cluster runs the real executor and state machine for every node against :mod:`tests.node_agent.fake_api`,
and plays the other actors between rounds the way they behave: the GPU Operator's driver becomes ready
on a node handed over to it, mig-manager moves ``nvidia.com/mig.config.state`` through ``pending`` to
``success`` (or wedges, or fails, when a test says so), kubelet runs the smoke pods, a reboot gives a
new boot id and restarts the agent pod. After every write it counts the nodes in maintenance, so a test
(or the benchmark) can check that the budget was never exceeded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    LEASE_POOL_LABEL,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_EFFECT,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_LABEL,
    POOL_LABEL,
    REASON_LABEL,
    RECORD_ANNOTATION,
    SLOT_STATES,
    STATE_LABEL,
    TOUCHED_STATES,
    WAIT_REASONS,
    State,
)
from components.node_agent.agent.executor import Agent
from components.node_agent.agent.host import HostFacts
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.machine import Install, Settings
from tests.node_agent.fake_api import DirectKube, FakeApiServer, FakeKubernetes

NAMESPACE = "gpu-platform-system"
START = 1_800_000_000.0


class FakeClock:
    """Accelerated time: ``sleep`` advances it; nothing waits."""

    def __init__(self, start: float = START) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    advance = sleep


@dataclass
class FakeHost:
    """A GPU host: a .run driver by default, with knobs for every way a host can go wrong."""

    clock: FakeClock
    install: str = Install.RUN
    detail: str = ""
    uninstaller: bool = True
    modules_loaded: bool = True
    files: bool = True
    boot_id: str = "boot-1"
    driver_ready: bool = False
    marker: dict[str, Any] | None = None
    disk_full: bool = False
    uninstall_rc: int = 0
    uninstall_seconds: float = 120.0
    uninstall_leaves_files: bool = False
    modules_busy: bool = False  #: the module cannot be unloaded until a reboot
    module_stuck: bool = False  #: the module is loaded again after every reboot
    reboot_requested: bool = False
    reboot_sentinel: bool = False
    uninstall_runs: int = 0
    heartbeats: int = 0
    during_uninstall: Callable[[], None] | None = None

    def inspect(self) -> HostFacts:
        return HostFacts(
            install=self.install if (self.files or self.install == Install.EXEC_ERROR) else Install.NONE,
            detail=self.detail,
            uninstaller=self.uninstaller,
            modules_loaded=self.modules_loaded,
            files_remain=self.files,
            boot_id=self.boot_id,
            driver_ready=self.driver_ready,
        )

    def uninstall(self, timeout: float, heartbeat: Callable[[], None]) -> int:
        self.uninstall_runs += 1
        elapsed = 0.0
        while elapsed < self.uninstall_seconds:
            self.clock.advance(10.0)
            elapsed += 10.0
            heartbeat()
            self.heartbeats += 1
            if self.during_uninstall is not None:
                self.during_uninstall()
        if self.uninstall_rc == 0:
            self.files = self.uninstall_leaves_files
            self.uninstaller = False
        return self.uninstall_rc

    def unload_modules(self) -> None:
        if not (self.modules_busy or self.module_stuck):
            self.modules_loaded = False

    def reboot(self, allowed: bool) -> None:
        if allowed:
            self.reboot_requested = True
        else:
            self.reboot_sentinel = True

    def read_marker(self) -> dict[str, Any] | None:
        return json.loads(json.dumps(self.marker)) if self.marker is not None else None

    def write_marker(self, data: dict[str, Any]) -> None:
        if self.disk_full:
            raise OSError(28, "No space left on device")
        self.marker = json.loads(json.dumps(data))

    def marker_writable(self) -> bool:
        return not self.disk_full


@dataclass
class Stats:
    max_in_maintenance: int = 0
    max_touched: int = 0
    double_holds: int = 0
    over_budget: int = 0


@dataclass
class Cluster:
    """``count`` GPU nodes of one pool with ``budget`` slots; ``http`` True: the real client over real HTTP."""

    count: int = 3
    budget: int = 1
    flow: str = "driver"  #: "driver" (hand-over) or "mig" (layout change)
    http: bool = True
    settings: Settings | None = None
    pool: str = "gpu"
    clock: FakeClock = field(default_factory=FakeClock)
    store: FakeKubernetes = field(default_factory=FakeKubernetes)
    hosts: dict[str, FakeHost] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    alive: dict[str, bool] = field(default_factory=dict)
    stats: Stats = field(default_factory=Stats)
    driver_delay: float = 60.0
    mig_delay: float = 60.0
    smoke_delay: float = 30.0
    reboot_delay: float = 90.0
    mig_outcome: dict[str, str] = field(default_factory=dict)  #: node -> "failed" | "wedged" | "fail-once"
    smoke_fails: set[str] = field(default_factory=set)
    reboot_fails: set[str] = field(default_factory=set)
    _since: dict[tuple[str, str], float] = field(default_factory=dict)
    _states: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Every state change seen on a Node.
    transitions: set[tuple[str, str]] = field(default_factory=set)
    #: Every slot Lease's successive holders (the waves of the rollout).
    holders: dict[str, list[str]] = field(default_factory=dict)
    _server: FakeApiServer | None = None

    def __post_init__(self) -> None:
        if self.settings is None:
            self.settings = Settings(
                pool_budgets={self.pool: self.budget},
                poll_seconds=10.0,
                lease_ttl_seconds=300.0,
                mig_resources={self.pool: ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")},
            )
        if self.http:
            self._server = FakeApiServer(self.store).__enter__()
        self.store.on_write = self._count
        for index in range(self.count):
            name = f"node-{index:03d}"
            labels = {POOL_LABEL: self.pool, "nvidia.com/gpu.deploy.driver": "pre-installed"}
            taints: list[dict[str, str]] = []
            host = FakeHost(self.clock)
            if self.flow == "driver":
                labels[HOST_DRIVER_REMOVAL_LABEL] = HOST_DRIVER_REMOVAL_ENABLED
            else:
                labels.update({"nvidia.com/gpu.deploy.driver": "true", MIG_LABEL: "all-disabled"})
                labels.update({MIG_STATE_LABEL: "success", MIG_DESIRED_LABEL: "all-1g.10gb"})
                host = FakeHost(self.clock, install=Install.NONE, files=False, modules_loaded=True, driver_ready=True)
            self.store.add_node(name, labels, taints)
            self.store.add_pod("team", f"train-{name}", name)
            self.store.add_pod("gpu-operator", f"plugin-{name}", name, daemonset=True)
            self.hosts[name] = host
            self.start(name)

    def close(self) -> None:
        if self._server is not None:
            self._server.__exit__()
            self._server = None

    def client(self) -> Kube:
        if self._server is not None:
            return Kube(self._server.url, "test-token", timeout=0.2)
        return DirectKube(self.store)

    def start(self, name: str) -> Agent:
        """Start (or restart) the agent pod on ``name``: a fresh process, nothing remembered but node and host."""
        assert self.settings is not None
        agent = Agent(self.client(), self.hosts[name], self.clock, name, NAMESPACE, self.settings)
        self.agents[name] = agent
        self.alive[name] = True
        return agent

    def kill(self, name: str) -> None:
        self.alive[name] = False

    # -- observing the cluster ----------------------------------------------------------------------
    def node(self, name: str) -> dict[str, Any]:
        return self.store.nodes[name]

    def state(self, name: str) -> str:
        node = self.store.nodes.get(name)
        if node is None:
            marker = self.hosts[name].marker or {}
            return str(marker.get("state", ""))
        return str(node["metadata"]["labels"].get(STATE_LABEL, ""))

    def reason(self, name: str) -> str:
        node = self.store.nodes.get(name)
        if node is None:
            return str((self.hosts[name].marker or {}).get("reason", ""))
        return str(node["metadata"]["labels"].get(REASON_LABEL, ""))

    def cordoned(self, name: str) -> bool:
        node = self.store.nodes.get(name)
        return bool(node and node["spec"].get("unschedulable"))

    def _count(self, method: str, path: str) -> None:
        if "/leases" in path:
            for lease in self.store.leases.values():
                chain = self.holders.setdefault(str(lease["metadata"]["name"]), [])
                holder = str(lease["spec"].get("holderIdentity", ""))
                if not chain or chain[-1] != holder:
                    chain.append(holder)
        elif "/nodes/" in path:
            name = path.rsplit("/", 1)[-1]
            node = self.store.nodes.get(name)
            labels = node["metadata"]["labels"] if node else {}
            before = self._states.get(name, ("", ""))[0]
            after = labels.get(STATE_LABEL, "")
            if before and after and before != after:
                self.transitions.add((before, after))
            self._states[name] = (after, labels.get(REASON_LABEL, ""))
        else:
            return
        holders = {lease["spec"].get("holderIdentity") for lease in self.store.leases.values()}
        in_maintenance = 0
        touched = 0
        for name, (state, reason) in self._states.items():
            if state in SLOT_STATES:
                in_maintenance += 1
            if state in TOUCHED_STATES and reason != "budget-full":
                touched += 1
                if name not in holders:
                    self.stats.double_holds += 1  # touched without holding a slot: someone else could take it
        leases = [
            lease
            for lease in self.store.leases.values()
            if lease["metadata"]["labels"].get(LEASE_POOL_LABEL) == self.pool
        ]
        if len(leases) > self.budget or touched > self.budget:
            self.stats.over_budget += 1
        self.stats.max_in_maintenance = max(self.stats.max_in_maintenance, in_maintenance)
        self.stats.max_touched = max(self.stats.max_touched, touched)

    # -- the other actors ---------------------------------------------------------------------------
    def _after(self, key: tuple[str, str], delay: float) -> bool:
        start = self._since.setdefault(key, self.clock.now())
        return self.clock.now() - start >= delay

    def controllers(self) -> None:
        now = self.clock.now()
        for name, host in self.hosts.items():
            node = self.store.nodes.get(name)
            if host.reboot_requested and self._after((name, "reboot"), self.reboot_delay):
                self._since.pop((name, "reboot"), None)
                host.reboot_requested = False
                if name not in self.reboot_fails:
                    host.boot_id = f"boot-{now:.0f}"
                    host.modules_loaded = host.module_stuck
                    host.modules_busy = False
                    self.start(name)
            if node is None:
                continue
            labels = node["metadata"]["labels"]
            handed = labels.get("nvidia.com/gpu.deploy.driver") == "true" and host.install == Install.RUN
            if (
                handed
                and not host.files
                and not host.modules_loaded
                and self._after((name, "driver"), self.driver_delay)
            ):
                host.driver_ready = True
            self._mig_manager(name, labels)
            for _, pod in self.store.pods_on(name):
                if pod["status"]["phase"] != "Pending":
                    continue
                if self._after((name, "smoke-" + pod["metadata"]["name"]), self.smoke_delay):
                    pod["status"]["phase"] = "Failed" if name in self.smoke_fails else "Succeeded"

    def _mig_manager(self, name: str, labels: dict[str, str]) -> None:
        wanted = labels.get(MIG_LABEL, "")
        key = (name, "mig:" + wanted)
        if labels.get(MIG_STATE_LABEL) == "success" and labels.get("_applied") == wanted:
            return
        if labels.get("_applied") != wanted:
            with self.store.lock:
                labels["_applied"] = wanted
                labels[MIG_STATE_LABEL] = "pending"
            self._since[key] = self.clock.now()
            return
        outcome = self.mig_outcome.get(name, "")
        if self.clock.now() - self._since.get(key, self.clock.now()) < self.mig_delay:
            return
        if outcome == "failed" or (outcome == "fail-once" and wanted != "all-disabled"):
            labels[MIG_STATE_LABEL] = "failed"
            if outcome == "fail-once":
                self.mig_outcome[name] = "fail-first"
        elif outcome == "fail-first" and wanted != "all-disabled":
            labels[MIG_STATE_LABEL] = "success"
        elif outcome in ("wedged", "wedged-always") and wanted != "all-disabled":
            if outcome == "wedged":
                self.mig_outcome[name] = "unwedged"
            return  # stays pending
        else:
            labels[MIG_STATE_LABEL] = "success"

    # -- running --------------------------------------------------------------------------------------
    def round(self) -> None:
        now = self.clock.now()
        for name in sorted(self.agents):
            agent = self.agents[name]
            if self.alive.get(name) and not agent.stop.is_set() and agent.next_at <= now:
                agent.tick()
        self.controllers()
        assert self.settings is not None
        self.clock.advance(self.settings.poll_seconds)

    def run(self, rounds: int = 400, until: Callable[[], bool] | None = None) -> int:
        done = until or self.settled
        for count in range(rounds):
            if done():
                return count
            self.round()
        return rounds

    def settled(self) -> bool:
        """Every node done, refused, failed, or waiting on a halted rollout."""
        for name in self.hosts:
            state = self.state(name)
            if state in (State.DONE, State.REFUSED, State.FAILED):
                continue
            if state == State.WAITING_SLOT and self.reason(name) == "rollout-halted":
                continue
            if state == State.IDLE and not self._has_work(name):
                continue
            return False
        return True

    def _has_work(self, name: str) -> bool:
        node = self.store.nodes.get(name)
        if node is None:
            return False
        labels = node["metadata"]["labels"]
        if labels.get(MIG_DESIRED_LABEL) and labels.get(MIG_DESIRED_LABEL) != labels.get(MIG_LABEL):
            return True
        return labels.get(HOST_DRIVER_REMOVAL_LABEL) == HOST_DRIVER_REMOVAL_ENABLED and self.hosts[name].files

    def stuck_without_reason(self) -> list[str]:
        """Nodes cordoned but neither failed nor waiting with a reason (the one outcome never allowed)."""
        stuck = []
        for name, node in self.store.nodes.items():
            if not node["spec"].get("unschedulable"):
                continue
            state = node["metadata"]["labels"].get(STATE_LABEL, "")
            reason = node["metadata"]["labels"].get(REASON_LABEL, "")
            if state == State.FAILED and reason:
                continue
            if reason in WAIT_REASONS and state not in (State.DONE, State.IDLE):
                continue
            stuck.append(f"{name}: state={state or '-'} reason={reason or '-'}")
        return stuck

    def record(self, name: str) -> dict[str, Any]:
        return dict(json.loads(self.node(name)["metadata"]["annotations"].get(RECORD_ANNOTATION, "{}")))


def mig_taint() -> dict[str, str]:
    return {"key": MIG_PENDING_TAINT_KEY, "value": "true", "effect": MIG_PENDING_TAINT_EFFECT}
