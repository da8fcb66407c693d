"""The controller's settings: rendered by the component into a ConfigMap, read again at every reconcile.

Read live, so that a changed budget or timeout reaches a rollout that is already running (a DaemonSet or
Deployment env var would reach it only when the pod is replaced). Unknown keys are an error: a component
and a controller that disagree must not pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Final

from components.catalog.names import GPU_OPERATOR_NAMESPACE
from components.catalog.node_agent import pool_budget

#: The RuntimeClass the GPU Operator installs when the chart's ``operator.runtimeClass`` is left as it is: the chart's
#: default (gpu-operator v26.7.0 ``deployments/gpu-operator/values.yaml`` ``operator.runtimeClass: nvidia``), which is
#: also the operator's own when the ClusterPolicy names none (``controllers/object_controls.go``
#: ``DefaultRuntimeClass``). The smoke pods run on it: its handler puts ``nvidia-smi`` and the devices in the container.
OPERATOR_RUNTIME_CLASS: Final = "nvidia"
#: The keys of one pool's declaration (``Settings.declarations``).
_DECLARATION_KEYS: Final = frozenset({"driver_version", "driver_image", "owner", "mig_config", "mig_resources"})


@dataclass(frozen=True)
class Settings:
    """Tuning of the rollout controller."""

    #: Nodes of one pool in maintenance at once: a number (``"2"``) or a percentage of the pool's live nodes.
    max_unavailable: str = "1"
    mig_layout: bool = False
    dry_run: bool = False
    eviction_timeout_seconds: float = 600.0
    reboot_timeout_seconds: float = 900.0
    driver_ready_timeout_seconds: float = 1200.0
    mig_timeout_seconds: float = 900.0
    smoke_timeout_seconds: float = 600.0
    uninstall_timeout_seconds: float = 900.0
    #: How long an executor may take to answer a short step (inspect, verify) before the node fails.
    executor_timeout_seconds: float = 300.0
    #: How often a handed-over node is inspected again (a host driver that comes back is caught).
    recheck_seconds: float = 3600.0
    #: The operator's namespace (its driver pods run there).
    operator_namespace: str = GPU_OPERATOR_NAMESPACE
    #: The MIG resources a node should advertise, by node group (or bare-metal node name): name -> count,
    #: or names only (then every named resource must be advertised, and no other NVIDIA resource).
    mig_resources: dict[str, dict[str, int]] = field(default_factory=dict)
    #: What each pool declares, by node group (or bare-metal node name), for the continuous proof of every node
    #: (``controller/proving.py``): ``driver_version``, ``driver_image`` (the prefix its image starts with),
    #: ``owner`` (the NVIDIADriver; "" with the ClusterPolicy's driver), each "" where the hosts own the driver, and
    #: ``mig_config`` with ``mig_resources`` where the program re-partitions the pool. A pool not here is not proven.
    declarations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A node whose CUDA proof fails is also cordoned (``nodeAgent.cordonOnProofFailure``); by default it is only
    #: recorded failed, with the reason, and the alert tells (docs/node-agent.md, "Continuous proof").
    cordon_on_proof_failure: bool = False
    #: A CUDA proof given back before it could finish (no free device on the node, the GPU Operator took the node) is
    #: tried again once this replica has seen that record for this long (its own clock).
    proof_retry_seconds: float = 600.0
    #: Leader election: how long a leader's Lease lasts without renewal.
    leader_lease_seconds: float = 30.0
    #: The RuntimeClass of the smoke pods: the one the GPU Operator installs ("" where it installs none: its NRI
    #: plugin). The admission policy allows exactly this one.
    runtime_class: str = OPERATOR_RUNTIME_CLASS

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Settings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}")
        values = dict(data)
        resources: dict[str, dict[str, int]] = {}
        for key, value in dict(values.pop("mig_resources", {}) or {}).items():
            resources[key] = dict(value) if isinstance(value, dict) else {str(item): 0 for item in value}
        declarations: dict[str, dict[str, Any]] = {}
        for key, value in dict(values.pop("declarations", {}) or {}).items():
            if not isinstance(value, dict) or set(value) - _DECLARATION_KEYS:
                raise ValueError(f"declaration of pool {key}: keys are {', '.join(sorted(_DECLARATION_KEYS))}")
            declarations[str(key)] = dict(value)
        values["declarations"] = declarations
        values["max_unavailable"] = str(values.get("max_unavailable", "1"))
        return cls(mig_resources=resources, **values)

    def budget(self, live_nodes: int) -> int:
        """Slots for a pool with ``live_nodes`` nodes now: a percentage rounds up; at least one node."""
        return pool_budget(self.max_unavailable.strip(), live_nodes)
