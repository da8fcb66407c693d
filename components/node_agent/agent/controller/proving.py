"""The continuous proof: every GPU node of a pool, judged against its pool's declaration at every pass.

A node that joins a pool, or comes back after a replacement, is proven without waiting for a ``pulumi up``:
the rollout controller already observes the nodes, the operator's driver pods and the driver DaemonSets with
their ControllerRevisions, and judges each node with the SAME rules as the proof Job of a driver step
(``agent/proof/check.py``: ``driver_evidence``, ``mig_evidence``). What it does not do is run a CUDA pod: this is
the evidence half of the proof (see docs/node-agent.md, "Continuous proof").

The result is recorded on the node (``PROOF_ANNOTATION``), where ``tools/status`` and the alerts read it, and
written only when the result, the reason, the driver or the MIG config differ from the record the node carries:
an idle fleet costs no write. A failed proof records and the alert tells; it never cordons (cordoning is the
rollout flows' job). The same judgements give the per-pool gauges the controller serves on ``/metrics``.

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
    PROOF_ANNOTATION,
    SLOT_STATES,
    FleetVerdict,
    State,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import PatchNode
from components.node_agent.agent.controller.view import NodeView
from components.node_agent.agent.proof.check import PoolProof, driver_evidence, mig_evidence
from components.node_agent.agent.settings import Settings

PASSED = "passed"
FAILED = "failed"


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

    def record(self, now: float) -> str:
        return json.dumps(
            {
                "result": self.result,
                "at": objects.format_time(now),
                "reason": self.reason,
                "driver": self.driver,
                "mig": self.mig,
            },
            sort_keys=True,
            separators=(",", ":"),
        )


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


def proof_patch(view: NodeView, judgement: Judgement, now: float) -> PatchNode | None:
    """The write of the judgement on the node, with its resourceVersion; None when it carries it already."""
    if judgement.same_as(objects.json_annotation({"metadata": {"annotations": view.annotations}}, PROOF_ANNOTATION)):
        return None
    patch = {"metadata": {"resourceVersion": view.rv, "annotations": {PROOF_ANNOTATION: judgement.record(now)}}}
    return PatchNode(view.name, patch, f"record the proof: {judgement.result} {judgement.reason}".strip())


def fleet_verdict(view: NodeView, judgement: Judgement | None) -> FleetVerdict:
    """The node's verdict in the gauges (``judgement``: this pass's, None when the node was not judged)."""
    if view.state == State.FAILED:
        return FleetVerdict.FAILED
    if in_maintenance(view) or view.state == State.WAITING_SLOT:
        return FleetVerdict.IN_MAINTENANCE  # waiting for a slot: its rollout is under way (a halt has its alert)
    if judgement is None:
        return FleetVerdict.UNPROVEN  # not Ready: what its labels say may be stale
    return FleetVerdict.CONFORMANT if judgement.result == PASSED else FleetVerdict.DRIFTING


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


def prove(
    views: Iterable[NodeView], nodes: Mapping[str, dict[str, Any]], settings: Settings, now: float, skip: set[str]
) -> Proving:
    """Judge every node of a declared pool; ``skip``: nodes written this pass (proven at the next, on their new
    resourceVersion)."""
    patches: list[PatchNode] = []
    counts: dict[str, dict[str, int]] = {}
    for view in sorted(views, key=lambda item: item.name):
        if not view.pool or view.name not in nodes:
            continue
        pool = declaration(settings, view)
        if pool is None:
            continue
        judgement = None
        if not in_maintenance(view) and view.ready:
            judgement = judge(nodes[view.name], view, pool)
            patch = proof_patch(view, judgement, now)
            if patch is not None and view.name not in skip:
                patches.append(patch)
        verdict = fleet_verdict(view, judgement)
        tally = counts.setdefault(view.pool, {})
        tally[verdict.value] = tally.get(verdict.value, 0) + 1
    return Proving(patches, counts)
