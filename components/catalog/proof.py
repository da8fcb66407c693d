"""The proof's vocabulary and its pure judging rules: one module, shared by the proof Job's runner
(``components/proof/job``) and the rollout controller's continuous proof (``node_agent/agent/controller/proving.py``).

The words (``components/proof/__init__.py`` says what each means):

- **evidence**: what the cluster's objects say about a node's driver (:func:`driver_evidence`) and MIG layout
  (:func:`mig_evidence`), judged against a pool's declaration (:class:`PoolProof`); each rule answers why the
  node is not (yet) as declared, ``""`` when it is;
- **CUDA proof**: a pod holding one GPU of the node ran the vectorAdd sample, after waiting for the declared driver;
- **step**: a driver step (the canaries, the rest) or the MIG step, proven by one awaited Job (:class:`ProofSettings`);
- **record**: the continuous proof's result on the node (:data:`PROOF_ANNOTATION`: :data:`PASSED` or
  :data:`FAILED`, and under ``cuda`` :data:`PROOF_CUDA_KEYS`, whose ``result`` is a :class:`CudaResult`).

The names are the catalog's: the proof's labels and namespace are names we own (``catalog.names``, where the policy
pack and ``OWNED_KEY_PREFIXES`` read them), the record's annotation is one of the controller's annotations
(``catalog.node_agent``); this module imports them so that the proof is read in one place.

Pure and standard library only: it ships in the proof Job's code ConfigMap and in the node agent's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog import nvidia_driver as crd
from components.catalog import objects
from components.catalog.names import PROOF_NAMESPACE, PROOF_NODE_ANNOTATION, PROOF_RUN_LABEL, PROOF_STEP_LABEL
from components.catalog.node_agent import MIG_LABEL, MIG_STATE_LABEL, MIG_STATE_SUCCESS, PROOF_ANNOTATION

__all__ = [
    "FAILED",
    "GPU_RESOURCE_PREFIX",
    "PASSED",
    "PROOF_ANNOTATION",
    "PROOF_CUDA_KEYS",
    "PROOF_NAMESPACE",
    "PROOF_NODE_ANNOTATION",
    "PROOF_RUN_LABEL",
    "PROOF_STEP_LABEL",
    "CudaResult",
    "PoolProof",
    "ProofSettings",
    "Verdict",
    "advertises_exactly",
    "driver_evidence",
    "gpu_resources",
    "mig_evidence",
    "revision_lag",
    "selector_text",
]

# -- the record ------------------------------------------------------------------------------------------------
#: The ``result`` of :data:`PROOF_ANNOTATION` (the evidence): every rule passed, or one did not (its ``reason``).
PASSED: Final = "passed"
FAILED: Final = "failed"
#: The ``cuda`` part of :data:`PROOF_ANNOTATION`: the node identity it is about, ``uid`` (the Node's ``metadata.uid``:
#: a node recreated under the same name has another) and ``boot_id`` (``status.nodeInfo.bootID``: new after every boot,
#: so after a VM replaced under the same Node object too), ``result`` (:class:`CudaResult`), ``at`` (RFC 3339, the
#: controller's clock), ``reason``, and the ``driver`` and ``mig`` declared when it was decided.
PROOF_CUDA_KEYS: Final = ("uid", "boot_id", "result", "at", "reason", "driver", "mig")


class CudaResult(StrEnum):
    """The ``cuda.result`` of :data:`PROOF_ANNOTATION`."""

    PASSED = "passed"  #: every smoke pod of the proof succeeded on this node (this UID and boot)
    FAILED = "failed"  #: a smoke pod failed or did not finish in time (the node is failed: cuda-proof-failed)
    WAITING = "waiting"  #: wanted, not started: the pool's budget is full, or the pool is halted (see the reason)
    DEFERRED = "deferred"  #: started and given back (no free device, the operator took the node): tried again later


# -- the settings: what a pool's nodes must show, and a step -------------------------------------------------------
@dataclass(frozen=True)
class PoolProof:
    """What one pool's nodes must show (a pool's entry in a step's settings, and the continuous proof's
    declaration of the pool; ``components/proof/steps.py`` writes both)."""

    pool: str
    selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    resource: str
    driver_version: str = ""  # "" when the operator installs no driver (the hosts own it): no driver evidence
    driver_image: str = ""  # what the driver container's image starts with (crd.driver_image_prefix)
    owner: str = ""  # the NVIDIADriver that must own the nodes ("" with the ClusterPolicy driver)
    check_script: str = ""  # the sh loop that waits for the declared version (crd.driver_check_script)
    mig_config: str = ""  # the mig-parted config the pool's nodes must have applied ("" when not re-partitioned)
    mig_resources: dict[str, int] = field(default_factory=dict)  # what a node must then advertise, exactly

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolProof:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown pool settings: {', '.join(unknown)}")
        if not data.get("driver_version") and not data.get("mig_config"):
            raise ValueError(f"pool {data.get('pool')}: nothing to prove (no driver version, no MIG config)")
        return cls(**data)


@dataclass(frozen=True)
class ProofSettings:
    """The step: its pools, where the proof pods run, the CUDA image, and how long the step may take.

    ``priority_class``: the PriorityClass of the CUDA pods (the component's, ``components.proof.component``).
    """

    step: str
    namespace: str
    operator_namespace: str
    image: str
    pools: tuple[PoolProof, ...]
    deadline_seconds: float = 1800.0
    poll_seconds: float = 15.0
    priority_class: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProofSettings:
        values = dict(data)
        pools = tuple(PoolProof.from_json(pool) for pool in values.pop("pools", []))
        known = set(cls.__dataclass_fields__) - {"pools"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown proof settings: {', '.join(unknown)}")
        if not pools:
            raise ValueError("a proof needs at least one pool")
        return cls(pools=pools, **values)


@dataclass
class Verdict:
    """One pass of a step's proof: each node of the step and why it is not proven ("" = proven)."""

    nodes: dict[str, str] = field(default_factory=dict)
    pools_without_nodes: list[str] = field(default_factory=list)

    @property
    def lagging(self) -> dict[str, str]:
        return {node: why for node, why in sorted(self.nodes.items()) if why}

    @property
    def passed(self) -> bool:
        return bool(self.nodes) and not self.lagging and not self.pools_without_nodes

    def summary(self) -> str:
        """One line a user reads in the Job's failure: the lagging nodes by name, each with why."""
        parts = [f"{node}: {why}" for node, why in self.lagging.items()]
        parts += [f"pool {pool}: no node yet" for pool in self.pools_without_nodes]
        return "; ".join(parts) if parts else f"{len(self.nodes)} node(s) proven"


def selector_text(selector: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))


# -- reading the objects (plain JSON dicts, as the API server returns them) ----------------------------------------
#: Resources of NVIDIA's device plugin: whole GPUs (``nvidia.com/gpu``) and MIG devices (``nvidia.com/mig-*``).
GPU_RESOURCE_PREFIX: Final = "nvidia.com/"


def gpu_resources(allocatable: dict[str, Any]) -> dict[str, int]:
    """The NVIDIA resources in a node's allocatable with a count above zero, by name."""
    found: dict[str, int] = {}
    for key, value in allocatable.items():
        if key.startswith(GPU_RESOURCE_PREFIX):
            try:
                count = int(str(value))
            except ValueError:
                continue
            if count > 0:
                found[key] = count
    return dict(sorted(found.items()))


def advertises_exactly(allocatable: dict[str, Any], planned: dict[str, int]) -> bool:
    """The node's allocatable NVIDIA resources are exactly ``planned`` (names, and counts where planned > 0).

    The effect of a MIG layout, not an echo of a label: the rule both the rollout controller and the driver
    step's proof close a MIG change with. Nothing planned: nothing to compare.
    """
    if not planned:
        return True
    advertised = gpu_resources(allocatable)
    if all(count == 0 for count in planned.values()):
        return set(advertised) == set(planned)
    return advertised == {key: count for key, count in planned.items() if count > 0}


# -- the evidence ----------------------------------------------------------------------------------------------------
def revision_lag(pod: dict[str, Any], revisions: dict[str, str]) -> str:
    """Why the pod is not from its DaemonSet's newest revision ("" when it is), as ``podInSyncWithDS`` judges.

    ``revisions``: DaemonSet name -> the ``controller-revision-hash`` of its newest ControllerRevision ("" when it
    has none; the Job's runner reads them, ``components.proof.job.run.current_revisions``).
    """
    owner = str(objects.controller_owner(pod).get("name", ""))
    if owner not in revisions:
        return f"driver pod {objects.name(pod)} belongs to DaemonSet {owner}, which is not there"
    newest = revisions[owner]
    if not newest:
        return f"DaemonSet {owner} of driver pod {objects.name(pod)} has no ControllerRevision"
    found = objects.labels(pod).get(upgrade.CONTROLLER_REVISION_HASH_LABEL, "")
    if found != newest:
        return f"driver pod {objects.name(pod)} is from revision {found or 'none'} of its DaemonSet, not the newest ({newest})"
    return ""


def driver_evidence(
    node: dict[str, Any], driver_pods: list[dict[str, Any]], revisions: dict[str, str], pool: PoolProof
) -> str:
    """Why the node's driver is not (yet) the declared one; "" when the operator's side says it is."""
    labels = objects.labels(node)
    if not objects.ready(node):
        return "node is not Ready"
    if pool.owner and labels.get(crd.OWNER_LABEL, "") != pool.owner:
        found = labels.get(crd.OWNER_LABEL) or "no NVIDIADriver"
        return f"owned by {found} ({crd.OWNER_LABEL}), not {pool.owner}"
    name = objects.name(node)
    here = [p for p in driver_pods if (p.get("spec") or {}).get("nodeName") == name and not objects.terminating(p)]
    state = labels.get(crd.UPGRADE_STATE_LABEL, "")
    note = f" (upgrade state {state})" if state else ""
    if not here:
        return f"no driver pod{note}"
    orphans = [objects.name(p) for p in here if objects.controller_owner(p).get("kind", "") != "DaemonSet"]
    if orphans:
        return f"still runs driver pod {orphans[0]} that no DaemonSet owns (the ClusterPolicy's, not replaced){note}"
    if len(here) > 1:
        return f"{len(here)} driver pods: {', '.join(sorted(objects.name(p) for p in here))}{note}"
    pod = here[0]
    image = objects.container_image(pod.get("spec") or {}, crd.DRIVER_CONTAINER)
    if not image.startswith(pool.driver_image):
        return f"driver pod {objects.name(pod)} runs {image or 'no driver container'}, not {pool.driver_version}{note}"
    lag = revision_lag(pod, revisions)
    if lag:
        return f"{lag}{note}"
    if not objects.ready(pod):
        return f"driver pod {objects.name(pod)} is not Ready{note}"
    reported = labels.get(crd.GFD_DRIVER_VERSION_LABEL, "")
    if reported != pool.driver_version:
        return f"GPU Feature Discovery reports driver {reported or 'none'} ({crd.GFD_DRIVER_VERSION_LABEL})"
    return ""


def mig_evidence(node: dict[str, Any], pool: PoolProof) -> str:
    """Why the node's MIG layout is not (yet) the declared one; "" when it is, or when none is declared.

    The label alone is an echo (mig-manager's ``success`` may be from the previous config, and it runs its
    checks before writing ``pending``); the node must also advertise exactly the planned resources (the effect,
    :func:`advertises_exactly`, the rule the rollout controller closes a MIG change with).
    """
    if not pool.mig_config:
        return ""
    labels = objects.labels(node)
    current = labels.get(MIG_LABEL, "")
    if current != pool.mig_config:
        return f"MIG config {current or 'unset'} ({MIG_LABEL}), not {pool.mig_config}"
    state = labels.get(MIG_STATE_LABEL, "")
    if state != MIG_STATE_SUCCESS:
        return f"mig-manager reports {state or 'nothing'} ({MIG_STATE_LABEL})"
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    if not advertises_exactly(allocatable, pool.mig_resources):
        found = {k: v for k, v in sorted(allocatable.items()) if k.startswith(GPU_RESOURCE_PREFIX)}
        return f"advertises {found}, not {dict(sorted(pool.mig_resources.items()))}"
    return ""
