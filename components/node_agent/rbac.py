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
    PolicyRule(("",), ("nodes",), ("get", "list", "patch")),  # observe; state, cordon, labels (admission narrows)
    PolicyRule(("",), ("pods",), ("list",)),  # the pods of the nodes it holds
    PolicyRule(("",), ("pods/eviction",), ("create",)),  # the Eviction API: PodDisruptionBudgets respected
    # A pod holding a claim the NVIDIA DRA driver allocated is a GPU pod (as the GPU Operator counts them).
    PolicyRule(("resource.k8s.io",), ("resourceclaims",), ("list",)),
)
#: The controller, in the agent's namespace: node Leases, its leader Lease, smoke pods, its settings.
CONTROLLER_NAMESPACE_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "list", "create", "update", "delete")),
    PolicyRule(("",), ("pods",), ("create", "delete")),
    PolicyRule(("",), ("configmaps",), ("get",), (SETTINGS_CONFIG_MAP,)),
)
#: The controller, in the operator's namespace: the driver DaemonSets declare the driver image, and their newest
#: ControllerRevision says which driver pods are current (as k8s-operator-libs judges them).
CONTROLLER_OPERATOR_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(("apps",), ("daemonsets", "controllerrevisions"), ("list",)),
)
#: The controller, in ``default``: the API server accepts Events about cluster-scoped objects (Nodes) only there.
CONTROLLER_EVENT_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("events",), ("create",)),)
#: The executors: their own Node (the admission policy: only its own, only the report annotation).
EXECUTOR_CLUSTER_RULES: tuple[PolicyRule, ...] = (PolicyRule(("",), ("nodes",), ("get", "patch")),)
