"""What the program tells the agent: the desired MIG config label and each pool's budget.

With ``nodeAgent.migLayout`` the program no longer writes ``nvidia.com/mig.config`` (which would make
mig-manager reconfigure every node at once, under running pods); it writes the desired config in a
label of ours, and the agent moves the real label to it a budget of nodes at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from components.catalog.names import MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL
from components.catalog.node_agent import (
    EVENT_NAMESPACE,
    EVENT_SOURCE,
    LEASE_POOL_LABEL,
    MIG_DESIRED_LABEL,
    REASON_LABEL,
    STATE_LABEL,
)
from components.catalog.pools import GpuPool
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS
from components.node_agent.config import NodeAgentConfig


def agent_mig_labels(labels: dict[str, str], through_agent: bool) -> dict[str, str]:
    """``labels`` with the MIG config label renamed to the agent's desired-config label when it applies them."""
    if not through_agent or MIG_CONFIG_LABEL not in labels:
        return labels
    renamed = {key: value for key, value in labels.items() if key != MIG_CONFIG_LABEL}
    renamed[MIG_DESIRED_LABEL] = labels[MIG_CONFIG_LABEL]
    return dict(sorted(renamed.items()))


def pool_budgets(config: NodeAgentConfig, pools: Iterable[GpuPool], keys: dict[str, str]) -> dict[str, int]:
    """Slots per pool at its full size (``max_nodes``), keyed by the node-group label value the nodes carry
    (``keys``: pool name -> value; bare-metal nodes of one pool share it, so they share the budget).

    For the stack outputs only: the controller computes each pool's budget at every reconcile from the nodes
    that exist then (50% of an autoscaled 2-10 group with 3 live nodes is 2, not 5)."""
    sizes: dict[str, int] = {}
    for pool in pools:
        key = keys.get(pool.name, pool.name)
        sizes[key] = sizes.get(key, 0) + pool.max_nodes
    return {key: config.budget(size) for key, size in sorted(sizes.items())}


def operator_runtime_class(values: Mapping[str, Any]) -> str:
    """The RuntimeClass the GPU Operator installs with these Helm values ("" for none), for the smoke pods.

    gpu-operator v26.7.0: the chart writes ``operator.runtimeClass`` into the ClusterPolicy when set
    (``templates/clusterpolicy.yaml``), else the operator uses ``DefaultRuntimeClass`` (``controllers/object_controls.go``
    ``getRuntimeClassName``); the ``pre-requisites`` state that creates it is off, and the classes removed, when CDI's
    NRI plugin injects the devices (``controllers/state_manager.go`` ``isStateEnabled``; the chart writes
    ``nriPluginEnabled`` only with ``cdi.enabled``, which defaults to true)."""
    cdi = values.get("cdi") or {}
    if cdi.get("enabled", True) and cdi.get("nriPluginEnabled", False):
        return ""
    return str((values.get("operator") or {}).get("runtimeClass") or OPERATOR_RUNTIME_CLASS)


def node_agent_watch_commands(namespace: str) -> list[str]:
    """The commands docs/node-agent.md gives to watch a rollout (the stack output repeats them)."""
    return [
        f"kubectl get nodes -L {STATE_LABEL} -L {REASON_LABEL} -L {MIG_CONFIG_LABEL} -L {MIG_CONFIG_STATE_LABEL}",
        f"kubectl get events -n {EVENT_NAMESPACE} --field-selector involvedObject.kind=Node,source={EVENT_SOURCE} -w",
        f"kubectl -n {namespace} get leases -l {LEASE_POOL_LABEL} -o wide",
    ]
