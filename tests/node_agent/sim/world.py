"""The world: a discrete-event simulation of a GPU pool, the real controller and executors, and the invariants.

The shipped controller (``Controller.reconcile``) and executors (``Executor.once``) run unchanged against the
simulated API server; the other actors (``actors.py``) and the hosts (``host.py``) behave as their sources say.
The clock is simulated: a test of hours of rollout runs in milliseconds. After every write the invariants are
checked, and each violation is recorded with its invariant's name:

- I1 never more than the budget in maintenance (checked whenever a node enters maintenance);
- I2 no node cordoned by the controller without a state and a reason; no finished node holding a slot;
- I3 no driver or MIG change while a GPU pod runs on the node;
- I4 a holder that touched its node is never taken over (its Lease is never deleted or given to another);
- I5 every flow ends done, or failed/waiting with a reason (checked at the end);
- I6 a failure halts the pool (no node enters maintenance while a failed Lease of its pool exists);
- I7 one budget per pool, shared with the GPU Operator's upgrade controller: whenever the controller or the
  operator takes a node away (cordon, or the operator's upgrade states), the pool's unavailable nodes (held by
  either, cordoned, or down) are no more than the budget; and the operator never deletes the controller's pods;
- I8 no write without leadership: every Node or node-Lease write of a controller replica is made while that
  replica holds the leader Lease;
- I9 the CUDA proof of a node takes a slot of its pool's budget: it starts (state ``proving``) only within the budget,
  never in a halted pool and never with a cordon, and its smoke pods are created only on a node in ``proving``.

With ``declarations`` in the settings (the continuous proof), the world also plays the kubelet's Ready condition
(True while the node is up) and GPU Feature Discovery's driver version label (written when the operator's driver
pod turns Ready): the evidence the proof reads.
"""

from __future__ import annotations

import functools
import heapq
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import GPU_NODE_LABEL, HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    ANY_STATE_FAILURES,
    CONTROLLER_LEASE,
    GPU_DEPLOY_DRIVER_LABEL,
    LEASE_FAILED_ANNOTATION,
    LEASE_NODE_ANNOTATION,
    LEASE_POOL_LABEL,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_STATE_LABEL,
    MIG_STATE_SUCCESS,
    NODE_LEASE_PREFIX,
    OPERAND_DEPLOY_LABELS,
    POOL_LABEL,
    REASON_LABEL,
    REQUEST_ANNOTATION,
    SETTINGS_CONFIG_MAP,
    SETTINGS_KEY,
    SLOT_STATES,
    STATE_LABEL,
    TOUCHED_STATES,
    TRANSITIONS,
    Reason,
    State,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.reconcile import Controller
from components.node_agent.agent.executor.run import Executor
from components.node_agent.agent.settings import Settings
from tests.node_agent.sim.actors import (
    LAYOUTS,
    DaemonSets,
    DevicePlugin,
    Kubelet,
    MigManager,
    OperatorDriver,
    ReplicaSet,
    ReplicaSets,
    Scheduler,
    UpgradeController,
)
from tests.node_agent.sim.api import Client, Faults, SimApi, clone
from tests.node_agent.sim.host import SimHost

NAMESPACE = "gpu-platform-system"
POOL = "a100"
#: The driver and MIG layout the simulated pool declares where a test proves it (``Settings.declarations``).
DECLARED_DRIVER = "580.95.05"
DECLARED_LAYOUT = "all-1g.10gb"


def declared(version: str = DECLARED_DRIVER, layout: str = DECLARED_LAYOUT) -> dict[str, dict[str, Any]]:
    """The pool's declaration as the plan hands it to the controller: the operator's driver of ``version`` (its
    image, the ClusterPolicy's owner) and the MIG ``layout`` with the resources a node then advertises."""
    return {
        POOL: {
            "driver_version": version,
            "driver_image": f"nvcr.io/nvidia/driver:{version}",
            "owner": OperatorDriver.OWNER,
            "mig_config": layout,
            "mig_resources": LAYOUTS[layout],
        }
    }


START = 1_800_000_000.0
ALLOWED = {(t.source.value, t.target.value) for t in TRANSITIONS}
#: Every (source, target) move any world of this process saw the controller make (the table's coverage test).
OBSERVED: set[tuple[str, str]] = set()


@dataclass
class Timing:
    """Seconds. Defaults from the sources: kubelet's default grace 30 s, mig-manager's checks a few seconds."""

    reconcile: float = 10.0
    executor_poll: float = 5.0
    pod_start: float = 2.0
    pod_stop: float = 30.0
    refill: float = 1.0
    mig_checks: tuple[float, float] = (3.0, 12.0)
    mig_apply: tuple[float, float] = (20.0, 60.0)
    plugin: float = 8.0
    uninstall: float = 40.0
    reboot_down: float = 20.0
    boot: float = 120.0


@dataclass
class Metrics:
    violations: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    max_in_maintenance: int = 0
    max_unavailable: int = 0  #: the most nodes of a pool away at once, by any actor (I7)
    admissions: int = 0
    proofs: int = 0  #: CUDA proofs started (moves to ``proving``)
    admitting_passes: int = 0
    transitions: set[tuple[str, str]] = field(default_factory=set)
    #: Virtual slots: an admitted node takes the lowest free index, frees it when it leaves maintenance.
    slots: dict[str, int] = field(default_factory=dict)
    holders_per_slot: Counter[int] = field(default_factory=Counter)

    @property
    def waves(self) -> int:
        """The most successive holders of one slot (ceil(nodes / budget) when nothing is lost)."""
        return max(self.holders_per_slot.values(), default=0)

    def violate(self, invariant: str, text: str) -> None:
        self.violations[invariant] += 1
        if len(self.details) < 50:
            self.details.append(f"{invariant}: {text}")


class World:
    """A pool of GPU nodes, the controller, one executor per node, and the other actors."""

    def __init__(
        self,
        nodes: int = 2,
        flow: str = "driver",
        budget: str = "1",
        seed: int = 0,
        fault_rate: float = 0.0,
        script: dict[int, str] | None = None,
        pods_per_node: int = 1,
        start_layout: str = "all-disabled",
        target_layout: str = "all-1g.10gb",
        leftover_state: str = MIG_STATE_SUCCESS,
        allow_reboot: bool = True,
        settings: dict[str, Any] | None = None,
        fault_callers: tuple[str, ...] = ("controller", "executor"),
        driver_mode: str = "nvidiadriver",
        operator_budget: int = 1,
        controller_skew: float = 0.0,
    ) -> None:
        self.t = START
        self.rng = random.Random(seed)
        self.queue: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.timing = Timing()
        self.metrics = Metrics()
        self.faults = Faults(
            rate=fault_rate, rng=random.Random(seed + 1), script=dict(script or {}), callers=fault_callers
        )
        self.api = SimApi(lambda: self.t, self.faults)
        self.flow = flow
        self.target = target_layout
        self.allow_reboot = allow_reboot
        self.hosts: dict[str, SimHost] = {}
        self.down: set[str] = set()
        self.executors: dict[str, Executor] = {}
        self.executor_pending: set[str] = set()
        self.controller_down_until = 0.0
        self.smoke_failing: set[str] = set()
        self.cordoned_by_controller: set[str] = set()
        self.kubelet = Kubelet(self)
        self.scheduler = Scheduler(self)
        self.replica_sets = ReplicaSets(self)
        self.daemon_sets = DaemonSets(self)
        self.driver = OperatorDriver(self, driver_mode)
        self.upgrades = UpgradeController(self, max_unavailable=operator_budget)
        self.mig = MigManager(self)
        self.plugin = DevicePlugin(self)
        self.api.watchers.append(self._watch)
        #: The continuous proof runs: the kubelet's Ready condition and GFD's version label are played too.
        self.declared = bool((settings or {}).get("declarations"))
        base = {
            "max_unavailable": budget,
            "mig_layout": flow == "mig",
            "operator_namespace": OperatorDriver.NAMESPACE,
            "mig_resources": {POOL: LAYOUTS[target_layout]} if flow == "mig" else {},
        }
        base.update(settings or {})
        self.api.put(
            "configmaps",
            f"{NAMESPACE}/{SETTINGS_CONFIG_MAP}",
            {
                "metadata": {"name": SETTINGS_CONFIG_MAP, "namespace": NAMESPACE},
                "data": {SETTINGS_KEY: json.dumps(base)},
            },
        )
        self.driver.install()
        self.leftover_state = leftover_state
        self.start_layout = start_layout
        for index in range(nodes):
            self.add_node(f"node-{index:03d}")
        for index in range(nodes):
            name = f"node-{index:03d}"
            if pods_per_node:
                resource = next(iter(LAYOUTS[start_layout])) if flow == "mig" else "nvidia.com/gpu"
                self.replica_sets.add(ReplicaSet("team", f"train-{name}", pods_per_node, POOL, resource), node=name)
        #: Each replica's clock runs ``skew`` seconds from the API server's (``self.t``, its timestamps).
        self.controller = Controller(
            Client(self.api, "controller", NAMESPACE, "controller-0"),
            NAMESPACE,
            "controller-0",
            lambda: self.t + controller_skew,
        )
        self.replicas: list[Controller] = [self.controller]
        #: identity -> simulated time until which the replica is paused (a GC pause, a frozen node).
        self.paused: dict[str, float] = {}
        self.at(0.5, self._reconcile)
        self.upgrades.start()  # autoUpgrade defaults to true, and per-pool NVIDIADrivers refuse false

    # -- building --------------------------------------------------------------------------------------
    def add_node(self, name: str) -> None:
        """A node as its group template makes it (a Yandex group recreates nodes from the same template)."""
        labels = {GPU_NODE_LABEL: "true", POOL_LABEL: POOL, **{key: "true" for key in OPERAND_DEPLOY_LABELS}}
        if self.driver.mode == "nvidiadriver":  # AssignOwners: the one NVIDIADriver selecting the pool's nodes
            labels[operator.DRIVER_OWNER_LABEL] = OperatorDriver.OWNER
        host = SimHost(name, install="run" if self.flow == "driver" else "none")
        if self.flow == "driver":
            labels[HOST_DRIVER_REMOVAL_LABEL] = HOST_DRIVER_REMOVAL_ENABLED
            labels[GPU_DEPLOY_DRIVER_LABEL] = "pre-installed"
            allocatable = {"cpu": "64", "nvidia.com/gpu": "8"}
        else:
            host.operator_modules = True
            host.mig_layout = self.start_layout
            labels[GPU_DEPLOY_DRIVER_LABEL] = "true"
            labels[MIG_LABEL] = self.start_layout
            labels[MIG_DESIRED_LABEL] = self.target
            if self.leftover_state:
                labels[MIG_STATE_LABEL] = self.leftover_state
            allocatable = {"cpu": "64", **{k: str(v) for k, v in LAYOUTS[self.start_layout].items()}}
        host.gpu_busy = functools.partial(self._busy, name)
        host.on_reboot = functools.partial(self.at, 1.0, functools.partial(self.reboot, name))
        self.hosts[name] = host
        status: dict[str, Any] = {"allocatable": allocatable}
        if self.declared:
            status["conditions"] = [{"type": "Ready", "status": "True"}]
            status["nodeInfo"] = {"bootID": self.boot_id(name)}
        self.api.put("nodes", name, {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": status})
        self.executors[name] = Executor(
            Client(self.api, f"executor:{name}", NAMESPACE),
            host,
            name,
            allow_reboot=self.allow_reboot,
        )
        self.daemon_sets.node_up(name)

    # -- the clock -------------------------------------------------------------------------------------
    def at(self, delay: float, fn: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (self.t + delay, self.seq, fn))

    def run(self, seconds: float, until: Callable[[], bool] | None = None) -> None:
        end = self.t + seconds
        while self.queue and self.queue[0][0] <= end:
            when, _, fn = heapq.heappop(self.queue)
            self.t = max(self.t, when)
            fn()
            if until is not None and until():
                return
        self.t = max(self.t, end)

    def settle(self, limit: float = 6 * 3600.0) -> None:
        """Run until every node is settled (or ``limit`` simulated seconds), then check I2/I5 at the end."""
        waited = 0.0
        while waited < limit:
            self.run(60.0)
            waited += 60.0
            if self.settled():
                self.run(60.0)
                if not self.declared or self.settled():  # a CUDA proof may start once a flow is done
                    break
        self.check_end()

    def settled(self) -> bool:
        for node in self.api.store["nodes"].values():
            state = objects.labels(node).get(STATE_LABEL, "idle")
            if state in SLOT_STATES or state == State.PROVING:
                return False
            if state == State.WAITING_SLOT and objects.labels(node).get(REASON_LABEL) != Reason.ROLLOUT_HALTED:
                return False
            if state == State.IDLE and self.has_work(objects.name(node)) and not self.halted(self.pool_of(node)):
                return False
        return not any(not objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION) for lease in self.leases())

    # -- the controller and the executors --------------------------------------------------------------
    def _reconcile(self) -> None:
        if self.t >= self.controller_down_until and self.t >= self.paused.get(self.controller.identity, 0.0):
            before = self.metrics.admissions
            self.controller.reconcile()
            if self.metrics.admissions > before:
                self.metrics.admitting_passes += 1
        self.at(self.timing.reconcile, self._reconcile)

    def add_replica(self, identity: str, skew: float = 0.0, first: float = 3.0) -> Controller:
        """Another replica of the controller Deployment, on a clock ``skew`` seconds off the API server's."""
        replica = Controller(Client(self.api, "controller", NAMESPACE), NAMESPACE, identity, lambda: self.t + skew)
        self.replicas.append(replica)
        self.at(first, functools.partial(self._reconcile_replica, replica))
        return replica

    def _reconcile_replica(self, replica: Controller) -> None:
        if self.t >= self.paused.get(replica.identity, 0.0):
            replica.reconcile()
        self.at(self.timing.reconcile, functools.partial(self._reconcile_replica, replica))

    def restart_controller(self, down: float = 30.0) -> None:
        """The controller pod dies (between any two writes) and comes back: it remembers nothing."""
        self.controller_down_until = self.t + down
        self.controller = Controller(
            Client(self.api, "controller", NAMESPACE, "controller-1"), NAMESPACE, "controller-1", lambda: self.t
        )

    def _executor_pass(self, name: str) -> None:
        self.executor_pending.discard(name)
        executor = self.executors.get(name)
        if executor is None or name in self.down or name not in self.api.store["nodes"]:
            return
        executor.once()
        node = self.api.store["nodes"].get(name)
        if node is None:
            return
        request = objects.json_annotation(node, REQUEST_ANNOTATION)
        report = objects.json_annotation(node, "gpu-platform.io/node-agent.report")
        if request.get("id") and (report.get("id") != request.get("id") or report.get("outcome") == "running"):
            self._poll(name, self.timing.executor_poll)

    def _poll(self, name: str, delay: float) -> None:
        if name not in self.executor_pending:
            self.executor_pending.add(name)
            self.at(delay, lambda: self._executor_pass(name))

    # -- watch: the actors, and the invariants ----------------------------------------------------------
    def _watch(self, kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        caller = self.api.caller
        if caller == "controller" and kind in ("nodes", "leases") and not key.endswith(f"/{CONTROLLER_LEASE}"):
            leader = self.api.store["leases"].get(f"{NAMESPACE}/{CONTROLLER_LEASE}") or {}
            holder = (leader.get("spec") or {}).get("holderIdentity", "")
            if self.api.writer and holder != self.api.writer:
                self.metrics.violate("I8", f"{kind} {key} written by {self.api.writer} while {holder} leads")
        if kind == "nodes" and new is not None:
            was = bool(((old or {}).get("spec") or {}).get("unschedulable"))
            now_unschedulable = bool((new.get("spec") or {}).get("unschedulable"))
            if now_unschedulable and not was and caller == "controller":
                self.cordoned_by_controller.add(key)
            if (was and not now_unschedulable) or new is None:
                self.cordoned_by_controller.discard(key)
            if operator.operator_holds(objects.labels(new)):
                self.cordoned_by_controller.discard(key)  # the operator's upgrade now holds it: its cordon to lift
        if kind == "nodes" and new is None:
            self.cordoned_by_controller.discard(key)
        if kind == "pods":
            if caller == "controller" and old is None and new is not None:
                self._check_proof_pod(key, new)
            self.kubelet.on_pod(key, old, new)
            self.replica_sets.on_pod(key, old, new)
            self.daemon_sets.on_pod(key, old, new)
            self.driver.on_pod(key, old, new)
            if new is not None and not (new.get("spec") or {}).get("nodeName"):
                self.scheduler.kick()
            if new is None:
                self.scheduler.kick()
        elif kind == "nodes":
            self.driver.on_node(key, old, new)
            self.mig.on_node(key, old, new)
            self.plugin.on_node(key, old, new)
            if new is not None and (
                old is None
                or (old.get("spec") or {}).get("unschedulable") != (new.get("spec") or {}).get("unschedulable")
            ):
                self.scheduler.kick()
            if new is not None:
                request = objects.annotations_of(new).get(REQUEST_ANNOTATION)
                if request and request != objects.annotations_of(old or {}).get(REQUEST_ANNOTATION):
                    step = json.loads(request).get("step")
                    delay = self.rng.uniform(0.0, self.timing.executor_poll)
                    if step == "uninstall":
                        delay += self.timing.uninstall
                    self._poll(key, delay)
            if caller == "controller":
                self._check_node_write(key, old, new)
            if caller in ("controller", UpgradeController.CALLER):
                self._check_shared_budget(key, old, new)
        elif kind == "leases" and caller == "controller":
            self._check_lease_write(key, old, new)

    def _check_node_write(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None or old is None:
            return
        before = objects.labels(old).get(STATE_LABEL, "idle")
        after = objects.labels(new).get(STATE_LABEL, "idle")
        if before != after:
            self.metrics.transitions.add((before, after))
            OBSERVED.add((before, after))
            listed = (before, after) in ALLOWED
            any_failure = after == State.FAILED and objects.labels(new).get(REASON_LABEL) in ANY_STATE_FAILURES
            touched_fail = after == State.FAILED and before in {s.value for s in TOUCHED_STATES}
            if not (listed or any_failure or touched_fail):
                self.metrics.violate("transitions", f"{name}: {before} -> {after} is not in TRANSITIONS")
            if before in {s.value for s in TOUCHED_STATES} and after not in {
                *(s.value for s in TOUCHED_STATES),
                State.DONE,
                State.FAILED,
                State.EVICTING,
            }:
                self.metrics.violate("I4", f"{name}: a touched node moved to {after}")
        if before not in SLOT_STATES and after in SLOT_STATES:
            self._admitted(name, new)
        if before != State.PROVING and after == State.PROVING:
            self._proof_started(name, old, new)
        if before in SLOT_STATES and after not in SLOT_STATES:
            self.metrics.slots.pop(name, None)
        if before != State.SMOKE_TESTING and after == State.SMOKE_TESTING:
            # Evidence: the layout mig-manager applied is the one the controller asked for.
            wanted = objects.labels(new).get(MIG_DESIRED_LABEL, "")
            if self.hosts[name].mig_layout != wanted:
                self.metrics.violate(
                    "evidence", f"{name}: smoke-testing on {self.hosts[name].mig_layout}, not {wanted}"
                )
        handed_over = before != State.DONE and after == State.DONE and self.flow == "driver"
        if handed_over and (self.hosts[name].exists("/usr/bin/nvidia-smi") or not self.driver.pods_on(name)):
            self.metrics.violate("evidence", f"{name}: done without the operator's driver")
        # I2: a node the controller cordoned carries a state and a reason (or a detail saying what happens).
        if name in self.cordoned_by_controller:
            if after not in SLOT_STATES and after != State.FAILED:
                self.metrics.violate("I2", f"{name}: cordoned by the controller in state {after}")
            if not objects.labels(new).get(REASON_LABEL) and not objects.annotations_of(new).get(
                "gpu-platform.io/node-agent.detail"
            ):
                self.metrics.violate("I2", f"{name}: cordoned without a reason or detail")
        # I3: no host or MIG change requested while a GPU pod runs there.
        changed_mig = objects.labels(old).get(MIG_LABEL) != objects.labels(new).get(MIG_LABEL)
        request = objects.annotations_of(new).get(REQUEST_ANNOTATION, "")
        new_request = request != objects.annotations_of(old).get(REQUEST_ANNOTATION, "")
        step = json.loads(request).get("step") if request else ""
        if (changed_mig or (new_request and step in ("uninstall", "reboot"))) and self.gpu_pods_running(name):
            self.metrics.violate("I3", f"{name}: {'mig.config' if changed_mig else step} under running GPU pods")

    def unavailable(self, pool: str) -> set[str]:
        """The pool's nodes that are away: in one of the controller's slot states or the operator's upgrade states,
        cordoned by anyone, or down. (A Lease alone takes nothing away: a fenced node still runs its workloads.)"""
        uids: set[str] = set()
        for node in self.api.store["nodes"].values():
            if self.pool_of(node) != pool:
                continue
            if (
                objects.labels(node).get(STATE_LABEL) in SLOT_STATES
                or (node.get("spec") or {}).get("unschedulable")
                or operator.operator_holds(objects.labels(node))
                or not self.node_ready(objects.name(node))
            ):
                uids.add(objects.uid(node))
        return uids

    def _check_shared_budget(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            return

        def away(node: dict[str, Any] | None) -> bool:
            if node is None:
                return False
            return bool((node.get("spec") or {}).get("unschedulable")) or operator.operator_holds(objects.labels(node))

        if away(new) and not away(old):
            pool = self.pool_of(new)
            count = len(self.unavailable(pool))
            self.metrics.max_unavailable = max(self.metrics.max_unavailable, count)
            if count > self.budget(pool):
                self.metrics.violate(
                    "I7",
                    f"{name}: {count} nodes of {pool} away, budget {self.budget(pool)} (by {self.api.caller or 'another actor'})",
                )

    def smoke_pods_deleted_by_operator(self) -> list[str]:
        return [key for key in self.upgrades.deleted_pods if key.split("/", 1)[0] == NAMESPACE]

    def node_ready(self, name: str) -> bool:
        return name not in self.down

    def _admitted(self, name: str, node: dict[str, Any]) -> None:
        pool = self.pool_of(node)
        self.metrics.admissions += 1
        taken = set(self.metrics.slots.values())
        slot = next(index for index in range(len(taken) + 1) if index not in taken)
        self.metrics.slots[name] = slot
        self.metrics.holders_per_slot[slot] += 1
        if self.halted(pool):
            self.metrics.violate("I6", f"{name} entered maintenance while {pool} is halted")
        count = self.in_maintenance(pool)
        self.metrics.max_in_maintenance = max(self.metrics.max_in_maintenance, count)
        budget = self.budget(pool)
        if count > budget:
            self.metrics.violate("I1", f"{name}: {count} nodes of {pool} in maintenance, budget {budget}")

    def _proof_started(self, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        """I9: a CUDA proof starts within its pool's budget (its Lease, created first, counts), never in a halted pool,
        never with a cordon."""
        pool = self.pool_of(new)
        self.metrics.proofs += 1
        if self.halted(pool):
            self.metrics.violate("I9", f"{name}: its CUDA proof started while {pool} is halted")
        count = self.in_maintenance(pool)
        self.metrics.max_in_maintenance = max(self.metrics.max_in_maintenance, count)
        if count > self.budget(pool):
            self.metrics.violate(
                "I9", f"{name}: its CUDA proof made {count} slots of {pool} taken, budget {self.budget(pool)}"
            )
        if bool((new.get("spec") or {}).get("unschedulable")) != bool((old.get("spec") or {}).get("unschedulable")):
            self.metrics.violate("I9", f"{name}: its cordon changed as its CUDA proof started")

    def _check_proof_pod(self, key: str, pod: dict[str, Any]) -> None:
        """I9: a CUDA proof's smoke pod is created only on a node in ``proving``."""
        if "-proof" not in objects.name(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName", "")
        state = objects.labels(self.api.store["nodes"].get(node) or {}).get(STATE_LABEL, "idle")
        if state != State.PROVING:
            self.metrics.violate("I9", f"{key}: a CUDA proof's pod created on {node}, which is {state}")

    def _check_lease_write(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if old is None and new is not None:
            pool = objects.labels(new).get(LEASE_POOL_LABEL, "")
            count = self.in_maintenance(pool)
            self.metrics.max_in_maintenance = max(self.metrics.max_in_maintenance, count)
            if count > self.budget(pool) and not objects.annotations_of(new).get(LEASE_FAILED_ANNOTATION):
                self.metrics.violate("I1", f"lease {key}: {count} in maintenance, budget {self.budget(pool)}")
        if old is not None and objects.annotations_of(old).get(LEASE_TOUCHED_ANNOTATION):
            uid = objects.name(old).removeprefix(NODE_LEASE_PREFIX)
            if new is None:
                node = self.node_by_uid(uid)
                state = objects.labels(node).get(STATE_LABEL) if node is not None else None
                retried = state == State.IDLE and objects.annotations_of(old).get(LEASE_FAILED_ANNOTATION)
                if state != State.DONE and not retried:  # a halt is cleared only by a retry a person asked for
                    self.metrics.violate("I4", f"touched lease {key} deleted while its node is not done")
            elif objects.annotations_of(new).get(LEASE_NODE_ANNOTATION) != objects.annotations_of(old).get(
                LEASE_NODE_ANNOTATION
            ):
                self.metrics.violate("I4", f"touched lease {key} given to another node")

    def check_end(self) -> None:
        """I2 (no finished node holds a slot) and I5 (every flow ends done, or failed/waiting with a reason)."""
        for name, node in sorted(self.api.store["nodes"].items()):
            labels = objects.labels(node)
            state = labels.get(STATE_LABEL, "idle")
            lease = self.api.store["leases"].get(f"{NAMESPACE}/{NODE_LEASE_PREFIX}{objects.uid(node)}")
            if (
                state not in SLOT_STATES
                and lease is not None
                and not objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION)
            ):
                self.metrics.violate("I2", f"{name}: {state} but holds a slot")
            if name in self.cordoned_by_controller and state not in SLOT_STATES and state != State.FAILED:
                self.metrics.violate("I2", f"{name}: ends {state} still cordoned by the controller")
            if state == State.DONE or (state == State.IDLE and not self.has_work(name)):
                continue
            if not labels.get(REASON_LABEL):
                self.metrics.violate("I5", f"{name}: ends {state} without a reason")

    # -- reading the world ------------------------------------------------------------------------------
    def node(self, name: str) -> dict[str, Any]:
        return self.api.store["nodes"][name]

    def state(self, name: str) -> str:
        return objects.labels(self.node(name)).get(STATE_LABEL, "idle")

    def reason(self, name: str) -> str:
        return objects.labels(self.node(name)).get(REASON_LABEL, "")

    def labels(self, name: str) -> dict[str, str]:
        return objects.labels(self.node(name))

    def detail(self, name: str) -> str:
        return objects.annotations_of(self.node(name)).get("gpu-platform.io/node-agent.detail", "")

    def node_by_uid(self, uid: str) -> dict[str, Any] | None:
        return next((n for n in self.api.store["nodes"].values() if objects.uid(n) == uid), None)

    def pool_of(self, node: dict[str, Any]) -> str:
        return objects.labels(node).get(POOL_LABEL, "")

    def leases(self) -> list[dict[str, Any]]:
        return [lease for lease in self.api.store["leases"].values() if LEASE_POOL_LABEL in objects.labels(lease)]

    def lease_of(self, name: str) -> dict[str, Any] | None:
        return self.api.store["leases"].get(f"{NAMESPACE}/{NODE_LEASE_PREFIX}{objects.uid(self.node(name))}")

    def halted(self, pool: str) -> bool:
        return any(
            objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION)
            for lease in self.leases()
            if objects.labels(lease).get(LEASE_POOL_LABEL) == pool
        )

    def in_maintenance(self, pool: str) -> int:
        uids = {
            objects.name(lease).removeprefix(NODE_LEASE_PREFIX)
            for lease in self.leases()
            if objects.labels(lease).get(LEASE_POOL_LABEL) == pool
        }
        uids |= {
            objects.uid(node)
            for node in self.api.store["nodes"].values()
            if self.pool_of(node) == pool and objects.labels(node).get(STATE_LABEL) in SLOT_STATES
        }
        return len(uids)

    def settings(self) -> Settings:
        data = self.api.store["configmaps"][f"{NAMESPACE}/{SETTINGS_CONFIG_MAP}"]["data"][SETTINGS_KEY]
        return Settings.from_json(json.loads(data))

    def budget(self, pool: str) -> int:
        live = sum(1 for node in self.api.store["nodes"].values() if self.pool_of(node) == pool)
        return self.settings().budget(live)

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        return [pod for pod in self.api.store["pods"].values() if (pod.get("spec") or {}).get("nodeName") == node]

    def gpu_pods_running(self, node: str) -> list[str]:
        """GPU pods whose containers run on the node now (Running, terminating ones included)."""
        return [
            objects.name(pod)
            for pod in self.pods_on(node)
            if (pod.get("status") or {}).get("phase") == "Running"
            and objects.requests_gpu(pod)
            and objects.owner_name(pod) != self.driver.name
        ]

    def _busy(self, node: str) -> str:
        running = self.gpu_pods_running(node)
        return f"pod {running[0]}" if running else ""

    def has_work(self, name: str) -> bool:
        host, labels = self.hosts[name], self.labels(name)
        if self.flow == "driver":
            return (
                labels.get(HOST_DRIVER_REMOVAL_LABEL) == HOST_DRIVER_REMOVAL_ENABLED
                and host.exists("/var/lib/nvidia/log")
                and host.exists("/usr/bin/nvidia-uninstall")
                and not host.owned
            )
        return host.mig_layout != labels.get(MIG_DESIRED_LABEL, host.mig_layout)

    def up(self, node: str) -> bool:
        return node not in self.down and node in self.api.store["nodes"]

    def smoke_fails(self, node: str) -> bool:
        return node in self.smoke_failing

    def record_mig_change(self, node: str) -> None:
        running = self.gpu_pods_running(node)
        if running:
            self.metrics.violate("I3", f"{node}: MIG layout changed under {running}")

    # -- what happens to nodes --------------------------------------------------------------------------
    def label(self, node: str, labels: dict[str, str | None]) -> None:
        """Another actor's label write (mig-manager, the driver manager): straight to the store."""
        current = self.api.store["nodes"].get(node)
        if current is None:
            return
        body = clone(current)
        merged = dict(body["metadata"].get("labels") or {})
        for key, value in labels.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        body["metadata"]["labels"] = merged
        self.api.put("nodes", node, body)

    def reboot(self, node: str) -> None:
        """The host goes down: every pod on it stops (the executor too), then it boots with a new boot id."""
        if node in self.down:
            return
        self.down.add(node)
        self._set_ready(node, False)
        self.mig.restarted(node)
        for pod in self.pods_on(node):
            self.api.put("pods", f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}", None)
        self.at(self.timing.reboot_down + self.timing.boot, lambda: self._booted(node))

    def _booted(self, node: str) -> None:
        self.down.discard(node)
        if node not in self.api.store["nodes"]:
            return
        self.hosts[node].booted()
        self._set_ready(node, True)
        self.daemon_sets.node_up(node)
        self.driver.ensure(node)
        self.plugin.publish(node)
        self._poll(node, self.timing.executor_poll)

    def _set_ready(self, node: str, ready: bool) -> None:
        """The kubelet's Ready condition (the node lifecycle controller's Unknown when it stops posting), where the
        continuous proof reads it."""
        current = self.api.store["nodes"].get(node)
        if not self.declared or current is None:
            return
        body = clone(current)
        body["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "Unknown"}]
        if ready:
            body["status"]["nodeInfo"] = {"bootID": self.boot_id(node)}  # the kubelet's, posted as it starts
        self.api.put("nodes", node, body)

    def boot_id(self, node: str) -> str:
        """The host's ``/proc/sys/kernel/random/boot_id``, as the kubelet reports it in ``status.nodeInfo.bootID``."""
        return self.hosts[node]._read("/proc/sys/kernel/random/boot_id").strip()

    def recreate(self, name: str) -> None:
        """The cloud deletes the node and creates a new one under the same name (a new UID, a fresh host)."""
        for pod in self.pods_on(name):
            self.api.put("pods", f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}", None)
        self.api.put("nodes", name, None)
        self.mig.restarted(name)
        self.add_node(name)

    def stuck_without_reason(self) -> list[str]:
        """Nodes that end neither done nor idle-without-work, and carry no reason."""
        stuck = []
        for name, node in sorted(self.api.store["nodes"].items()):
            state = objects.labels(node).get(STATE_LABEL, "idle")
            if state == State.DONE or (state == State.IDLE and not self.has_work(name)):
                continue
            if not objects.labels(node).get(REASON_LABEL):
                stuck.append(name)
        return stuck

    def kill_executor(self, name: str) -> None:
        """The executor pod is gone and does not come back (its node keeps running)."""
        self.executors.pop(name, None)

    def delete_node(self, name: str) -> None:
        for pod in self.pods_on(name):
            self.api.put("pods", f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}", None)
        self.api.put("nodes", name, None)

    def human_patch(self, name: str, patch: dict[str, Any]) -> None:
        from tests.node_agent.sim.api import merge_patch

        body = merge_patch(self.node(name), patch)
        self.api.put("nodes", name, body)

    def set_settings(self, **changes: Any) -> None:
        key = f"{NAMESPACE}/{SETTINGS_CONFIG_MAP}"
        current = json.loads(self.api.store["configmaps"][key]["data"][SETTINGS_KEY])
        current.update(changes)
        body = clone(self.api.store["configmaps"][key])
        body["data"][SETTINGS_KEY] = json.dumps(current)
        self.api.put("configmaps", key, body)

    def delete_lease(self, name: str) -> None:
        lease = self.lease_of(name)
        if lease is not None:
            self.api.put("leases", f"{NAMESPACE}/{objects.name(lease)}", None)

    def states(self) -> dict[str, str]:
        return {name: self.state(name) for name in sorted(self.api.store["nodes"])}


def declared_pool(nodes: int = 2, **settings: Any) -> World:
    """A pool already on its declared layout (no rollout to do), its declaration given to the controller: the state
    the last ``pulumi up`` left, where the continuous proof takes over."""
    return World(
        nodes=nodes,
        flow="mig",
        start_layout=DECLARED_LAYOUT,
        target_layout=DECLARED_LAYOUT,
        pods_per_node=0,
        settings={"declarations": declared(), **settings},
    )
