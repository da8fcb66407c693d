"""The continuous proof: every GPU node of a pool, judged against its pool's declaration at every pass.

A node that joins a pool, or comes back after a replacement, is proven without waiting for a ``pulumi up``, in two
halves:

- **Evidence**, at every pass: the rollout controller already observes the nodes, the operator's driver pods and
  the driver DaemonSets with their ControllerRevisions, and judges each node with the SAME rules as the proof Job of
  a driver step (``components/catalog/proof.py``: ``driver_evidence``, ``mig_evidence``).
- **CUDA**, once per node identity (its ``metadata.uid`` and ``status.nodeInfo.bootID``: a node recreated under the
  same name is another Node object; a VM replaced under the same object, or rebooted, boots anew): a node whose
  evidence passes and whose identity has no passed CUDA proof is taken into state ``proving`` within its pool's
  budget, where its smoke pods run (``decisions/cuda.py``); a halted pool proves no new node.

The result is recorded on the node (``PROOF_ANNOTATION``: the evidence, and under ``cuda`` the CUDA proof of its
identity), where ``tools/status`` and the alerts read it, and written only when something in it differs from the
record the node carries: an idle fleet costs no write. A failed evidence records and the alert tells; it never
cordons. The same judgements give the per-pool gauges the controller serves on ``/metrics``: a node is
``conformant`` only when its evidence passes AND its identity's CUDA proof passed; evidence that passes without that
is ``unproven``.

Standard library only: it ships in the node agent's code ConfigMap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components.catalog.node_agent import (
    FLEET_METRIC,
    MIG_STATE_LABEL,
    MIG_STATE_PENDING,
    MIG_STATE_REBOOTING,
    SLOT_STATES,
    FleetVerdict,
    State,
)
from components.catalog.proof import (
    FAILED,
    PASSED,
    PROOF_ANNOTATION,
    CudaResult,
    PoolProof,
    driver_evidence,
    mig_evidence,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import PatchNode
from components.node_agent.agent.controller.view import NodeView, PoolView
from components.node_agent.agent.controller.work import Work, planned_resources
from components.node_agent.agent.settings import Settings


@dataclass(frozen=True)
class Judgement:
    """One node against its pool's declaration: ``passed``, or ``failed`` with the first reason found."""

    result: str
    reason: str
    driver: str  #: the declared driver version it was judged against ("" where the hosts own the driver)
    mig: str  #: the declared MIG config ("" where the pool is not re-partitioned)

    def same_as(self, record: Mapping[str, Any]) -> bool:
        """The node already carries this judgement (its time aside)."""
        return (
            record.get("result") == self.result
            and (record.get("reason") or "") == self.reason
            and (record.get("driver") or "") == self.driver
            and (record.get("mig") or "") == self.mig
        )

    def fields(self, now: float) -> dict[str, Any]:
        return {
            "result": self.result,
            "at": objects.format_time(now),
            "reason": self.reason,
            "driver": self.driver,
            "mig": self.mig,
        }

    def record(self, now: float) -> str:
        return dumps(self.fields(now))


def dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def read_record(view: NodeView) -> dict[str, Any]:
    """The node's proof record as it carries it ({} when it has none, or one that cannot be read)."""
    return objects.json_annotation({"metadata": {"annotations": view.annotations}}, PROOF_ANNOTATION)


def cuda_of(view: NodeView) -> dict[str, Any]:
    """The CUDA proof the node's record holds for the node as it is now, its identity: its UID (a Node object recreated
    under the same name is another) and its boot ID (a VM replaced under the same Node object, which the kubelet
    registers again, or any reboot, boots anew); {} when none: never proven, or proven as another node."""
    cuda = read_record(view).get("cuda")
    if not isinstance(cuda, dict) or cuda.get("uid") != view.uid or (cuda.get("boot_id") or "") != view.boot_id:
        return {}
    return cuda


def cuda_passed(view: NodeView) -> bool:
    return cuda_of(view).get("result") == CudaResult.PASSED


def cuda_entry(view: NodeView, result: CudaResult, reason: str, now: float, pool: PoolProof | None) -> dict[str, Any]:
    """The ``cuda`` part of the record: this identity (UID, boot ID), the result and its reason, when, and what was
    declared then."""
    return {
        "uid": view.uid,
        "boot_id": view.boot_id,
        "result": result.value,
        "at": objects.format_time(now),
        "reason": reason[:500],
        "driver": pool.driver_version if pool is not None else "",
        "mig": pool.mig_config if pool is not None else "",
    }


def with_cuda(view: NodeView, cuda: Mapping[str, Any]) -> str:
    """The node's proof record with its ``cuda`` part replaced, its evidence kept as it is."""
    return dumps({**read_record(view), "cuda": dict(cuda)})


def same_cuda(view: NodeView, cuda: Mapping[str, Any]) -> bool:
    """The node already carries this CUDA result for its identity (its time aside)."""
    current = cuda_of(view)
    return bool(current) and all(current.get(key, "") == cuda.get(key, "") for key in ("result", "reason"))


def declaration(settings: Settings, view: NodeView) -> PoolProof | None:
    """The node's pool's declaration (by node name first: a bare-metal node is its own pool); None: none."""
    data = settings.declarations.get(view.name) or settings.declarations.get(view.pool)
    if not data or not (data.get("driver_version") or data.get("mig_config")):
        return None
    return PoolProof(
        pool=view.pool,
        selector={},
        tolerations=[],
        resource="",
        driver_version=str(data.get("driver_version") or ""),
        driver_image=str(data.get("driver_image") or ""),
        owner=str(data.get("owner") or ""),
        mig_config=str(data.get("mig_config") or ""),
        mig_resources={str(k): int(v) for k, v in dict(data.get("mig_resources") or {}).items()},
    )


def in_maintenance(view: NodeView) -> bool:
    """Someone changes the node on purpose now: the node agent (a slot state), the operator's upgrade controller,
    or mig-manager applying a layout. Its evidence lags on purpose: it is not judged until it is back."""
    return (
        view.state in SLOT_STATES
        or view.operator_holds
        or view.labels.get(MIG_STATE_LABEL) in (MIG_STATE_PENDING, MIG_STATE_REBOOTING)
    )


def judge(node: dict[str, Any], view: NodeView, pool: PoolProof) -> Judgement:
    """The node against ``pool``, by the proof Job's rules: its driver pod current (the DaemonSet's newest
    ControllerRevision), Ready and on the declared image, GPU Feature Discovery's version, the owning NVIDIADriver;
    then its MIG config, mig-manager's answer and exactly the planned resources."""
    revisions = {name: ds.current_hash for name, ds in view.driver_sets.items()}
    why = driver_evidence(node, view.driver_pods, revisions, pool) if pool.driver_version else ""
    why = why or mig_evidence(node, pool)
    return Judgement(FAILED if why else PASSED, why, pool.driver_version, pool.mig_config)


def proof_patch(
    view: NodeView, judgement: Judgement | None, now: float, cuda: Mapping[str, Any] | None = None
) -> PatchNode | None:
    """The write of the judgement (and of ``cuda``, a new CUDA part) on the node, with its resourceVersion; None when
    it carries both already. Whatever part is not new is kept as the node carries it."""
    record = read_record(view)
    evidence_new = judgement is not None and not judgement.same_as(record)
    cuda_new = cuda is not None and not same_cuda(view, cuda)
    if not (evidence_new or cuda_new):
        return None
    merged = dict(record)
    if evidence_new and judgement is not None:
        merged.update(judgement.fields(now))
    if cuda_new and cuda is not None:
        merged["cuda"] = dict(cuda)
    patch = {"metadata": {"resourceVersion": view.rv, "annotations": {PROOF_ANNOTATION: dumps(merged)}}}
    what = f"{judgement.result} {judgement.reason}".strip() if evidence_new and judgement is not None else ""
    if cuda_new and cuda is not None:
        what = f"{what}; CUDA {cuda.get('result')} {cuda.get('reason', '')}".strip("; ")
    return PatchNode(view.name, patch, f"record the proof: {what}")


def fleet_verdict(view: NodeView, judgement: Judgement | None) -> FleetVerdict:
    """The node's verdict in the gauges (``judgement``: this pass's, None when the node was not judged)."""
    if view.state == State.FAILED:
        return FleetVerdict.FAILED
    if in_maintenance(view) or view.state == State.WAITING_SLOT:
        return FleetVerdict.IN_MAINTENANCE  # waiting for a slot: its rollout is under way (a halt has its alert)
    if judgement is None:
        return FleetVerdict.UNPROVEN  # not Ready: what its labels say may be stale
    if judgement.result != PASSED:
        return FleetVerdict.DRIFTING
    # The evidence passes; proven only once a CUDA proof of this very node (its UID and boot ID) passed.
    return FleetVerdict.CONFORMANT if cuda_passed(view) else FleetVerdict.UNPROVEN


def proof_resources(view: NodeView, settings: Settings, pool: PoolProof | None) -> list[str]:
    """The resources the node's smoke pods ask one device of: each the pool declares (its MIG layout), else each the
    MIG rollout plans, else a whole GPU."""
    declared = dict(pool.mig_resources) if pool is not None else {}
    return sorted(declared or planned_resources(view, settings)) or ["nvidia.com/gpu"]


def wants_proof(
    view: NodeView, work: Work, judgement: Judgement | None, seen_deferred: float, settings: Settings
) -> bool:
    """The node should have its CUDA proof now: its evidence passes this pass, it is idle or done (no flow, no refusal,
    no inspection awaited), holds no Lease, and its UID has no passed CUDA proof; one given back (``deferred``) waits
    until this replica has seen that record for ``proof_retry_seconds`` (``seen_deferred``). Never in a dry run (a
    proof creates a Lease and pods)."""
    if settings.dry_run or judgement is None or judgement.result != PASSED:
        return False
    if view.state not in (State.IDLE, State.DONE) or view.lease is not None:
        return False
    if work.flow or work.refusal or (view.opted_in and work.facts is None):
        return False
    cuda = cuda_of(view).get("result")
    if cuda == CudaResult.PASSED:
        return False
    return not (cuda == CudaResult.DEFERRED and seen_deferred < settings.proof_retry_seconds)


def waiting_reason(view: NodeView, pool: PoolView | None) -> str:
    """Why a node that wants its CUDA proof did not get a slot this pass (no counts: it is written when it changes)."""
    if pool is not None and pool.halted_by:
        return (
            f"the pool {view.pool} is halted by {', '.join(pool.halted_by)}: no new node is proven until it is cleared"
        )
    return f"waiting for a slot of the pool {view.pool}'s budget (nodeAgent.maxUnavailable, shared with its rollouts)"


def metrics_text(counts: Mapping[str, Mapping[str, int]]) -> str:
    """Prometheus's text format: one gauge per pool and verdict (every verdict, zeros included)."""
    lines = [
        f"# HELP {FLEET_METRIC} GPU nodes of each declared pool by verdict of the node agent's continuous proof.",
        f"# TYPE {FLEET_METRIC} gauge",
    ]
    for pool in sorted(counts):
        for verdict in FleetVerdict:
            value = counts[pool].get(verdict.value, 0)
            lines.append(f'{FLEET_METRIC}{{pool="{_escape(pool)}",verdict="{verdict.value}"}} {value}')
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass
class Proving:
    """One pass's proof: the writes to make, and the counts per pool and verdict."""

    patches: list[PatchNode]
    counts: dict[str, dict[str, int]]


#: Per node name: its pool's declaration, and this pass's judgement (None: in maintenance or not Ready, not judged).
Judged = dict[str, tuple[PoolProof, Judgement | None]]


def judge_fleet(views: Iterable[NodeView], nodes: Mapping[str, dict[str, Any]], settings: Settings) -> Judged:
    """Every node of a declared pool, judged by its evidence (a node in maintenance or not Ready is not judged: its
    evidence lags on purpose)."""
    judged: Judged = {}
    for view in views:
        if not view.pool or view.name not in nodes:
            continue
        pool = declaration(settings, view)
        if pool is None:
            continue
        judgement = None
        if not in_maintenance(view) and view.ready:
            judgement = judge(nodes[view.name], view, pool)
        judged[view.name] = (pool, judgement)
    return judged


def prove(
    views: Iterable[NodeView],
    judged: Judged,
    now: float,
    skip: set[str],
    waiting: Mapping[str, str] | None = None,
) -> Proving:
    """The records to write and the gauges. ``skip``: nodes written this pass (recorded at the next pass, on their new
    resourceVersion); ``waiting``: the nodes that want their CUDA proof and got no slot, with why."""
    patches: list[PatchNode] = []
    counts: dict[str, dict[str, int]] = {}
    for view in sorted(views, key=lambda item: item.name):
        if view.name not in judged:
            continue
        pool, judgement = judged[view.name]
        why = (waiting or {}).get(view.name)
        cuda = cuda_entry(view, CudaResult.WAITING, why, now, pool) if why else None
        if view.name not in skip:
            patch = proof_patch(view, judgement, now, cuda)
            if patch is not None:
                patches.append(patch)
        verdict = fleet_verdict(view, judgement)
        tally = counts.setdefault(view.pool, {})
        tally[verdict.value] = tally.get(verdict.value, 0) + 1
    return Proving(patches, counts)
