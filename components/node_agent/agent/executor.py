"""The executor: observes the node, the host and the budget, runs the machine, performs its actions.

One :meth:`Agent.tick` is observe -> ``machine.step`` -> perform the actions in order, stopping at the
first that fails (the next tick observes again and the machine decides again, so an API error is
retried rather than fatal). The budget is a set of slot Leases per pool: a node takes a slot by
creating the Lease, or by taking over an expired one whose holder never touched its node; a touched
Lease is never taken over, and a touched Lease that expired or carries the failed annotation halts the
pool, naming the node, until its holder renews it again or an operator deletes it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    AGENT_IMAGE,
    DETAIL_ANNOTATION,
    EVENT_NAMESPACE,
    EVENT_SOURCE,
    FLOW_LABEL,
    LEASE_FAILED_ANNOTATION,
    LEASE_POOL_LABEL,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_LABEL,
    POOL_LABEL,
    REASON_LABEL,
    RECORD_ANNOTATION,
    SLOT_STATES,
    STATE_LABEL,
    Flow,
    Reason,
    State,
    slot_lease_name,
)
from components.node_agent.agent import machine
from components.node_agent.agent.host import Host
from components.node_agent.agent.kube import ApiError, Kube

SMOKE_LABEL = "app.kubernetes.io/name"
SMOKE_VALUE = "node-agent-smoke"
GPU_RESOURCE_PREFIX = "nvidia.com/"


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """Wall-clock time; ``sleep`` wakes early when ``stop`` is set (SIGTERM)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        self.stop.wait(seconds)


def micro_time(seconds: float) -> str:
    """Kubernetes MicroTime."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float:
    """Kubernetes MicroTime (or Time) in seconds; ``fromisoformat`` reads the trailing Z since 3.11."""
    return datetime.fromisoformat(text).timestamp()


def record_to_json(record: machine.Record) -> dict[str, Any]:
    data = asdict(record)
    data["state"] = str(record.state)
    data["flow"] = str(record.flow) if record.flow else ""
    data["reason"] = str(record.reason) if record.reason else ""
    return data


def record_from_json(data: dict[str, Any], state_label: str = "") -> machine.Record:
    """The record; an unknown state label value is kept in ``unknown`` for the machine to fail on."""
    known = {f for f in machine.Record.__dataclass_fields__}
    values = {key: value for key, value in data.items() if key in known}
    raw_state = state_label or str(values.get("state", State.IDLE))
    values["flow"] = Flow(values["flow"]) if values.get("flow") else None
    values["reason"] = Reason(values["reason"]) if values.get("reason") in set(Reason) else None
    if raw_state in set(State):
        values["state"] = State(raw_state)
        values["unknown"] = ""
    else:
        values["state"] = State.IDLE
        values["unknown"] = raw_state
    return machine.Record(**values)


@dataclass
class Memory:
    """What this process knows that is not on the node: results of its own actions."""

    uninstall_rc: int | None = None
    reboot_requested: bool = False
    eviction_blocked: bool = False
    my_lease: dict[str, Any] | None = None
    lease_lost: bool = False


@dataclass
class Agent:
    """The agent for one node."""

    api: Kube
    host: Host
    clock: Clock
    node: str
    namespace: str
    settings: machine.Settings
    stop: threading.Event = field(default_factory=threading.Event)
    memory: Memory = field(default_factory=Memory)
    log: list[str] = field(default_factory=list)
    _node: dict[str, Any] | None = None
    _record: machine.Record = field(default_factory=machine.Record)
    _leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: When the next tick is due (the loop sleeps until then; a simulation skips the agent until then).
    next_at: float = 0.0

    # -- the loop ---------------------------------------------------------------------------------------
    def run(self, max_ticks: int | None = None) -> None:
        """Tick until SIGTERM (``stop``); an API failure backs off up to four polls."""
        backoff = 1
        ticks = 0
        while not self.stop.is_set() and (max_ticks is None or ticks < max_ticks):
            ok = self.tick()
            ticks += 1
            backoff = 1 if ok else min(backoff * 2, 4)
            self.clock.sleep(max(self.next_at - self.clock.now(), 0.0) * backoff)

    def tick(self) -> bool:
        """One observe -> step -> act round; False when the API failed somewhere in it."""
        before = self._record.state
        ok = self._tick()
        quiet = self._record.state in _QUIET_STATES and self._record.state is before
        quiet = quiet and self.memory.my_lease is None
        interval = self.settings.idle_poll_seconds if quiet and ok else self.settings.poll_seconds
        self.next_at = self.clock.now() + interval
        return ok

    def _tick(self) -> bool:
        obs = self.observe()
        actions, new = machine.step(self._record, obs, self.settings)
        for action in actions:
            if self.stop.is_set() and isinstance(action, (machine.Uninstall, machine.Reboot)):
                return True  # SIGTERM: never start a long host step; the state already says where we are
            try:
                self.perform(action)
            except ApiError as error:
                self.log.append(f"{type(action).__name__}: {error}")
                return False
            except OSError as error:
                self.log.append(f"{type(action).__name__}: {error}")
                return False
        self._record = new
        return obs.api_ok

    # -- observing --------------------------------------------------------------------------------------
    def observe(self) -> machine.Observations:
        now = self.clock.now()
        facts = self.host.inspect()
        base = machine.Observations(
            now=now,
            install=facts.install,
            install_detail=facts.detail,
            uninstaller=facts.uninstaller,
            uninstall_rc=self.memory.uninstall_rc,
            reboot_requested=self.memory.reboot_requested,
            modules_loaded=facts.modules_loaded,
            files_remain=facts.files_remain,
            boot_id=facts.boot_id,
            driver_ready=facts.driver_ready,
        )
        try:
            self._node = self.api.get_node(self.node)
        except ApiError as error:
            if error.status == 404:
                self._node = None
                self._record = self._marker_record()
                return replace(base, node_exists=False)
            return replace(base, api_ok=False)
        try:
            return self._observe_node(base, self._node, now)
        except ApiError:
            return replace(base, api_ok=False)

    def _marker_record(self) -> machine.Record:
        marker = self.host.read_marker()
        return record_from_json(marker) if marker else machine.Record()

    def _observe_node(self, base: machine.Observations, node: dict[str, Any], now: float) -> machine.Observations:
        meta = node.get("metadata", {})
        labels = meta.get("labels") or {}
        annotations = meta.get("annotations") or {}
        stored = annotations.get(RECORD_ANNOTATION)
        if stored:
            self._record = record_from_json(json.loads(stored), labels.get(STATE_LABEL, ""))
        else:
            self._record = self._marker_record()  # a re-registered Node: the host remembers
            if self._record != machine.Record():
                self._persist(self._record)
        spec = node.get("spec", {})
        taints = spec.get("taints") or []
        pool = labels.get(POOL_LABEL, "")
        held, lost, halted = self._budget(pool, now)
        pods = self.api.node_pods(self.node)
        gpu_pods = [pod for pod in pods if _is_gpu_workload(pod)]
        return replace(
            base,
            unschedulable=bool(spec.get("unschedulable")),
            opted_in=labels.get(HOST_DRIVER_REMOVAL_LABEL) == HOST_DRIVER_REMOVAL_ENABLED,
            deploy_driver=labels.get("nvidia.com/gpu.deploy.driver", ""),
            mig_desired=labels.get(MIG_DESIRED_LABEL, ""),
            mig_current=labels.get(MIG_LABEL, ""),
            mig_state=labels.get(MIG_STATE_LABEL, ""),
            mig_taint=any(taint.get("key") == MIG_PENDING_TAINT_KEY for taint in taints),
            gpu_pods=len(gpu_pods),
            eviction_blocked=self.memory.eviction_blocked,
            slot_held=held,
            slot_lost=lost,
            halted_by=halted,
            smoke=self._smoke_status(pods),
            marker_ok=self.host.marker_writable() if self._record.state in _MARKER_CHECKED else True,
        )

    def _budget(self, pool: str, now: float) -> tuple[bool, bool, str]:
        """(we hold a slot, we lost the one we held, the node that halts the pool)."""
        leases = self.api.list_leases(self.namespace, f"{LEASE_POOL_LABEL}={pool}") if pool else []
        self._leases = {str(lease["metadata"]["name"]): lease for lease in leases}
        mine = [lease for lease in leases if lease["spec"].get("holderIdentity") == self.node]
        halted = ""
        for lease in sorted(leases, key=lambda item: str(item["metadata"]["name"])):
            holder = lease["spec"].get("holderIdentity", "")
            notes = lease["metadata"].get("annotations") or {}
            if holder == self.node:
                continue
            if LEASE_FAILED_ANNOTATION in notes:
                halted = f"{holder} ({notes[LEASE_FAILED_ANNOTATION]}; {lease['metadata']['name']})"
                break
            if LEASE_TOUCHED_ANNOTATION in notes and _expired(lease, now):
                halted = f"{holder} (stopped renewing after touching the node; {lease['metadata']['name']})"
                break
        if mine:
            self.memory.my_lease = mine[0]
            self._renew(now)
            return self.memory.my_lease is not None, False, halted
        had = self.memory.my_lease is not None or self._record.state in (State.CORDONED, State.EVICTING)
        self.memory.my_lease = None
        return False, had and self._record.state in (State.CORDONED, State.EVICTING), halted

    def _smoke_status(self, pods: list[dict[str, Any]]) -> str:
        smoke = [pod for pod in pods if (pod["metadata"].get("labels") or {}).get(SMOKE_LABEL) == SMOKE_VALUE]
        if not smoke:
            return ""
        phases = [pod.get("status", {}).get("phase", "Pending") for pod in smoke]
        if "Failed" in phases:
            return "failed"
        expected = len(self._mig_resources())
        if phases.count("Succeeded") >= max(expected, 1):
            return "succeeded"
        return "running"

    # -- the budget -------------------------------------------------------------------------------------
    def _pool(self) -> str:
        labels = ((self._node or {}).get("metadata") or {}).get("labels") or {}
        return str(labels.get(POOL_LABEL, ""))

    def _lease_body(self, name: str, now: float, lease: dict[str, Any] | None = None) -> dict[str, Any]:
        body = lease or {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {LEASE_POOL_LABEL: self._pool()}},
        }
        body = json.loads(json.dumps(body))
        body["spec"] = {
            **body.get("spec", {}),
            "holderIdentity": self.node,
            "leaseDurationSeconds": int(self.settings.lease_ttl_seconds),
            "renewTime": micro_time(now),
        }
        if lease is None or lease["spec"].get("holderIdentity") != self.node:
            body["spec"]["acquireTime"] = micro_time(now)
            body["metadata"]["annotations"] = {}
        return body

    def acquire(self) -> None:
        now = self.clock.now()
        budget = self.settings.pool_budgets.get(self._pool(), 1)
        for index in range(budget):
            name = slot_lease_name(self._pool(), index)
            seen = self._leases.get(name)
            if seen is not None and seen["spec"].get("holderIdentity") != self.node and not _expired(seen, now):
                continue  # held, as of this tick's list: no call needed
            try:
                lease = self.api.get_lease(self.namespace, name)
            except ApiError as error:
                if error.status != 404:
                    raise
                try:
                    self.memory.my_lease = self.api.create_lease(self.namespace, self._lease_body(name, now))
                    return
                except ApiError as create_error:
                    if create_error.status == 409:
                        continue  # someone created it first
                    raise
            holder = lease["spec"].get("holderIdentity", "")
            notes = lease["metadata"].get("annotations") or {}
            if holder == self.node:
                self.memory.my_lease = lease
                return
            takeable = _expired(lease, now) and LEASE_TOUCHED_ANNOTATION not in notes
            if takeable and LEASE_FAILED_ANNOTATION not in notes:
                try:
                    self.memory.my_lease = self.api.replace_lease(self.namespace, self._lease_body(name, now, lease))
                    return
                except ApiError as error:
                    if error.status != 409:
                        raise

    def _renew(self, now: float) -> None:
        lease = self.memory.my_lease
        if lease is None:
            return
        try:
            self.memory.my_lease = self.api.replace_lease(self.namespace, self._lease_body("", now, lease))
        except ApiError as error:
            if error.status != 409:
                raise
            fresh = self.api.get_lease(self.namespace, lease["metadata"]["name"])
            if fresh["spec"].get("holderIdentity") == self.node:
                self.memory.my_lease = self.api.replace_lease(self.namespace, self._lease_body("", now, fresh))
            else:
                self.memory.my_lease = None

    def heartbeat(self) -> None:
        """Renew our Lease during a long host step; an API error is logged, the step goes on."""
        try:
            self._renew(self.clock.now())
        except ApiError as error:
            self.log.append(f"heartbeat: {error}")

    def _annotate_lease(self, key: str, value: str) -> None:
        lease = self.memory.my_lease
        if lease is None:
            if key == LEASE_FAILED_ANNOTATION:
                return  # nothing held (e.g. an unknown state on a fresh pod): the node itself says failed
            raise ApiError(409, "no slot held")
        fresh = self.api.get_lease(self.namespace, lease["metadata"]["name"])
        if fresh["spec"].get("holderIdentity") != self.node:
            self.memory.my_lease = None
            raise ApiError(409, "our slot was taken over before we touched the node")
        fresh["metadata"].setdefault("annotations", {})[key] = value
        body = self._lease_body("", self.clock.now(), fresh)
        body["metadata"]["annotations"] = fresh["metadata"]["annotations"]
        self.memory.my_lease = self.api.replace_lease(self.namespace, body)

    def release(self) -> None:
        lease = self.memory.my_lease
        if lease is None:
            return
        try:
            self.api.delete_lease(self.namespace, lease["metadata"]["name"], lease["metadata"]["resourceVersion"])
        except ApiError as error:
            if error.status not in (404, 409):
                raise
        self.memory.my_lease = None

    # -- acting -----------------------------------------------------------------------------------------
    def perform(self, action: machine.Action) -> None:
        if isinstance(action, machine.Persist):
            self._persist(action.record)
        elif isinstance(action, machine.AcquireSlot):
            self.acquire()
        elif isinstance(action, machine.MarkTouched):
            self._annotate_lease(LEASE_TOUCHED_ANNOTATION, self._record.flow or "")
        elif isinstance(action, machine.HaltSlot):
            self._annotate_lease(LEASE_FAILED_ANNOTATION, str(action.reason))
        elif isinstance(action, machine.ReleaseSlot):
            self.release()
        elif isinstance(action, machine.Cordon):
            self.api.patch_node(self.node, {"spec": {"unschedulable": True}})
        elif isinstance(action, machine.Uncordon):
            self.api.patch_node(self.node, {"spec": {"unschedulable": None}})
        elif isinstance(action, machine.EvictGpuPods):
            self._evict()
        elif isinstance(action, machine.UnloadModules):
            self.host.unload_modules()
        elif isinstance(action, machine.Uninstall):
            self.memory.uninstall_rc = self.host.uninstall(self.settings.uninstall_timeout_seconds, self.heartbeat)
        elif isinstance(action, machine.Reboot):
            self.host.reboot(action.allowed)
            self.memory.reboot_requested = True
        elif isinstance(action, machine.SetLabel):
            self.api.patch_node(self.node, {"metadata": {"labels": {action.key: action.value}}})
        elif isinstance(action, machine.RemoveMigTaint):
            self._remove_taint()
        elif isinstance(action, machine.StartSmokePods):
            self._start_smoke()
        elif isinstance(action, machine.DeleteSmokePods):
            for pod in self.api.node_pods(self.node, self.namespace, f"{SMOKE_LABEL}={SMOKE_VALUE}"):
                self.api.delete_pod(self.namespace, pod["metadata"]["name"])
        elif isinstance(action, machine.Emit):
            self._event(action)

    def _persist(self, record: machine.Record) -> None:
        """The host marker first (it must be durable before a step that touches the node), then the Node.

        A state that holds no slot does not need the marker: a full disk must not stop the agent from
        saying so on the Node.
        """
        data = record_to_json(record)
        try:
            self.host.write_marker(data)
        except OSError:
            if record.state in SLOT_STATES:
                raise
        if self._node is None:
            return  # the Node is gone: only the host remembers
        labels: dict[str, str | None] = {
            STATE_LABEL: str(record.state),
            REASON_LABEL: str(record.reason) if record.reason else None,
            FLOW_LABEL: str(record.flow) if record.flow else None,
        }
        annotations = {RECORD_ANNOTATION: json.dumps(data, sort_keys=True), DETAIL_ANNOTATION: record.detail}
        self.api.patch_node(self.node, {"metadata": {"labels": labels, "annotations": annotations}})

    def _evict(self) -> None:
        self.memory.eviction_blocked = False
        for pod in self.api.node_pods(self.node):
            if not _is_gpu_workload(pod):
                continue
            meta = pod["metadata"]
            try:
                self.api.evict(meta["namespace"], meta["name"])
            except ApiError as error:
                if error.status == 429:
                    self.memory.eviction_blocked = True  # a PodDisruptionBudget said no: retried next tick
                elif error.status != 404:
                    raise

    def _remove_taint(self) -> None:
        node = self.api.get_node(self.node)
        taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != MIG_PENDING_TAINT_KEY]
        patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {"taints": taints}}
        self.api.patch_node(self.node, patch)  # 409 if the node changed in between: the next tick retries

    def _mig_resources(self) -> list[str]:
        """A bare-metal node's own resources (keyed by node name), else its node group's."""
        resources = self.settings.mig_resources
        return list(resources.get(self.node) or resources.get(self._pool(), ()))

    def _start_smoke(self) -> None:
        existing = {
            pod["metadata"]["name"]
            for pod in self.api.node_pods(self.node, self.namespace, f"{SMOKE_LABEL}={SMOKE_VALUE}")
        }
        for index, resource in enumerate(self._mig_resources() or ["nvidia.com/gpu"]):
            name = f"node-agent-smoke-{self.node}-{index}"[:253]
            if name in existing:
                continue
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": self.namespace, "labels": {SMOKE_LABEL: SMOKE_VALUE}},
                "spec": {
                    "nodeName": self.node,
                    "restartPolicy": "Never",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "smoke",
                            "image": AGENT_IMAGE,
                            "command": ["nvidia-smi", "-L"],
                            "resources": {"limits": {resource: 1}},
                        }
                    ],
                },
            }
            self.api.create_pod(self.namespace, pod)

    def _event(self, action: machine.Emit) -> None:
        now = micro_time(self.clock.now())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{self.node}.node-agent.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": self.node},
            "reason": action.reason,
            "message": action.message[:1024],
            "type": "Warning" if action.warning else "Normal",
            "source": {"component": EVENT_SOURCE, "host": self.node},
            "firstTimestamp": now[:19] + "Z",
            "lastTimestamp": now[:19] + "Z",
            "count": 1,
        }
        try:
            self.api.create_event(EVENT_NAMESPACE, event)
        except ApiError as error:
            self.log.append(f"event: {error}")  # an Event is best effort; the node's labels are the record

    @property
    def record(self) -> machine.Record:
        return self._record


_QUIET_STATES = frozenset({State.IDLE, State.WAITING_SLOT, State.DONE, State.REFUSED, State.FAILED})
_MARKER_CHECKED = frozenset({State.IDLE, State.WAITING_SLOT, State.REFUSED})


def _expired(lease: dict[str, Any], now: float) -> bool:
    spec = lease.get("spec", {})
    renew = spec.get("renewTime") or spec.get("acquireTime")
    if not renew:
        return True
    return now > parse_time(renew) + float(spec.get("leaseDurationSeconds", 0))


def _is_gpu_workload(pod: dict[str, Any]) -> bool:
    """A running pod that asks for an NVIDIA resource and is not a DaemonSet's (operands stay)."""
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return False
    owners = pod["metadata"].get("ownerReferences") or []
    if any(owner.get("kind") == "DaemonSet" for owner in owners):
        return False
    if (pod["metadata"].get("labels") or {}).get(SMOKE_LABEL) == SMOKE_VALUE:
        return False
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        if any(key.startswith(GPU_RESOURCE_PREFIX) for key in asked):
            return True
    return False
