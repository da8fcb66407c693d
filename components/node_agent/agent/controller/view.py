"""What the controller observes about one node and one pool, built once per reconcile from three lists.

Nodes, pods and Leases are listed at the start of every reconcile; nothing is remembered between
reconciles except the record the controller itself wrote on the Node (its durable intent) and the Leases.
A record whose ``uid`` is not the node's is someone else's: a node recreated under the same name starts
afresh and inherits neither a slot nor a halt.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    DRIVER_POD_LABEL,
    LEASE_FAILED_ANNOTATION,
    LEASE_NODE_ANNOTATION,
    LEASE_POOL_LABEL,
    LEASE_TOUCHED_ANNOTATION,
    NODE_LEASE_PREFIX,
    POOL_LABEL,
    RECORD_ANNOTATION,
    REPORT_ANNOTATION,
    REQUEST_ANNOTATION,
    SLOT_STATES,
    SMOKE_LABEL,
    STATE_LABEL,
    State,
)
from components.node_agent.agent import objects

_IDLE = State.IDLE.value


@dataclass
class Record:
    """The controller's durable intent for one maintenance of one node (JSON in the record annotation)."""

    uid: str = ""
    flow: str = ""
    attempt: int = 0
    #: Observed in the same write that cordons: was the node unschedulable before the controller cordoned it?
    was_unschedulable: bool = False
    since: float = 0.0  #: when the current state began
    seq: int = 0  #: requests made to the executor in this attempt (a request id is never reused)
    step_at: float = 0.0  #: when the current executor request was made
    toggled: bool = False  #: the one MIG toggle was used
    rebooted: bool = False  #: the one reboot was requested
    target: str = ""  #: the MIG config this attempt applies
    handover_at: float = 0.0  #: when gpu.deploy.driver=true was written
    evicting_since: float = 0.0  #: when eviction began (not reset when the executor finds a GPU in use)

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, data: dict[str, Any]) -> Record:
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        return cls(**known)


@dataclass(frozen=True)
class NodeView:
    """One node as observed now."""

    name: str
    uid: str
    rv: str
    pool: str
    labels: dict[str, str]
    annotations: dict[str, str]
    unschedulable: bool
    taints: list[dict[str, Any]]
    allocatable: dict[str, str]
    record: Record | None  #: None: no record, or another node's (a different UID)
    request: dict[str, Any]
    report: dict[str, Any]
    gpu_pods: list[dict[str, Any]] = field(default_factory=list)
    smoke_pods: list[dict[str, Any]] = field(default_factory=list)
    driver_pods: list[dict[str, Any]] = field(default_factory=list)
    lease: dict[str, Any] | None = None
    #: The image the operator declares for its driver (its DaemonSet's template), "" if unknown.
    driver_image: str = ""
    #: An eviction of one of its pods was refused (429) in the last reconcile.
    eviction_blocked: bool = False

    @property
    def state(self) -> str:
        return self.labels.get(STATE_LABEL, _IDLE)

    @property
    def opted_in(self) -> bool:
        return self.labels.get(HOST_DRIVER_REMOVAL_LABEL) == HOST_DRIVER_REMOVAL_ENABLED

    @property
    def lease_touched(self) -> bool:
        return bool(self.lease) and bool(objects.annotations_of(self.lease or {}).get(LEASE_TOUCHED_ANNOTATION))

    @property
    def lease_failed(self) -> str:
        return objects.annotations_of(self.lease or {}).get(LEASE_FAILED_ANNOTATION, "") if self.lease else ""


@dataclass(frozen=True)
class PoolView:
    """One pool: its live nodes, who holds a slot, and whether a failed touched node halts it."""

    name: str
    live_nodes: int
    budget: int
    #: UIDs in maintenance: every node Lease of the pool, and every node whose state holds a slot.
    holders: frozenset[str]
    #: "node (reason)" of each Lease that halts the pool.
    halted_by: tuple[str, ...]


def _record(node: dict[str, Any]) -> Record | None:
    data = objects.json_annotation(node, RECORD_ANNOTATION)
    if not data or data.get("uid") != objects.uid(node):
        return None
    return Record.loads(data)


def lease_uid(lease: dict[str, Any]) -> str:
    return objects.name(lease).removeprefix(NODE_LEASE_PREFIX)


def build_views(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    leases: list[dict[str, Any]],
    operator_namespace: str,
    driver_images: dict[str, str],
    blocked: set[str],
) -> list[NodeView]:
    """A view of every node, with its pods and its Lease (by UID)."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            by_node.setdefault(node_name, []).append(pod)
    lease_by_uid = {lease_uid(lease): lease for lease in leases}
    key, value = DRIVER_POD_LABEL
    views = []
    for node in nodes:
        node_name = objects.name(node)
        on_node = by_node.get(node_name, [])
        driver_pods = [
            pod
            for pod in on_node
            if objects.labels(pod).get(key) == value and pod["metadata"].get("namespace") == operator_namespace
        ]
        image = ""
        for pod in driver_pods:
            image = driver_images.get(objects.owner_name(pod), image)
        spec = node.get("spec") or {}
        views.append(
            NodeView(
                name=node_name,
                uid=objects.uid(node),
                rv=str(node["metadata"].get("resourceVersion", "")),
                pool=objects.labels(node).get(POOL_LABEL, ""),
                labels=objects.labels(node),
                annotations=objects.annotations_of(node),
                unschedulable=bool(spec.get("unschedulable")),
                taints=list(spec.get("taints") or []),
                allocatable=dict((node.get("status") or {}).get("allocatable") or {}),
                record=_record(node),
                request=objects.json_annotation(node, REQUEST_ANNOTATION),
                report=objects.json_annotation(node, REPORT_ANNOTATION),
                gpu_pods=sorted(
                    [pod for pod in on_node if objects.is_running_gpu_pod(pod)],
                    key=lambda pod: (pod["metadata"].get("namespace", ""), pod["metadata"]["name"]),
                ),
                smoke_pods=[pod for pod in on_node if objects.labels(pod).get(SMOKE_LABEL)],
                driver_pods=driver_pods,
                lease=lease_by_uid.get(objects.uid(node)),
                driver_image=image,
                eviction_blocked=node_name in blocked,
            )
        )
    return views


def build_pools(views: list[NodeView], leases: list[dict[str, Any]], budget: Any) -> dict[str, PoolView]:
    """Every pool's live size, budget, holders and halts. ``budget(live)`` gives the slots."""
    pools: dict[str, PoolView] = {}
    names = sorted(
        {view.pool for view in views if view.pool} | {objects.labels(x).get(LEASE_POOL_LABEL, "") for x in leases}
    )
    for pool in names:
        if not pool:
            continue
        members = [view for view in views if view.pool == pool]
        pool_leases = [lease for lease in leases if objects.labels(lease).get(LEASE_POOL_LABEL) == pool]
        holders = {lease_uid(lease) for lease in pool_leases}
        holders |= {view.uid for view in members if view.state in SLOT_STATES}
        halted = tuple(
            sorted(
                f"{objects.annotations_of(lease).get(LEASE_NODE_ANNOTATION, lease_uid(lease))} "
                f"({objects.annotations_of(lease)[LEASE_FAILED_ANNOTATION]})"
                for lease in pool_leases
                if objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION)
            )
        )
        pools[pool] = PoolView(pool, len(members), budget(len(members)), frozenset(holders), halted)
    return pools
