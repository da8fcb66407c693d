"""The CUDA proof of one node (state ``proving``): a slot of its pool's budget, its smoke pods, the result recorded.

A node that joins a pool, or comes back under a new identity (its ``metadata.uid``: a node the cloud recreates under
the same name is a new Node object), is proven against the pool's current declaration without waiting for a
``pulumi up``: once its evidence passes (``proving.wants_proof``), it takes a slot like the rollout flows do (its
Lease first: the one budget of the pool, shared with the flows, the GPU Operator's upgrades, cordoned and NotReady
nodes), and the controller's smoke pod runs on it, one per resource the node should advertise
(``controller/smoke.py``: Pod Security restricted, the program's PriorityClass, the operator's RuntimeClass).

The rules, and why (docs/node-agent.md, "Continuous proof"):

- **No cordon while it runs.** Nothing on the node changes: the smoke pods only hold one device of each resource for
  a few seconds, beside the node's workloads. A node with no free device left rejects them at the kubelet's
  admission (``OutOf<resource>``): the proof is given back (``deferred``) and tried again later, never failed for it.
- **A halted pool proves no new node** (``grant_proofs``); a proof already running when a halt lands finishes (it
  changes nothing the halt protects).
- **A failure does not halt the pool.** A halt stops the rollouts after a node they changed broke; the proof changed
  nothing, like the failures before a node is touched (``eviction-timeout``), which do not halt either. The node is
  ``failed`` with ``cuda-proof-failed`` and the pod's reason, its Lease goes, and it is cordoned only where
  ``cordonOnProofFailure`` says so (then a retry lifts that cordon, and only that one).
- **Level-triggered.** Every step is computed again from the node, its record and its pods at each pass; the timeout
  is measured from when this replica first saw the proof's start in the record (its own clock).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    NO_FREE_DEVICE_PREFIX,
    SMOKE_LABEL,
    THROTTLE_ANNOTATION,
    UPGRADE_SKIP_LABEL,
    Reason,
    State,
    node_lease_name,
    retry_command,
)
from components.catalog.proof import PROOF_ANNOTATION, CudaResult
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import Action, CreateLease, CreatePod, DeletePod
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.release import delete_lease_after
from components.node_agent.agent.controller.decisions.writes import move, node_event
from components.node_agent.agent.controller.proving import cuda_entry, proof_resources, with_cuda
from components.node_agent.agent.controller.smoke import proof_pod_name, smoke_pod
from components.node_agent.agent.controller.view import NodeView, PoolView, Record
from components.node_agent.agent.controller.work import Work


def grant_proofs(views: list[NodeView], pools: dict[str, PoolView], wanting: set[str], granted: set[str]) -> set[str]:
    """Which nodes take a slot for their CUDA proof now: per pool, after the rollouts' nodes (``granted`` by
    ``reconcile.grant``), in name order, while the pool's budget has room; never in a halted pool. As for the flows, a
    node already away (cordoned) is counted already and needs no free slot, only a budget not exceeded."""
    proofs: set[str] = set()
    for name, pool in sorted(pools.items()):
        if pool.halted_by:
            continue
        members = sorted((view for view in views if view.pool == name), key=lambda item: item.name)
        away = pool.holders | pool.unavailable
        room = pool.room - sum(1 for view in members if view.name in granted and view.uid not in away)
        for view in members:
            if view.name not in wanting:
                continue
            if view.uid in pool.unavailable and room >= 0:
                proofs.add(view.name)
            elif room > 0:
                proofs.add(view.name)
                room -= 1
    return proofs


def start_proof(view: NodeView, ctx: Context) -> list[Action]:
    """Take the slot (the Lease first: it counts), move to ``proving`` with the proof in the record (one write,
    with the resourceVersion), then create the smoke pods. Not cordoned."""
    previous = view.record or Record(uid=view.uid)
    record = replace(
        previous,
        uid=view.uid,
        proof_attempt=previous.proof_attempt + 1,
        proof_since=ctx.now,
        proof_from=view.state,
        proof_cordoned=False,
    )
    resources = proof_resources(view, ctx.settings, ctx.declaration)
    detail = (
        f"CUDA proof of {view.name} (UID {view.uid}, boot {view.boot_id or '-'}): one smoke pod on one device of "
        f"each of {', '.join(resources)}; not cordoned"
    )
    labels: dict[str, str | None] = {}
    notes: dict[str, str | None] = {}
    if ctx.hold_operator:
        # The pool is busy with a rollout: the operator is held off this node as off every other one it manages
        # (``pool_hold``); in this write, since the throttle's own write would conflict with it in this pass.
        labels[UPGRADE_SKIP_LABEL] = operator.UPGRADE_SKIP_VALUE
        notes[THROTTLE_ANNOTATION] = "true"
    return [
        CreateLease(node_lease_name(view.uid), view.pool, view.name),
        move(view, record, State.PROVING, detail, keep_request=True, labels=labels or None, annotations=notes or None),
        *_pods(view, record, resources, ctx, present=set()),
    ]


def on_proving(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    """The proof under way: pass, fail, give back, or create the pods that are missing (``work``: a flow that arrives
    meanwhile waits for the proof, a few seconds)."""
    record = view.record
    if record is None or not record.proof_attempt:
        # The record was removed or replaced by hand: nothing of this proof is known; it starts over from idle.
        return _back(view, Record(uid=view.uid), "the proof's record is gone: the proof starts over", None)
    prelude: list[Action] = []
    if view.lease is None:  # deleted by hand: the slot is still taken (the state holds it), and says so again
        prelude.append(CreateLease(node_lease_name(view.uid), view.pool, view.name))
    pool = ctx.declaration
    if pool is None:
        return _back(view, record, f"the pool {view.pool} has no declaration any more: proof stopped", None)
    if view.operator_holds:
        return _defer(view, record, ctx, "the GPU Operator's upgrade controller took the node")
    if not view.ready:
        return _defer(view, record, ctx, "the node is not Ready")
    resources = proof_resources(view, ctx.settings, pool)
    wanted = {proof_pod_name(view, record, index) for index in range(len(resources))}
    present = {objects.name(pod): pod for pod in view.smoke_pods if objects.labels(pod).get(SMOKE_LABEL) == view.uid}
    mine = [present[name] for name in sorted(wanted) if name in present]
    rejected = [
        pod for pod in mine if _phase(pod) == "Failed" and _status(pod, "reason").startswith(NO_FREE_DEVICE_PREFIX)
    ]
    if rejected:
        pod = rejected[0]
        why = f"no free device for smoke pod {objects.name(pod)} ({pod_failure(pod)})"
        return _defer(view, record, ctx, why)
    failed = [pod for pod in mine if _phase(pod) == "Failed"]
    if failed:
        return fail_proof(view, record, f"smoke pod {objects.name(failed[0])} failed: {pod_failure(failed[0])}", ctx)
    if len(mine) == len(wanted) and all(_phase(pod) == "Succeeded" for pod in mine):
        what = f"nvidia-smi -L on one device of each of {', '.join(resources)}"
        cuda = cuda_entry(view, CudaResult.PASSED, what, ctx.now, pool)
        return _back(view, record, f"CUDA proof passed: {what}", cuda)
    if ctx.age("proof_since") > ctx.settings.smoke_timeout_seconds:
        phases = ", ".join(f"{objects.name(pod)} {_phase(pod)}" for pod in mine) or "no pod created"
        limit = ctx.settings.smoke_timeout_seconds
        why = f"the smoke pods did not finish within smokeTimeoutSeconds ({limit:.0f} s): {phases}"
        return fail_proof(view, record, why, ctx)
    stale = [
        DeletePod(ctx.namespace, name)
        for name, pod in sorted(present.items())
        if name not in wanted and not objects.terminating(pod)
    ]
    return prelude + stale + _pods(view, record, resources, ctx, present=set(present))


def fail_proof(view: NodeView, record: Record, detail: str, ctx: Context) -> list[Action]:
    """``failed`` with ``cuda-proof-failed`` and the pod's reason, in the node's state, detail and proof record, and an
    Event; the Lease goes (no halt: nothing was changed). Cordoned in the same write only with
    ``cordonOnProofFailure``, and only if it was schedulable (what it was is observed in that very write)."""
    cordon = ctx.settings.cordon_on_proof_failure and not view.unschedulable
    record = replace(record, proof_cordoned=cordon, was_unschedulable=view.unschedulable)
    cuda = cuda_entry(view, CudaResult.FAILED, detail, ctx.now, ctx.declaration)
    where = "cordoned (nodeAgent.cordonOnProofFailure)" if cordon else "not cordoned"
    text = (
        f"{Reason.PROOF_FAILED.value}: {detail}; nothing was changed on the node and the pool does not halt; {where}; "
        f"after fixing it: `{retry_command(view.name)}`"
    )
    actions: list[Action] = [
        move(
            view,
            record,
            State.FAILED,
            text,
            reason=Reason.PROOF_FAILED,
            keep_request=True,
            spec={"unschedulable": True} if cordon else None,
            annotations={PROOF_ANNOTATION: with_cuda(view, cuda)},
        ),
        node_event(view, "ProofFailed", text, True),
    ]
    return actions + delete_lease_after(view)


def pod_failure(pod: dict[str, Any]) -> str:
    """What the kubelet says about a failed pod: its reason and message, each container's exit code and reason."""
    parts = [_status(pod, "reason")]
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        ended = (container.get("state") or {}).get("terminated") or {}
        if ended:
            said = f": {ended['message']}" if ended.get("message") else ""
            parts.append(
                f"container {container.get('name', '?')} exited {ended.get('exitCode', '?')} "
                f"({ended.get('reason') or 'no reason'}){said}"
            )
    parts.append(_status(pod, "message"))
    return "; ".join(part for part in parts if part)[:400] or "the kubelet gave no reason"


def _status(pod: dict[str, Any], key: str) -> str:
    return str((pod.get("status") or {}).get(key) or "")


def _phase(pod: dict[str, Any]) -> str:
    return _status(pod, "phase") or "Pending"


def _origin(record: Record) -> State:
    """The state the node goes back to after its proof: where it was (idle, or done after a flow)."""
    return State.DONE if record.proof_from == State.DONE else State.IDLE


def _pods(view: NodeView, record: Record, resources: list[str], ctx: Context, present: set[str]) -> list[Action]:
    return [
        CreatePod(
            smoke_pod(
                view,
                record,
                index,
                resource,
                ctx.namespace,
                ctx.settings.runtime_class,
                name=proof_pod_name(view, record, index),
            )
        )
        for index, resource in enumerate(resources)
        if proof_pod_name(view, record, index) not in present
    ]


def _back(view: NodeView, record: Record, detail: str, cuda: dict[str, Any] | None) -> list[Action]:
    """Back where it was, the CUDA result (if any) in the proof record, in one write; then the Lease goes (the smoke
    pods are deleted by the reconcile's clean-up once the node is no longer proving)."""
    notes: dict[str, str | None] | None = {PROOF_ANNOTATION: with_cuda(view, cuda)} if cuda is not None else None
    actions: list[Action] = [move(view, record, _origin(record), detail, keep_request=True, annotations=notes)]
    return actions + delete_lease_after(view)


def _defer(view: NodeView, record: Record, ctx: Context, why: str) -> list[Action]:
    """Given back before it could finish, without a verdict: tried again ``proof_retry_seconds`` later."""
    retry = ctx.settings.proof_retry_seconds
    cuda = cuda_entry(view, CudaResult.DEFERRED, f"{why}; tried again in about {retry:.0f} s", ctx.now, ctx.declaration)
    return _back(view, record, f"CUDA proof given back: {why}", cuda)
