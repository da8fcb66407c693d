"""The smoke pods of a node in maintenance: one pod per MIG resource the node should advertise, each running
``nvidia-smi -L`` on one device of it, before the node is given back.

Its own module: the pods the controller creates are what its admission policy
(``components.node_agent.admission``) must let through and nothing more, so their shape lives in one place.
"""

from __future__ import annotations

from typing import Any

from components.catalog.node_agent import AGENT_IMAGE, MIG_PENDING_TAINT_KEY, SMOKE_LABEL, UNSCHEDULABLE_TAINT
from components.node_agent.agent.controller.view import NodeView, Record


def smoke_name(view: NodeView, record: Record, index: int) -> str:
    return f"node-agent-smoke-{view.uid[:18]}-{record.attempt}-{index}"


def smoke_pod(view: NodeView, record: Record, index: int, resource: str, namespace: str) -> dict[str, Any]:
    """A pod bound to the node, asking for one device of ``resource``; unprivileged, no token, no volumes."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": smoke_name(view, record, index),
            "namespace": namespace,
            "labels": {SMOKE_LABEL: view.uid},
        },
        "spec": {
            "nodeName": view.name,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "tolerations": [
                {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"},
                {"key": MIG_PENDING_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [
                {
                    "name": "smoke",
                    "image": AGENT_IMAGE,
                    "command": ["nvidia-smi", "-L"],
                    "resources": {"limits": {resource: 1}},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "privileged": False,
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                    },
                }
            ],
        },
    }
