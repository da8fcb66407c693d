"""ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) for the agent.

RBAC lets the agent patch any Node; these policies let its service account change only the Node its
pod runs on, only the labels and annotations it owns (plus ``nvidia.com/mig.config`` and
``nvidia.com/gpu.deploy.driver``), and in ``spec`` only ``unschedulable`` and its own taint. A second
policy lets it create only smoke pods bound to its own node, on the agent image, unprivileged.

The node comes from the token: a bound service-account token of a pod carries the pod's node, and the
API server puts it in the user's extra as ``authentication.kubernetes.io/node-name``
(``NodeNameKey`` in k8s.io/apiserver/pkg/authentication/serviceaccount/util.go; feature
ServiceAccountTokenPodNodeInfo, beta and on by default since 1.30, GA in 1.32). Kubernetes' own DRA
example policy reads it the same way (test/e2e/dra/test-driver/deploy/example/plugin-permissions.yaml):
``request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')``.

Evictions cannot be narrowed this way: an eviction's admission object is the ``Eviction`` (a pod name and
namespace, no node) and CEL admission has no lookup, so "only pods on its own node" is enforced by the
agent itself (it lists with ``fieldSelector=spec.nodeName=<its node>`` and evicts only those).
"""

from __future__ import annotations

from typing import Any

from components.catalog.node_agent import (
    AGENT_IMAGE,
    MIG_PENDING_TAINT_KEY,
    WRITABLE_ANNOTATIONS,
    WRITABLE_LABELS,
)

NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
TOKEN_NODE = f"request.userInfo.extra[?'{NODE_NAME_KEY}'][0].orValue('')"


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _changed(field: str) -> str:
    new = f"object.metadata.?{field}.orValue({{}})"
    old = f"oldObject.metadata.?{field}.orValue({{}})"
    return f"{new}.filter(k, !(k in {old}) || {old}[k] != {new}[k]) + {old}.filter(k, !(k in {new}))"


def _spec_unchanged() -> str:
    fields = ("providerID", "podCIDR", "externalID")
    same = [f"object.spec.?{f}.orValue('') == oldObject.spec.?{f}.orValue('')" for f in fields]
    same.append("object.spec.?podCIDRs.orValue([]) == oldObject.spec.?podCIDRs.orValue([])")
    ours = f"t.key != '{MIG_PENDING_TAINT_KEY}'"
    same.append(
        f"object.spec.?taints.orValue([]).filter(t, {ours}) == oldObject.spec.?taints.orValue([]).filter(t, {ours})"
    )
    return " && ".join(same)


def _binding(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }


def admission_policies(namespace: str, account: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(role, policy, binding)`` for the own-node policy and the smoke-pod policy."""
    user = f"system:serviceaccount:{namespace}:{account}"
    is_agent = [{"name": "is-node-agent", "expression": f"request.userInfo.username == '{user}'"}]
    no_node = {
        "expression": "variables.tokenNode != ''",
        "message": f"the token carries no node ({NODE_NAME_KEY}): the agent must run in a pod on a node "
        "(ServiceAccountTokenPodNodeInfo)",
    }
    nodes_policy: dict[str, Any] = {
        "metadata": {"name": "gpu-platform-node-agent-own-node"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]}
                ]
            },
            "matchConditions": is_agent,
            "variables": [
                {"name": "tokenNode", "expression": TOKEN_NODE},
                {"name": "labels", "expression": _changed("labels")},
                {"name": "annotations", "expression": _changed("annotations")},
            ],
            "validations": [
                no_node,
                {
                    "expression": "object.metadata.name == variables.tokenNode",
                    "messageExpression": "'the node agent on ' + variables.tokenNode + ' may change only its own "
                    "node, not ' + object.metadata.name",
                },
                {
                    "expression": f"variables.labels.all(k, k in {_cel_list(WRITABLE_LABELS)})",
                    "message": f"the node agent may change only the labels {', '.join(WRITABLE_LABELS)}",
                },
                {
                    "expression": f"variables.annotations.all(k, k in {_cel_list(WRITABLE_ANNOTATIONS)})",
                    "message": f"the node agent may change only the annotations {', '.join(WRITABLE_ANNOTATIONS)}",
                },
                {
                    "expression": _spec_unchanged(),
                    "message": f"the node agent may change only spec.unschedulable and the {MIG_PENDING_TAINT_KEY} "
                    "taint",
                },
            ],
        },
    }
    smoke_policy: dict[str, Any] = {
        "metadata": {"name": "gpu-platform-node-agent-smoke-pods"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "matchConditions": is_agent,
            "variables": [{"name": "tokenNode", "expression": TOKEN_NODE}],
            "validations": [
                no_node,
                {
                    "expression": "object.spec.?nodeName.orValue('') == variables.tokenNode",
                    "message": "the node agent may create smoke pods only on its own node",
                },
                {
                    "expression": f"object.spec.containers.all(c, c.image == '{AGENT_IMAGE}' && "
                    "!c.?securityContext.?privileged.orValue(false))"
                    " && !object.spec.?hostPID.orValue(false) && !object.spec.?hostNetwork.orValue(false)"
                    " && object.spec.?volumes.orValue([]).all(v, !has(v.hostPath))",
                    "message": "a smoke pod runs the agent image unprivileged, with no host namespaces or paths",
                },
            ],
        },
    }
    return [
        ("own-node", nodes_policy, _binding("gpu-platform-node-agent-own-node")),
        ("smoke-pods", smoke_policy, _binding("gpu-platform-node-agent-smoke-pods")),
    ]
