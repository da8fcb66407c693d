"""The agent's RBAC: exactly the calls ``components/node_agent/agent/kube.py`` makes, nothing more.

RBAC cannot say "only your own node" or "only pods on your node": the admission policies in
``components.node_agent.admission`` narrow the node patches (and the smoke pods) by the node name the
bound token carries. Leases, smoke pods and Events stay namespaced.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PolicyRule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


#: Cluster-wide (Nodes are cluster-scoped; GPU pods live in every namespace).
CLUSTER_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("",), ("nodes",), ("get", "patch")),  # observe; labels, annotations, cordon, the MIG taint
    PolicyRule(("",), ("pods",), ("list",)),  # the node's pods (fieldSelector spec.nodeName)
    PolicyRule(("",), ("pods/eviction",), ("create",)),  # the Eviction API: PodDisruptionBudgets respected
)
#: In the agent's namespace: the slot Leases and the smoke pods.
NAMESPACE_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "list", "create", "update", "delete")),
    PolicyRule(("",), ("pods",), ("create", "delete")),
)
#: In ``default``: the API server accepts Events about cluster-scoped objects (Nodes) only there.
EVENT_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("events",), ("create",)),)
