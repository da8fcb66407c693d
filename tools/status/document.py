"""The status as a versioned JSON document, for other teams (its JSON Schema: ``docs/status.schema.json``).

Versioning as the stack outputs' (``docs/outputs.md``): adding a key keeps ``version``; renaming or removing one,
or changing a value's type or meaning, bumps it. Consumers check ``version`` first and ignore keys they do not know.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from tools.status.declared import Declaration
from tools.status.live import LiveCluster
from tools.status.verdict import NodeStatus, Proof, Verdict

VERSION: Final = 1
#: The order nodes are listed in within a pool: what needs a person first.
SEVERITY: Final = (Verdict.FAILED, Verdict.DRIFT, Verdict.UNKNOWN, Verdict.IN_MAINTENANCE, Verdict.CONFORMANT)


def ordered(statuses: Iterable[NodeStatus]) -> list[NodeStatus]:
    """Pools by name (nodes of no declared pool last), within a pool the most serious verdict first, then by name."""
    return sorted(statuses, key=lambda s: (s.pool is None, s.pool or "", SEVERITY.index(s.verdict), s.name))


def counts(statuses: Iterable[NodeStatus]) -> dict[str, int]:
    """Nodes per verdict, every verdict present (0 where none)."""
    found = {str(verdict): 0 for verdict in Verdict}
    for status in statuses:
        found[str(status.verdict)] += 1
    return found


def _proof(proof: Proof, status: NodeStatus) -> dict[str, Any]:
    """The node's proof record; its ``cuda`` part with ``current``: whether it is about the node as it is now (its
    UID and boot), which is what a consumer asks ("did CUDA run on this machine?")."""
    entry: dict[str, Any] = {"result": proof.result}
    for key in ("at", "reason", "driver", "mig"):
        value = getattr(proof, key)
        if value is not None:
            entry[key] = value
    cuda = proof.cuda
    if cuda is not None:
        entry["cuda"] = {
            "result": cuda.result,
            "current": (cuda.uid, cuda.boot_id) == (status.uid, status.boot_id),
            **{key: value for key, value in (("at", cuda.at), ("reason", cuda.reason)) if value is not None},
        }
    return entry


def node_entry(status: NodeStatus) -> dict[str, Any]:
    """One node of the document."""
    return {
        "name": status.name,
        "pool": status.pool,
        "gpuPool": status.gpu_pool,
        "present": status.present,
        "ready": status.ready,
        "verdict": str(status.verdict),
        "driver": {
            "owner": status.driver_owner,
            "declared": status.driver_declared,
            "declaredImage": status.driver_declared_image,
            "running": status.driver_running,
            "image": status.driver_image,
        },
        "mig": {
            "declared": status.mig_declared,
            "applied": status.mig_applied,
            "state": status.mig_state,
            "declaredResources": dict(status.resources_declared),
            "resources": dict(status.resources),
        },
        "maintenance": {
            "state": status.maintenance_state,
            "reason": status.maintenance_reason,
            "detail": status.maintenance_detail,
        },
        "upgrade": {"state": status.upgrade_state},
        "cordoned": status.cordoned,
        "proof": _proof(status.proof, status),
        "reasons": [
            {"field": finding.field, "verdict": str(finding.verdict), "message": finding.message}
            for finding in status.reasons
        ],
    }


def document(
    declaration: Declaration, live: LiveCluster, statuses: list[NodeStatus], other_nodes: int, now: datetime
) -> dict[str, Any]:
    """The whole report: the stack, the cluster it was compared with, a count per verdict, and every node."""
    nodes = ordered(statuses)
    return {
        "version": VERSION,
        "stack": declaration.stack,
        "cluster": {
            "name": declaration.cluster,
            "kind": declaration.kind,
            "server": live.server,
            "kubernetesVersion": live.version,
        },
        "generatedAt": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "conformant": all(status.verdict == Verdict.CONFORMANT for status in nodes),
        "summary": {**counts(nodes), "nodes": len(nodes), "otherNodes": other_nodes},
        "nodes": [node_entry(status) for status in nodes],
    }
