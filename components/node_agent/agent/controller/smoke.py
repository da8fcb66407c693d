"""The smoke pods of a node in maintenance: one pod per MIG resource the node should advertise, each running
``nvidia-smi -L`` on one device of it, before the node is given back; the same pods prove a node that joined a pool
or came back under a new identity (its CUDA proof, ``decisions/cuda.py``).

Its own module: the pods the controller creates are what its admission policy
(``components.node_agent.admission``, ``gpu-platform-node-agent-smoke-pods``) lets through and nothing more, so
their shape, their command and their PriorityClass live in one place, read by the controller, the policy and the
component that creates the class.

The shape meets Pod Security "restricted" (Kubernetes docs, "Pod Security Standards"): non-root, no privilege
escalation, every capability dropped, the ``RuntimeDefault`` seccomp profile; and more: no volume, no token, no
host namespace, no port, one container on the agent's pinned image with this fixed command. It runs on the GPU
Operator's RuntimeClass (where the operator installs one), which puts ``nvidia-smi`` and the device in the
container, under the program's own PriorityClass (never a system-critical one, for which the kubelet would
preempt workloads around their PodDisruptionBudgets). Its ``nodeSelector`` names the node's GPU label and pool:
the kubelet refuses a pod bound by ``nodeName`` to a node its selector does not match, so the policy, which
cannot look the node up, can still keep smoke pods on GPU nodes of a pool.
"""

from __future__ import annotations

from typing import Any, Final

from components.catalog.names import GPU_NODE_LABEL
from components.catalog.node_agent import (
    AGENT_IMAGE,
    CONTROLLER_USER,
    MIG_PENDING_TAINT_EFFECT,
    MIG_PENDING_TAINT_KEY,
    POOL_LABEL,
    SMOKE_LABEL,
    UNSCHEDULABLE_TAINT,
)
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS

#: The one command a smoke pod runs (the admission policy allows no other, and no ``args``).
SMOKE_COMMAND: Final = ("nvidia-smi", "-L")
#: The program's PriorityClass of the smoke pods (created by the NodeAgent component, value 0, never preempting).
SMOKE_PRIORITY_CLASS: Final = "gpu-platform-node-agent-smoke"
SMOKE_NAME_PREFIX: Final = "node-agent-smoke-"
#: The tolerations a smoke pod carries: the cordon, and the MIG-pending taint of a node still waiting for its layout.
SMOKE_TOLERATIONS: Final = (
    (UNSCHEDULABLE_TAINT, "NoSchedule"),
    (MIG_PENDING_TAINT_KEY, MIG_PENDING_TAINT_EFFECT),
)


def smoke_name(view: NodeView, record: Record, index: int) -> str:
    return f"{SMOKE_NAME_PREFIX}{view.uid[:18]}-{record.attempt}-{index}"


def proof_pod_name(view: NodeView, record: Record, index: int) -> str:
    """The smoke pod of a node's CUDA proof (``decisions/cuda.py``): its own numbering, never a flow's pod's name."""
    return f"{SMOKE_NAME_PREFIX}{view.uid[:18]}-proof{record.proof_attempt}-{index}"


def smoke_pod(
    view: NodeView,
    record: Record,
    index: int,
    resource: str,
    namespace: str,
    runtime_class: str = OPERATOR_RUNTIME_CLASS,
    name: str = "",
) -> dict[str, Any]:
    """A pod bound to the node, asking for one device of ``resource``; Pod Security "restricted", no token, no
    volumes, on the GPU Operator's ``runtime_class`` ("" where it installs none). ``name``: the pod's, when it is not
    the flow's smoke pod (a CUDA proof's: ``proof_pod_name``)."""
    spec: dict[str, Any] = {
        "nodeName": view.name,
        "nodeSelector": {GPU_NODE_LABEL: "true", POOL_LABEL: view.pool},
        "restartPolicy": "Never",
        "priorityClassName": SMOKE_PRIORITY_CLASS,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": CONTROLLER_USER,
            "runAsGroup": CONTROLLER_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "tolerations": [{"key": key, "operator": "Exists", "effect": effect} for key, effect in SMOKE_TOLERATIONS],
        "containers": [
            {
                "name": "smoke",
                "image": AGENT_IMAGE,
                "command": list(SMOKE_COMMAND),
                "resources": {"limits": {resource: 1}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "privileged": False,
                    "runAsNonRoot": True,
                    "runAsUser": CONTROLLER_USER,
                },
            }
        ],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name or smoke_name(view, record, index),
            "namespace": namespace,
            "labels": {SMOKE_LABEL: view.uid},
        },
        "spec": spec,
    }
