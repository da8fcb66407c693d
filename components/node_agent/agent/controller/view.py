"""What the controller observes about one node and one pool, built once per reconcile from its lists.

Nodes, pods, Leases, the operator's driver DaemonSets and their ControllerRevisions, and ResourceClaims are
listed at the start of every reconcile; nothing is remembered between
reconciles except the record the controller itself wrote on the Node (its durable intent) and the Leases.
A record whose ``uid`` is not the node's is someone else's: a node recreated under the same name starts
afresh and inherits neither a slot nor a halt.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    DRIVER_CONTAINER,
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
    SLOT_HOLDING_STATES,
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
    #: The state this record was written with (the state label mirrors it; a hand edit of the label is undone).
    state: str = ""
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
    #: UIDs of the operator's driver pods on the node when the hand-over began: none of them answers it.
    stale_driver_pods: list[str] = field(default_factory=list)
    #: The controller set the operator's skip label itself (so it removes it when the node leaves maintenance;
    #: a skip label someone else set stays).
    fenced: bool = False
    #: The node's CUDA proof (state ``proving``): its number (a pod name is never reused), when it began, the state
    #: the node goes back to, and whether its failure cordoned the node (a retry then lifts that cordon only).
    proof_attempt: int = 0
    proof_since: float = 0.0
    proof_from: str = ""
    proof_cordoned: bool = False

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, data: dict[str, Any]) -> Record:
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        return cls(**known)


@dataclass(frozen=True)
class DriverDaemonSet:
    """One of the operator's driver DaemonSets, as k8s-operator-libs reads it."""

    name: str
    uid: str
    #: The driver container's image in its template: what the operator declares.
    image: str
    #: The ``controller-revision-hash`` of a current pod (its newest ControllerRevision); "" when none is known.
    current_hash: str
    #: The NVIDIADriver whose nodes it runs on (its nodeSelector's owner label); "" for the ClusterPolicy's.
    owner: str


def driver_daemon_sets(
    daemon_sets: list[dict[str, Any]], revisions: list[dict[str, Any]]
) -> dict[str, DriverDaemonSet]:
    """Each driver DaemonSet by name, with the hash its current pods carry.

    As ``GetDaemonsetControllerRevisionHash`` (vendored k8s-operator-libs ``pkg/upgrade/pod_manager.go``) finds it:
    the ControllerRevisions matching the DaemonSet's ``spec.selector.matchLabels``, whose name starts with the
    DaemonSet's, the highest ``.revision``.
    """
    found = {}
    for ds in daemon_sets:
        spec = ds.get("spec") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        own = [
            (objects.name(rev), int(rev.get("revision") or 0))
            for rev in revisions
            if match and all(objects.labels(rev).get(key) == value for key, value in match.items())
        ]
        template = (spec.get("template") or {}).get("spec") or {}
        found[objects.name(ds)] = DriverDaemonSet(
            name=objects.name(ds),
            uid=objects.uid(ds),
            image=objects.container_image(template, DRIVER_CONTAINER),
            current_hash=operator.revision_hash(objects.name(ds), own),
            owner=str((template.get("nodeSelector") or {}).get(operator.DRIVER_OWNER_LABEL, "")),
        )
    return found


def driver_pod_problem(
    pod: dict[str, Any],
    node_labels: dict[str, str],
    sets: dict[str, DriverDaemonSet],
    *,
    any_revision: bool = False,
) -> str:
    """Why a driver pod is not the operator's current driver for the node ("" when it is).

    Current as the operator's upgrade controller decides it (``podInSyncWithDS``): owned by a driver DaemonSet (an
    orphan is never in sync), its ``controller-revision-hash`` the DaemonSet's newest; and that DaemonSet is the
    one of the NVIDIADriver owning the node (the owner label the operator writes), on the declared image.
    ``any_revision``: the right DaemonSet is enough, whichever of its revisions (and so image) the pod runs.
    """
    ds = sets.get(objects.owner_name(pod)) if objects.owner_kind(pod) == "DaemonSet" else None
    if ds is None:
        return f"driver pod {objects.name(pod)} belongs to no driver DaemonSet (an orphan)"
    owner = node_labels.get(operator.DRIVER_OWNER_LABEL, "")
    if ds.owner and owner and ds.owner != owner:
        return f"driver pod {objects.name(pod)} is {ds.owner}'s, the node is owned by {owner}"
    if any_revision:
        return ""
    pod_hash = objects.labels(pod).get(operator.CONTROLLER_REVISION_HASH_LABEL, "")
    if not ds.current_hash or pod_hash != ds.current_hash:
        return f"driver pod {objects.name(pod)} is revision {pod_hash or 'none'}, {ds.name} is at {ds.current_hash}"
    image = objects.container_image(pod.get("spec") or {}, DRIVER_CONTAINER)
    if ds.image and image != ds.image:
        return f"driver pod {objects.name(pod)} runs {image}, {ds.name} declares {ds.image}"
    return ""


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
    #: The operator's driver DaemonSets (by name): which driver pod is current and on the declared image.
    driver_sets: dict[str, DriverDaemonSet] = field(default_factory=dict)
    #: An eviction of one of its pods was refused (429) in the last reconcile.
    eviction_blocked: bool = False
    #: The node's Ready condition is not False/Unknown (as k8s-operator-libs ``isNodeConditionReady`` reads it).
    ready: bool = True
    #: ``status.nodeInfo.bootID`` as the kubelet reports it ("" when it reports none): a new one after every boot,
    #: so also after a VM is replaced under the same Node object (the CUDA proof's identity, with the UID).
    boot_id: str = ""

    @property
    def state(self) -> str:
        return self.labels.get(STATE_LABEL, _IDLE)

    @property
    def operator_state(self) -> str:
        """The GPU Operator's upgrade state of the node ("" when it has none)."""
        return self.labels.get(operator.UPGRADE_STATE_LABEL, "")

    @property
    def operator_holds(self) -> bool:
        """The operator's upgrade controller is upgrading the node (or holds it after a failed upgrade)."""
        return operator.operator_holds(self.labels)

    @property
    def skip_label(self) -> bool:
        """The operator's skip label is on the node (whoever set it): its upgrade controller will not start here."""
        return self.labels.get(operator.UPGRADE_SKIP_LABEL) == operator.UPGRADE_SKIP_VALUE

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
    #: UIDs holding a slot: every node Lease of the pool, and every node whose state holds one (maintenance, a proof).
    holders: frozenset[str]
    #: "node (reason)" of each Lease that halts the pool.
    halted_by: tuple[str, ...]
    #: UIDs of the pool's other unavailable nodes, as the GPU Operator counts them against its own budget
    #: (``GetCurrentUnavailableNodes``: cordoned or NotReady; ``GetUpgradesAvailable``: plus ``cordon-required``):
    #: nodes the operator upgrades, people cordoned, or that are down. They share the one pool budget.
    unavailable: frozenset[str] = frozenset()
    #: Names of the nodes away (the controller's and the others'), sorted, for the waiting nodes' detail.
    away: tuple[str, ...] = ()

    @property
    def room(self) -> int:
        """Slots left: the budget less every unavailable node of the pool, the controller's and the others'."""
        return self.budget - len(self.holders | self.unavailable)


def _record(node: dict[str, Any]) -> Record | None:
    data = objects.json_annotation(node, RECORD_ANNOTATION)
    if not data or data.get("uid") != objects.uid(node):
        return None
    return Record.loads(data)


def lease_uid(lease: dict[str, Any]) -> str:
    return objects.name(lease).removeprefix(NODE_LEASE_PREFIX)


def _ready(node: dict[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return False
    return True


def build_views(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    leases: list[dict[str, Any]],
    operator_namespace: str,
    driver_sets: dict[str, DriverDaemonSet],
    blocked: set[str],
    claims: objects.Claims = None,
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
                    [pod for pod in on_node if objects.is_running_gpu_pod(pod, claims)],
                    key=lambda pod: (pod["metadata"].get("namespace", ""), pod["metadata"]["name"]),
                ),
                smoke_pods=[pod for pod in on_node if objects.labels(pod).get(SMOKE_LABEL)],
                driver_pods=driver_pods,
                lease=lease_by_uid.get(objects.uid(node)),
                driver_sets=driver_sets,
                eviction_blocked=node_name in blocked,
                ready=_ready(node),
                boot_id=str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or ""),
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
        holders |= {view.uid for view in members if view.state in SLOT_HOLDING_STATES}
        halted = tuple(
            sorted(
                f"{objects.annotations_of(lease).get(LEASE_NODE_ANNOTATION, lease_uid(lease))} "
                f"({objects.annotations_of(lease)[LEASE_FAILED_ANNOTATION]})"
                for lease in pool_leases
                if objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION)
            )
        )
        unavailable = frozenset(
            view.uid
            for view in members
            if view.unschedulable
            or not view.ready
            or view.operator_holds
            # waiting in upgrade-required without a skip label: the operator may take it at any moment
            or (view.operator_state == operator.UpgradeState.UPGRADE_REQUIRED and not view.skip_label)
        )
        away = tuple(sorted(view.name for view in members if view.uid in holders or view.uid in unavailable))
        pools[pool] = PoolView(pool, len(members), budget(len(members)), frozenset(holders), halted, unavailable, away)
    return pools
