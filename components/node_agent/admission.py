"""ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, served since Kubernetes 1.30) for the agent.

Three policies, bound with ``Deny``:

- **executor-own-node**: an executor may change only the Node its pod runs on, and there only its report
  annotation: no label, no other annotation, nothing in ``spec``, no owner reference, no finalizer. The node
  comes from the token: a pod's bound service-account token carries its node, and the API server puts it in
  the user's extra as ``authentication.kubernetes.io/node-name`` (``NodeNameKey`` in
  k8s.io/apiserver/pkg/authentication/serviceaccount/util.go; ServiceAccountTokenPodNodeInfo, on by default
  since 1.30). Kubernetes' own per-node policy reads it the same way
  (test/e2e/auth/e2edata/per_node_validatingadmissionpolicy.yaml).
- **controller-nodes**: the controller may change only its labels and annotations (and the NVIDIA labels it
  owns in the flow: ``nvidia.com/mig.config``, its state, ``gpu.deploy.driver``, the paused operands), in
  ``spec`` only ``unschedulable`` and the removal of its own MIG-pending taint (effect fixed: it can neither add
  a taint nor change an effect, so no ``NoExecute`` that evicts around PodDisruptionBudgets), and never owner
  references or finalizers.
- **smoke-pods**: the controller may create only smoke pods: bound to a node, on the agent image, every
  container, init container and ephemeral container unprivileged with no added capability and no privilege
  escalation, no host namespaces, no volumes, the namespace's default service account with no token mounted.

Evictions cannot be narrowed by admission: the object admission sees for ``pods/eviction`` is the ``Eviction``
(policy/v1: a pod name, a namespace, delete options; pkg/registry/core/pod/storage/eviction.go admits it
before it reads the pod), so the pod's node is not in the request, and CEL admission has no lookup of other
objects. So only the controller's ServiceAccount may evict at all (the executors have no eviction right),
and the controller evicts only pods it listed on a node whose Lease it holds (``controller/decide.py``).
"""

from __future__ import annotations

from typing import Any

from components.catalog.node_agent import (
    AGENT_IMAGE,
    CONTROLLER_ANNOTATIONS,
    CONTROLLER_LABELS,
    EXECUTOR_ANNOTATIONS,
    MIG_PENDING_TAINT_KEY,
)

NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
TOKEN_NODE = f"request.userInfo.extra[?'{NODE_NAME_KEY}'][0].orValue('')"
EXECUTOR_POLICY = "gpu-platform-node-agent-executor-own-node"
CONTROLLER_POLICY = "gpu-platform-node-agent-controller-nodes"
SMOKE_POLICY = "gpu-platform-node-agent-smoke-pods"


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _changed(field: str) -> str:
    new = f"object.metadata.?{field}.orValue({{}})"
    old = f"oldObject.metadata.?{field}.orValue({{}})"
    return f"{new}.filter(k, !(k in {old}) || {old}[k] != {new}[k]) + {old}.filter(k, !(k in {new}))"


def _same(path: str, empty: str) -> str:
    return f"object.{path}.orValue({empty}) == oldObject.{path}.orValue({empty})"


_OWNERS_AND_FINALIZERS = {
    "expression": f"{_same('metadata.?ownerReferences', '[]')} && {_same('metadata.?finalizers', '[]')}",
    "message": "owner references and finalizers of a Node are not the node agent's to change",
}


def _spec_except_cordon_and_own_taint() -> str:
    fields = ("providerID", "podCIDR", "externalID")
    same = [_same(f"spec.?{f}", "''") for f in fields]
    same.append(_same("spec.?podCIDRs", "[]"))
    same.append(_same("spec.?configSource", "{}"))
    ours = f"t.key == '{MIG_PENDING_TAINT_KEY}'"
    theirs = f"t.key != '{MIG_PENDING_TAINT_KEY}'"
    same.append(
        f"object.spec.?taints.orValue([]).filter(t, {theirs}) == oldObject.spec.?taints.orValue([]).filter(t, {theirs})"
    )
    # Its own taint may only go (or stay as it was): never added, never another effect.
    same.append(
        f"object.spec.?taints.orValue([]).filter(t, {ours}).size() == 0 || "
        f"object.spec.?taints.orValue([]).filter(t, {ours}) == oldObject.spec.?taints.orValue([]).filter(t, {ours})"
    )
    return " && ".join(same)


def _binding(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}


def _user(namespace: str, account: str) -> list[dict[str, str]]:
    return [
        {
            "name": "is-account",
            "expression": f"request.userInfo.username == 'system:serviceaccount:{namespace}:{account}'",
        }
    ]


def _node_rules() -> dict[str, Any]:
    return {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]}]
    }


def executor_policy(namespace: str, account: str) -> dict[str, Any]:
    return {
        "metadata": {"name": EXECUTOR_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _node_rules(),
            "matchConditions": _user(namespace, account),
            "variables": [
                {"name": "tokenNode", "expression": TOKEN_NODE},
                {"name": "annotations", "expression": _changed("annotations")},
            ],
            "validations": [
                {
                    "expression": "variables.tokenNode != ''",
                    "message": f"the token carries no node ({NODE_NAME_KEY}): the executor must run in a pod on a node",
                },
                {
                    "expression": "object.metadata.name == variables.tokenNode",
                    "messageExpression": "'the executor on ' + variables.tokenNode + ' may change only its own node, "
                    "not ' + object.metadata.name",
                },
                {
                    "expression": f"variables.annotations.all(k, k in {_cel_list(EXECUTOR_ANNOTATIONS)})",
                    "message": f"an executor may change only the annotation {', '.join(EXECUTOR_ANNOTATIONS)}",
                },
                {
                    "expression": _same("metadata.?labels", "{}"),
                    "message": "an executor may not change a label",
                },
                {"expression": "object.spec == oldObject.spec", "message": "an executor may not change the spec"},
                _OWNERS_AND_FINALIZERS,
            ],
        },
    }


def controller_policy(namespace: str, account: str) -> dict[str, Any]:
    return {
        "metadata": {"name": CONTROLLER_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _node_rules(),
            "matchConditions": _user(namespace, account),
            "variables": [
                {"name": "labels", "expression": _changed("labels")},
                {"name": "annotations", "expression": _changed("annotations")},
            ],
            "validations": [
                {
                    "expression": f"variables.labels.all(k, k in {_cel_list(CONTROLLER_LABELS)})",
                    "message": f"the controller may change only the labels {', '.join(CONTROLLER_LABELS)}",
                },
                {
                    "expression": f"variables.annotations.all(k, k in {_cel_list(CONTROLLER_ANNOTATIONS)})",
                    "message": f"the controller may change only the annotations {', '.join(CONTROLLER_ANNOTATIONS)}",
                },
                {
                    "expression": _spec_except_cordon_and_own_taint(),
                    "message": f"the controller may change only spec.unschedulable and remove the "
                    f"{MIG_PENDING_TAINT_KEY} taint",
                },
                _OWNERS_AND_FINALIZERS,
            ],
        },
    }


def smoke_policy(namespace: str, account: str) -> dict[str, Any]:
    containers = " && ".join(
        [
            "object.spec.?containers.orValue([]).all(c, c.image == "
            f"'{AGENT_IMAGE}' && !c.?securityContext.?privileged.orValue(false) && "
            "c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false && "
            "c.?securityContext.?capabilities.?add.orValue([]).size() == 0)",
            "object.spec.?initContainers.orValue([]).size() == 0",
            "object.spec.?ephemeralContainers.orValue([]).size() == 0",
        ]
    )
    return {
        "metadata": {"name": SMOKE_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "matchConditions": _user(namespace, account),
            "validations": [
                {
                    "expression": "object.spec.?nodeName.orValue('') != ''",
                    "message": "a smoke pod is bound to the node it tests",
                },
                {
                    "expression": containers,
                    "message": "a smoke pod runs only the agent image, unprivileged, no privilege escalation, no added "
                    "capability, no init or ephemeral containers",
                },
                {
                    "expression": "!object.spec.?hostPID.orValue(false) && !object.spec.?hostIPC.orValue(false)"
                    " && !object.spec.?hostNetwork.orValue(false)",
                    "message": "a smoke pod shares no host namespace",
                },
                {
                    "expression": "object.spec.?serviceAccountName.orValue('default') == 'default'"
                    " && object.spec.?automountServiceAccountToken.orValue(true) == false",
                    "message": "a smoke pod runs as the namespace's default service account, with no token mounted",
                },
                {
                    "expression": "object.spec.?volumes.orValue([]).size() == 0",
                    "message": "a smoke pod mounts no volume",
                },
            ],
        },
    }


def admission_policies(
    namespace: str, controller_account: str, executor_account: str
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(role, policy, binding)`` for each policy."""
    return [
        ("executor-own-node", executor_policy(namespace, executor_account), _binding(EXECUTOR_POLICY)),
        ("controller-nodes", controller_policy(namespace, controller_account), _binding(CONTROLLER_POLICY)),
        ("smoke-pods", smoke_policy(namespace, controller_account), _binding(SMOKE_POLICY)),
    ]
