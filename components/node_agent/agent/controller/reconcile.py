"""One reconcile of the rollout controller: observe everything, decide per node, perform, forget.

Level-triggered: nothing is carried from one reconcile to the next but what the cluster holds (the
records on the Nodes, the Leases) and one hint (which nodes had an eviction refused, for the reason label).
Observation is all-or-nothing: if any list fails, the reconcile does nothing (a partial view could count
fewer nodes in maintenance than there are). Only the holder of the leader Lease acts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from components.catalog.names import GPU_NODE_LABEL
from components.catalog.node_agent import (
    CONTROLLER_LEASE,
    DETAIL_ANNOTATION,
    DRIVER_POD_LABEL,
    EVENT_NAMESPACE,
    EVENT_SOURCE,
    LEASE_FAILED_ANNOTATION,
    LEASE_NODE_ANNOTATION,
    LEASE_POOL_LABEL,
    REQUEST_ANNOTATION,
    SETTINGS_CONFIG_MAP,
    SETTINGS_KEY,
    SLOT_HOLDING_STATES,
    SLOT_STATES,
    SMOKE_LABEL,
    STATE_LABEL,
    State,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    CreateLease,
    CreatePod,
    DeleteLease,
    DeletePod,
    Event,
    Evict,
    PatchNode,
)
from components.node_agent.agent.controller.decide import decide
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.cuda import grant_proofs
from components.node_agent.agent.controller.decisions.halts import orphan_lease_actions
from components.node_agent.agent.controller.decisions.pool_hold import busy_pools, holdable, throttle
from components.node_agent.agent.controller.decisions.slots import wants_slot
from components.node_agent.agent.controller.proving import (
    Judged,
    cuda_of,
    judge_fleet,
    metrics_text,
    prove,
    waiting_reason,
    wants_proof,
)
from components.node_agent.agent.controller.view import (
    NodeView,
    PoolView,
    build_pools,
    build_views,
    driver_daemon_sets,
    lease_uid,
)
from components.node_agent.agent.controller.work import Work, find_work
from components.node_agent.agent.kube import Api, ApiError
from components.node_agent.agent.settings import Settings

#: The leader Lease's ``leaseDurationSeconds``: another replica takes over after seeing it unchanged this long.
LEADER_LEASE_SECONDS = 30


@dataclass
class Controller:
    """The rollout controller; ``reconcile()`` is one pass (the entry point calls it every few seconds)."""

    api: Api
    namespace: str
    identity: str
    now: Callable[[], float]
    log: list[str] = field(default_factory=list)
    #: Nodes where an eviction was refused (429) in the last pass: only the reason label reads it.
    blocked: set[str] = field(default_factory=set)
    #: The leader Lease as last seen (holder, renewTime) and when this replica first saw it so (its own clock):
    #: another holder's Lease expires only after it stayed unchanged for its duration, observed here.
    seen_leader: tuple[str, str] = ("", "")
    seen_leader_at: float = 0.0
    #: When this replica last renewed (or took) the leader Lease, on its own clock; None: it does not lead.
    renewed_at: float | None = None
    #: When this replica first saw each time mark of each node's record, and each request (its own clock).
    seen_marks: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: The leader Lease as this replica last wrote it (renewed with its resourceVersion: one request).
    own_lease: dict[str, Any] | None = None
    #: The last pass saw a node in maintenance or an executor request unanswered (see ``busy``).
    active: bool = False
    #: The gauges' text (``/metrics``) as the last pass that observed the fleet counted it; "" before the first.
    metrics: str = ""

    # -- leader election ---------------------------------------------------------------------------------
    def lead(self, settings: Settings) -> bool:
        """Hold the leader Lease (create, renew, or take over an expired one; a 409 means someone else).

        As client-go's leader election does it: another holder's Lease is expired only when this replica has seen
        it unchanged for its ``leaseDurationSeconds`` on its own clock; the holder's ``renewTime`` (written on the
        holder's clock) is never compared with this one's.
        """
        now = self.now()
        if self.own_lease is not None:
            # Renewing the Lease it wrote last, with that resourceVersion: one request; a 409 (someone else wrote
            # it since) falls back to reading it.
            try:
                self.own_lease = self.api.replace_lease(self.namespace, self._leader_lease(now, self.own_lease))
                self.renewed_at = now
                return True
            except ApiError as error:
                self.own_lease = None
                if error.status != 409:
                    self.log.append(f"leader: {error}")
                    self.renewed_at = None
                    return False
        try:
            try:
                lease = self.api.get_lease(self.namespace, CONTROLLER_LEASE)
            except ApiError as error:
                if error.status != 404:
                    raise
                self.own_lease = self.api.create_lease(self.namespace, self._leader_lease(now, None))
                self.renewed_at = now
                return True
            spec = lease.get("spec") or {}
            holder = str(spec.get("holderIdentity", ""))
            observed = (holder, str(spec.get("renewTime", "")))
            if observed != self.seen_leader:
                self.seen_leader, self.seen_leader_at = observed, now
            duration = float(spec.get("leaseDurationSeconds") or settings.leader_lease_seconds)
            if holder != self.identity and now - self.seen_leader_at <= duration:
                self.renewed_at = None
                return False
            self.own_lease = self.api.replace_lease(self.namespace, self._leader_lease(now, lease))
            self.renewed_at = now
            return True
        except ApiError as error:
            self.log.append(f"leader: {error}")
            self.renewed_at = None
            return False

    @property
    def busy(self) -> bool:
        """A node is in maintenance, or waits for an executor's answer: passes must come often enough for its
        timeouts, whether anything changes or not."""
        return self.active

    def leading(self) -> bool:
        """This replica may write: it renewed the leader Lease within two thirds of its duration, by its own clock
        (client-go's renew deadline). A replica that was paused (a GC pause, a frozen node) wakes up past it and
        writes nothing with its old view."""
        if self.renewed_at is None:
            return False
        return self.now() - self.renewed_at < LEADER_LEASE_SECONDS * 2 / 3

    def _leader_lease(self, now: float, old: dict[str, Any] | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": CONTROLLER_LEASE, "namespace": self.namespace}
        if old is not None:
            metadata["resourceVersion"] = old["metadata"]["resourceVersion"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": LEADER_LEASE_SECONDS,
                "renewTime": objects.micro_time(now),
            },
        }

    # -- one pass ----------------------------------------------------------------------------------------
    def renew(self) -> bool:
        """Between passes: only the leader Lease (a replica that stops renewing loses it to another)."""
        try:
            return self.lead(self.settings())
        except (ApiError, ValueError) as error:
            self.log.append(f"settings: {error}")
            return False

    def settings(self) -> Settings:
        config_map = self.api.get_config_map(self.namespace, SETTINGS_CONFIG_MAP)
        return Settings.from_json(json.loads((config_map.get("data") or {}).get(SETTINGS_KEY, "{}")))

    def reconcile(self) -> bool:
        """One pass; False when it could not observe or does not lead (it then changed nothing)."""
        try:
            settings = self.settings()
        except (ApiError, ValueError) as error:
            self.log.append(f"settings: {error}")
            return False
        if not self.lead(settings):
            return False
        now = self.now()
        try:
            nodes = self.api.list_nodes(f"{GPU_NODE_LABEL}=true")
            leases = self.api.list_leases(self.namespace, LEASE_POOL_LABEL)
            key, value = DRIVER_POD_LABEL
            daemon_sets = self.api.list_daemon_sets(settings.operator_namespace, f"{key}={value}")
            revisions = self.api.list_controller_revisions(settings.operator_namespace, "") if daemon_sets else []
            pods = self._pods(nodes, leases, settings)
        except ApiError as error:
            self.log.append(f"observe: {error}")
            return False
        claims = self._claims(nodes, pods)
        sets = driver_daemon_sets(daemon_sets, revisions)
        views = build_views(nodes, pods, leases, settings.operator_namespace, sets, self.blocked, claims)
        pools = build_pools(views, leases, settings.budget)
        self.active = any(
            view.state in SLOT_HOLDING_STATES
            or (view.request.get("id") and view.report.get("id") != view.request.get("id"))
            for view in views
        )
        ages = self._ages(views, now)
        works = {view.name: self._work(view, settings, ages[view.uid].get("request", 0.0)) for view in views}
        judged = self._judge(views, nodes, settings)
        wanting = self._wanting(views, works, judged, ages, settings)
        granted = grant(views, works, pools)
        proofs = grant_proofs(views, pools, wanting, granted)
        busy = busy_pools(views, works, pools)
        blocked: set[str] = set()
        written: set[str] = set()  # nodes a decision patched this pass: their resourceVersion is no longer the view's
        for view in sorted(views, key=lambda item: item.name):
            if not view.pool:  # not a node of a managed pool: the controller may not write to it at all
                continue
            declared = judged[view.name][0] if view.name in judged else None
            ctx = Context(
                settings,
                now,
                self.namespace,
                pools.get(view.pool),
                view.name in granted,
                ages[view.uid],
                proof=view.name in proofs,
                declaration=declared,
                hold_operator=view.pool in busy and holdable(view),
            )
            try:
                actions = decide(view, works[view.name], ctx)
            except Exception as error:  # one node's unreadable data must not stop every pool
                self.log.append(f"{view.name}: no decision ({type(error).__name__}: {error}); the others go on")
                continue
            if settings.dry_run:
                actions = dry_run(view, actions)
            if any(isinstance(action, PatchNode) for action in actions):
                written.add(view.name)
            self.perform(actions, blocked)
            halt = _halt_in(actions)
            if halt and view.pool in pools:
                # The rest of this pass sees the halt: no node of the pool is admitted or touched after it.
                pool = pools[view.pool]
                pools[view.pool] = replace(pool, halted_by=(*pool.halted_by, f"{view.name} ({halt})"))
                granted -= {other.name for other in views if other.pool == view.pool and other.uid not in pool.holders}
                proofs -= {other.name for other in views if other.pool == view.pool}
        waiting = {
            view.name: waiting_reason(view, pools.get(view.pool)) for view in views if view.name in wanting - proofs
        }
        # The operator held off the pools the controller works on, before the proof's records: a record written first
        # would make the hold's write (computed from the same view) a conflict, and leave the node to the operator for
        # a pass. Each write on its own: one conflict stops no other node's hold. (A node a decision wrote this pass
        # is held at the next: its view is no longer current.)
        holds = [action for action in throttle(views, works, pools) if getattr(action, "node", "") not in written]
        for action in holds:
            self.perform([action], blocked)
        written |= {action.node for action in holds if isinstance(action, PatchNode)}
        self._prove(views, judged, now, written, waiting, blocked)
        live = {view.uid for view in views}
        for lease in leases:
            self.perform(orphan_lease_actions(lease, live), blocked)
        self.perform(smoke_cleanup(views, pods, self.namespace), blocked)
        self.blocked = blocked
        return True

    def _judge(self, views: list[NodeView], nodes: list[dict[str, Any]], settings: Settings) -> Judged:
        """The evidence of every node of a declared pool (``proving``), judged before the decisions: a node whose
        evidence passes and whose identity is not CUDA-proven wants a slot for its proof."""
        try:
            return judge_fleet(views, {objects.name(node): node for node in nodes}, settings)
        except Exception as error:  # the proof must never stop the rollouts
            self.log.append(f"proof: not judged ({type(error).__name__}: {error})")
            return {}

    def _wanting(
        self,
        views: list[NodeView],
        works: dict[str, Work],
        judged: Judged,
        ages: dict[str, dict[str, float]],
        settings: Settings,
    ) -> set[str]:
        """The nodes that want their CUDA proof now (``proving.wants_proof``)."""
        wanting: set[str] = set()
        for view in views:
            if view.name not in judged or not view.pool:
                continue
            try:
                judgement = judged[view.name][1]
                if wants_proof(view, works[view.name], judgement, ages[view.uid].get("proof", 0.0), settings):
                    wanting.add(view.name)
            except Exception as error:  # as in ``decide``: contained to the node
                self.log.append(f"{view.name}: no proof decided ({type(error).__name__}: {error})")
        return wanting

    def _prove(
        self,
        views: list[NodeView],
        judged: Judged,
        now: float,
        written: set[str],
        waiting: dict[str, str],
        blocked: set[str],
    ) -> None:
        """The continuous proof's records (``proving``): the evidence, and why a node waits for its CUDA proof, written
        where they changed (each write on its own: one conflict stops no other), and the gauges counted."""
        try:
            proving = prove(views, judged, now, written, waiting)
        except Exception as error:  # the proof must never stop the rollouts
            self.log.append(f"proof: not recorded ({type(error).__name__}: {error})")
            return
        for patch in proving.patches:
            self.perform([patch], blocked)
        self.metrics = metrics_text(proving.counts)

    def _pods(
        self, nodes: list[dict[str, Any]], leases: list[dict[str, Any]], settings: Settings
    ) -> list[dict[str, Any]]:
        """The pods a decision reads: the operator's driver pods, the controller's smoke pods, and every pod of the
        nodes in maintenance (those with a slot state or a Lease), listed per node by ``spec.nodeName``.

        Never every pod of the cluster: a node outside maintenance needs no pod to be decided on (its GPU pods are
        looked at only once it holds a slot), so an idle fleet costs no pod request, and a rollout costs one list
        per node it holds per pass.
        """
        key, value = DRIVER_POD_LABEL
        pods = self.api.list_namespaced_pods(settings.operator_namespace, f"{key}={value}")
        pods += self.api.list_namespaced_pods(self.namespace, SMOKE_LABEL)
        held = {lease_uid(lease) for lease in leases}
        for node in nodes:
            state = objects.labels(node).get(STATE_LABEL)
            if state in SLOT_STATES or (objects.uid(node) in held and state != State.PROVING):
                # (a CUDA proof needs only its smoke pods, listed above: no list of its node's pods)
                pods += self.api.list_pods_on(objects.name(node))
        unique = {(pod["metadata"].get("namespace", ""), objects.name(pod)): pod for pod in pods}
        return list(unique.values())

    def _ages(self, views: list[NodeView], now: float) -> dict[str, dict[str, float]]:
        """Per node, seconds since this replica first saw each time mark of its record and its current request.

        The marks are only identities here (whoever wrote them, on whatever clock): what is measured is how long
        this replica has observed them. A replica that starts anew sees them afresh, so a restart can only make a
        wait longer, never cut one short.
        """
        seen: dict[tuple[str, str, str], float] = {}
        ages: dict[str, dict[str, float]] = {}
        for view in views:
            marks = {"request": str(view.request.get("id", ""))}
            if view.record is not None:
                for mark in ("since", "step_at", "evicting_since", "proof_since"):
                    marks[mark] = repr(getattr(view.record, mark))
            marks["proof"] = str(cuda_of(view).get("at", ""))  # a CUDA proof given back is tried again later
            ages[view.uid] = {}
            for mark, value in marks.items():
                key = (view.uid, mark, value)
                seen[key] = self.seen_marks.get(key, now)
                ages[view.uid][mark] = now - seen[key]
        self.seen_marks = seen
        return ages

    def _work(self, view: NodeView, settings: Settings, asked: float) -> Work:
        try:
            return find_work(view, settings, asked)
        except Exception as error:  # as in ``decide``: contained to the node
            self.log.append(f"{view.name}: no work read ({type(error).__name__}: {error})")
            return Work()

    def _claims(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> objects.Claims:
        """The ResourceClaims, read only when a pod on a GPU node holds one; None when they cannot be read
        (every claim then counts as a GPU claim, as the GPU Operator treats a claim it cannot read)."""
        gpu_nodes = {objects.name(node) for node in nodes}
        if not any((pod.get("spec") or {}).get("nodeName") in gpu_nodes and objects.claim_names(pod) for pod in pods):
            return {}
        try:
            items = self.api.list_resource_claims()
        except ApiError as error:
            self.log.append(f"resource claims: {error}; every claimed pod counts as a GPU pod")
            return None
        return {f"{item['metadata'].get('namespace', '')}/{objects.name(item)}": item for item in items}

    # -- performing --------------------------------------------------------------------------------------
    def perform(self, actions: list[Action], blocked: set[str]) -> None:
        """In order; stop at the first failure (the next pass computes the rest again), and before any write made
        without a leadership this replica renewed recently (``leading``): every write is fenced."""
        for action in actions:
            if not self.leading():
                self.log.append(f"{type(action).__name__}: not written, this replica's leadership is not current")
                return
            try:
                self._do(action)
            except ApiError as error:
                if isinstance(action, Evict) and error.status in (404, 429):
                    if error.status == 429:
                        blocked.add(action.node)
                    continue  # gone, or a PDB: the other evictions still go
                if isinstance(action, Event):
                    continue  # an Event is best effort; the node's labels are the record
                if isinstance(action, (CreateLease, CreatePod)) and error.status == 409:
                    continue  # already there: what we wanted
                if isinstance(action, CreateLease) and action.on_refused is not None and error.status != 0:
                    self._say_refused(action.on_refused, error)
                if isinstance(action, (DeleteLease, DeletePod)) and error.status == 404:
                    continue  # already gone: what we wanted
                self.log.append(f"{type(action).__name__}: {error}")
                return

    def _say_refused(self, patch: PatchNode, error: ApiError) -> None:
        """The node says why it has no slot (best effort: the next pass tries the Lease, and says it, again)."""
        body = json.loads(json.dumps(patch.patch))
        notes = body["metadata"].setdefault("annotations", {})
        notes[DETAIL_ANNOTATION] = f"{notes.get(DETAIL_ANNOTATION, '')}: {error.message}"[:1000]
        try:
            self._do(PatchNode(patch.node, body, patch.why))
        except ApiError as failed:
            self.log.append(f"PatchNode (slot refused): {failed}")

    def _do(self, action: Action) -> None:
        api, ns = self.api, self.namespace
        if isinstance(action, PatchNode):
            api.patch_node(action.node, action.patch)
        elif isinstance(action, CreateLease):
            api.create_lease(ns, node_lease(action, ns, self.now()))
        elif isinstance(action, AnnotateLease):
            lease = api.get_lease(ns, action.name)
            lease.setdefault("metadata", {}).setdefault("annotations", {}).update(action.annotations)
            api.replace_lease(ns, lease)
        elif isinstance(action, DeleteLease):
            api.delete_lease(ns, action.name, action.resource_version)
        elif isinstance(action, Evict):
            api.evict(action.namespace, action.pod)
        elif isinstance(action, CreatePod):
            api.create_pod(ns, action.pod)
        elif isinstance(action, DeletePod):
            api.delete_pod(action.namespace, action.pod)
        elif isinstance(action, Event):
            api.create_event(EVENT_NAMESPACE, event(action, self.now()))


def grant(views: list[NodeView], works: dict[str, Work], pools: dict[str, PoolView]) -> set[str]:
    """Which waiting nodes take a slot now: per pool, in name order, while the pool's budget has room.

    The budget is shared with everything else that takes a node of the pool away: the GPU Operator's upgrades,
    cordons by people, NotReady nodes (``PoolView.room``). A node whose Lease already exists (fenced, or its
    cordon write failed last time) or that is already unavailable for another reason is counted already, so it
    needs no free slot, only a budget not exceeded: the operator may have taken another node of the pool since
    (its view had no cordon to count), and then the node waits and gives its Lease back. A node the operator's
    upgrade controller holds is never admitted; a halted pool admits nobody; a node without a pool label is never
    admitted.
    """
    granted: set[str] = set()
    for name, pool in sorted(pools.items()):
        if pool.halted_by:
            continue
        room = pool.room
        for view in sorted((v for v in views if v.pool == name), key=lambda item: item.name):
            if not wants_slot(view, works[view.name]) or view.operator_holds:
                continue
            if (view.uid in pool.holders or view.uid in pool.unavailable) and room >= 0:
                granted.add(view.name)
            elif room > 0:
                granted.add(view.name)
                room -= 1
    return granted


def _halt_in(actions: list[Action]) -> str:
    """The reason of the halt ``actions`` write (a node's Lease marked failed), or ""."""
    for action in actions:
        if isinstance(action, (AnnotateLease, CreateLease)) and action.annotations.get(LEASE_FAILED_ANNOTATION):
            return action.annotations[LEASE_FAILED_ANNOTATION]
    return ""


def dry_run(view: NodeView, actions: list[Action]) -> list[Action]:
    """Dry run: only inspections and a ``would ...`` detail; no cordon, eviction, Lease or label change."""
    kept: list[Action] = []
    would = []
    for action in actions:
        if isinstance(action, PatchNode) and set(action.patch["metadata"].get("annotations") or {}) == {
            REQUEST_ANNOTATION
        }:
            kept.append(action)
        elif not isinstance(action, Event):
            would.append(action)
    if would and not kept:
        first = would[0]
        text = f"dry run: would {first.why if isinstance(first, PatchNode) else type(first).__name__}"[:1000]
        if view.annotations.get(DETAIL_ANNOTATION) != text:
            kept.append(
                PatchNode(
                    view.name, {"metadata": {"resourceVersion": view.rv, "annotations": {DETAIL_ANNOTATION: text}}}
                )
            )
    return kept


def smoke_cleanup(views: list[NodeView], pods: list[dict[str, Any]], namespace: str) -> list[Action]:
    """Smoke pods of a node no longer smoke-testing or proving (or gone) are deleted."""
    testing = {view.uid for view in views if view.state in (State.SMOKE_TESTING, State.PROVING)}
    return [
        DeletePod(namespace, objects.name(pod))
        for pod in pods
        if pod["metadata"].get("namespace") == namespace
        and objects.labels(pod).get(SMOKE_LABEL)
        and objects.labels(pod)[SMOKE_LABEL] not in testing
        and not objects.terminating(pod)
    ]


def node_lease(action: CreateLease, namespace: str, now: float) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": action.name,
            "namespace": namespace,
            "labels": {LEASE_POOL_LABEL: action.pool},
            "annotations": {LEASE_NODE_ANNOTATION: action.node, **action.annotations},
        },
        "spec": {"holderIdentity": action.node, "acquireTime": objects.micro_time(now)},
    }


def event(action: Event, now: float) -> dict[str, Any]:
    stamp = objects.format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{action.node}.node-agent.", "namespace": EVENT_NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": action.node, "uid": action.uid},
        "reason": action.reason,
        "message": action.message[:1024],
        "type": "Warning" if action.warning else "Normal",
        "source": {"component": EVENT_SOURCE},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
