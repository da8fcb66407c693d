"""The node agent's RBAC: exactly the calls the controller and the executors make, nothing more.

Two ServiceAccounts. The **controller** (one Deployment) lists nodes and pods, patches nodes, evicts, owns
the Leases and the smoke pods of its namespace, reads its settings ConfigMap, reads the operator's driver
DaemonSets and their ControllerRevisions, lists ResourceClaims and writes Events. The **executors** (the DaemonSet) may get and patch nodes, nothing else: no
pods, no evictions, no Leases, no Events. RBAC cannot say "only your own node" or "only these keys": the
admission policies in ``components.node_agent.admission`` do, with the node name the executor's token carries.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.node_agent import SETTINGS_CONFIG_MAP


@dataclass(frozen=True)
class PolicyRule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()


#: The controller, cluster-wide: Nodes are cluster-scoped and GPU pods live in every namespace.
CONTROLLER_CLUSTER_RULES: tuple[PolicyRule, ...] = (
    # observe (a list, then a watch); state, cordon, labels (admission narrows)
    PolicyRule(("",), ("nodes",), ("get", "list", "watch", "patch")),
    PolicyRule(("",), ("pods",), ("list",)),  # the pods of the nodes it holds (fieldSelector spec.nodeName)
    PolicyRule(("",), ("pods/eviction",), ("create",)),  # the Eviction API: PodDisruptionBudgets respected
    # A pod holding a claim the NVIDIA DRA driver allocated is a GPU pod (as the GPU Operator counts them).
    PolicyRule(("resource.k8s.io",), ("resourceclaims",), ("list",)),
)
#: The controller, in the agent's namespace: node Leases, its leader Lease, smoke pods, its settings.
CONTROLLER_NAMESPACE_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "list", "watch", "create", "update", "delete")),
    PolicyRule(("",), ("pods",), ("list", "watch", "create", "delete")),  # its smoke pods
    # By name: RBAC authorizes a list or watch by resourceNames when it carries fieldSelector=metadata.name.
    PolicyRule(("",), ("configmaps",), ("get", "list", "watch"), (SETTINGS_CONFIG_MAP,)),
)
#: The controller, in the operator's namespace: the driver DaemonSets declare the driver image, and their newest
#: ControllerRevision says which driver pods are current (as k8s-operator-libs judges them).
CONTROLLER_OPERATOR_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("apps",), ("daemonsets", "controllerrevisions"), ("list", "watch")),
    PolicyRule(("",), ("pods",), ("list", "watch")),  # the driver pods (label app.kubernetes.io/component)
)
#: The controller, in ``default``: the API server accepts Events about cluster-scoped objects (Nodes) only there.
CONTROLLER_EVENT_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("events",), ("create",)),)
#: The executors: their own Node, watched (``fieldSelector=metadata.name``; RBAC cannot name a node per executor,
#: so reading is cluster-wide) and patched (the admission policy: only its own, only the report annotation).
EXECUTOR_CLUSTER_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("nodes",), ("get", "list", "watch", "patch")),)
#: The pool labeller (``agent/labeller``, an existing cluster's pools): the nodes of its pools, watched by their
#: selectors, and patched (its admission policy: only the declared pools' labels, at their values). Nothing else: no
#: pods, no evictions, no Leases, no ConfigMaps (its memberships come as a mounted file), no Events.
LABELLER_CLUSTER_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("nodes",), ("get", "list", "watch", "patch")),)
