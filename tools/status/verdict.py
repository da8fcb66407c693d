"""Each GPU node against what the stack declares: one verdict, and every finding that led to it.

Pure functions over the API's JSON. Evidence is read where the other actors write it, each fact from the catalog
(with its source there): the driver pod's image and readiness (the GPU Operator), the driver version GPU Feature
Discovery reports, ``nvidia.com/mig.config`` and mig-manager's answer in ``nvidia.com/mig.config.state``, the GPU
resources in the node's allocatable (the effect of a layout, not an echo of a label), the node agent's state and
reason labels, the operator's upgrade state, the cordon, and the proof record on the node.

A verdict is decided by the most serious finding, in this order:

- ``failed``: someone must act: the node agent failed or refuses the node, mig-manager answered ``failed``, or the
  operator's driver upgrade failed (a failed proof record is drift: it differs from the declaration);
- ``in-maintenance``: a rollout holds the node now: the node agent (waiting for a slot or in a step), the
  operator's upgrade controller, or mig-manager applying a layout;
- ``unknown`` (decisive): the node is not Ready (its labels may be stale), or its agent state is one this tool
  does not know;
- ``drift``: a field differs from the declaration: a label, the driver pod, the driver version, the MIG config,
  the advertised GPU resources, a cordon nobody holds, a GPU node of no declared pool, a declared bare-metal host
  that is not in the cluster;
- ``unknown``: nothing differs, but something the verdict needs is missing: no proof of the node (a pool the stack
  proves), a proof of another driver or layout, evidence that passes with no CUDA proof of the node as it is now (its
  UID and boot ID: one waiting for its slot, given back, running, or of an earlier boot), no driver version from GPU
  Feature Discovery, driver pods that cannot be listed;
- ``conformant``: none of the above.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from components.catalog import gpu_operator_upgrade as operator
from components.catalog import node_agent as agent
from components.catalog.names import GPU_NODE_LABEL, MIG_ALL_DISABLED, MIG_CONFIG_LABEL, NODE_GROUP_LABEL
from components.catalog.nvidia_driver import GFD_DRIVER_VERSION_LABEL, GPU_PRESENT_LABEL, OWNER_LABEL
from components.node_agent.agent import objects
from tools.status.declared import Declaration, PoolDeclaration

#: The node's proof record (``components.catalog.node_agent``), written by the rollout controller's continuous proof.
PROOF_ANNOTATION: Final = agent.PROOF_ANNOTATION


class Verdict(StrEnum):
    CONFORMANT = "conformant"
    DRIFT = "drift"
    IN_MAINTENANCE = "in-maintenance"
    FAILED = "failed"
    UNKNOWN = "unknown"


#: Findings from the most serious down; the first finding of a node decides its verdict. ``unknown`` appears
#: twice: a node that is not Ready cannot be judged on its labels (above drift), while missing evidence only
#: matters when nothing differs (below drift).
_RANK: Final = ("failed", "in-maintenance", "unknown!", "drift", "unknown")
#: Within one rank, the fields a person looks at first.
_FIELDS: Final = ("node", "pool", "maintenance", "upgrade", "driver", "mig", "gpus", "cordon", "labels", "proof")


@dataclass(frozen=True)
class Finding:
    """One thing that keeps a node from being conformant: the field it is about, and what is wrong."""

    field: str  #: node, pool, labels, driver, mig, gpus, maintenance, upgrade, cordon, proof
    verdict: Verdict
    message: str
    decisive: bool = False  #: an ``unknown`` that outranks drift (the node's labels cannot be trusted)

    @property
    def rank(self) -> tuple[int, int]:
        key = f"{self.verdict}!" if self.decisive else str(self.verdict)
        return _RANK.index(key), _FIELDS.index(self.field)

    def text(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class Cuda:
    """The CUDA proof in the node's proof record (its ``cuda`` part): which node it is about, and its result."""

    uid: str
    boot_id: str
    result: str  #: passed, failed, waiting (for a slot, or a halted pool), deferred (given back)
    at: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Proof:
    """The node's proof record, as read."""

    result: str  #: passed, failed, none (no record) or unreadable
    at: str | None = None
    reason: str | None = None
    driver: str | None = None
    mig: str | None = None
    cuda: Cuda | None = None  #: the CUDA proof the controller last decided on the node (None: never)

    def age(self, now: datetime) -> float | None:
        """Seconds since ``at`` on this machine's clock (None: no time); shown, never used to decide."""
        if not self.at:
            return None
        try:
            at = datetime.fromisoformat(self.at.replace("Z", "+00:00"))
        except ValueError:
            return None
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        return max(0.0, (now - at).total_seconds())


@dataclass
class NodeStatus:
    """One line of the report: a node of the cluster, or a declared bare-metal host missing from it."""

    name: str
    pool: str | None  #: its pool, the ``gpu-platform.io/node-group`` value the stack declares (None: no declared pool)
    gpu_pool: str | None  #: its ``gpuPools`` key
    present: bool = True
    ready: bool | None = None
    cordoned: bool = False
    driver_owner: str | None = None
    driver_declared: str | None = None
    driver_declared_image: str | None = None
    driver_running: str | None = None  #: what GPU Feature Discovery reports
    driver_image: str | None = None  #: the operator's driver pod's image on the node
    driver_pods: int = 0
    mig_declared: str | None = None
    mig_applied: str | None = None
    mig_state: str | None = None
    resources_declared: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    maintenance_state: str | None = None
    maintenance_reason: str | None = None
    maintenance_detail: str | None = None
    upgrade_state: str | None = None
    proof: Proof = field(default_factory=lambda: Proof("none"))
    uid: str = ""  #: the Node's ``metadata.uid`` and ``status.nodeInfo.bootID``: the identity a CUDA proof is about
    boot_id: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if not self.findings:
            return Verdict.CONFORMANT
        return min(self.findings, key=lambda f: f.rank).verdict

    @property
    def reasons(self) -> list[Finding]:
        """The findings, the one that decided the verdict first."""
        return sorted(self.findings, key=lambda f: f.rank)

    def add(self, field_name: str, verdict: Verdict, message: str, decisive: bool = False) -> None:
        self.findings.append(Finding(field_name, verdict, message, decisive))


def _condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return None


def advertised(node: Mapping[str, Any]) -> dict[str, int]:
    """The NVIDIA resources in the node's allocatable with a count above zero."""
    return objects.gpu_resources((node.get("status") or {}).get("allocatable") or {})


def is_gpu_node(node: Mapping[str, Any]) -> bool:
    """A node the platform would call a GPU node: our labels, the operator's GPU label, or GPUs in allocatable."""
    labels = objects.labels(node)
    return (
        labels.get(GPU_NODE_LABEL) == "true"
        or labels.get(GPU_PRESENT_LABEL) == "true"
        or NODE_GROUP_LABEL in labels
        or bool(advertised(node))
    )


def read_proof(annotations: Mapping[str, str]) -> Proof:
    raw = annotations.get(PROOF_ANNOTATION)
    if raw is None:
        return Proof("none")
    try:
        data = json.loads(raw)
    except ValueError:
        return Proof("unreadable", reason="not JSON")
    if not isinstance(data, dict) or data.get("result") not in ("passed", "failed"):
        return Proof("unreadable", reason="no result passed or failed")

    def text(key: str, where: dict[str, Any] = data) -> str | None:
        value = where.get(key)
        return str(value) if value not in (None, "") else None

    part = data.get("cuda")
    cuda = None
    if isinstance(part, dict) and part.get("result"):
        cuda = Cuda(
            str(part.get("uid") or ""),
            str(part.get("boot_id") or ""),
            str(part["result"]),
            text("at", part),
            text("reason", part),
        )
    return Proof(str(data["result"]), text("at"), text("reason"), text("driver"), text("mig"), cuda)


def _observe(node: Mapping[str, Any], here: list[dict[str, Any]]) -> NodeStatus:
    """Everything the report shows about a node, before any comparison."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    name = str(metadata.get("name", ""))
    ready = _condition(node, "Ready")
    status = NodeStatus(
        name=name,
        pool=None,
        gpu_pool=None,
        ready=None if ready is None else ready.get("status") == "True",
        cordoned=bool((node.get("spec") or {}).get("unschedulable")),
        driver_running=labels.get(GFD_DRIVER_VERSION_LABEL) or None,
        mig_applied=labels.get(MIG_CONFIG_LABEL) or None,
        mig_state=labels.get(agent.MIG_STATE_LABEL) or None,
        resources=advertised(node),
        maintenance_state=labels.get(agent.STATE_LABEL) or None,
        maintenance_reason=labels.get(agent.REASON_LABEL) or None,
        maintenance_detail=annotations.get(agent.DETAIL_ANNOTATION) or None,
        upgrade_state=labels.get(operator.UPGRADE_STATE_LABEL) or None,
        proof=read_proof(annotations),
        uid=str(metadata.get("uid") or ""),
        boot_id=str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or ""),
    )
    status.driver_pods = len(here)
    if here:
        images = sorted({objects.container_image(pod.get("spec") or {}, operator.DRIVER_CONTAINER) for pod in here})
        status.driver_image = ", ".join(image or "no driver container" for image in images)
    return status


def _ready(status: NodeStatus, node: Mapping[str, Any]) -> None:
    if status.ready:
        return
    condition = _condition(node, "Ready")
    if condition is None:
        status.add("node", Verdict.UNKNOWN, "reports no Ready condition: what its labels say may be stale", True)
        return
    why = condition.get("reason") or condition.get("message") or ""
    status.add(
        "node",
        Verdict.UNKNOWN,
        f"is not Ready (Ready={condition.get('status')}{f': {why}' if why else ''}): what its labels say may be stale",
        True,
    )


def _labels(status: NodeStatus, labels: Mapping[str, str], pool: PoolDeclaration) -> None:
    """Every label the program sets on the pool's nodes, as one finding (a node edited by hand, or never labelled)."""
    differ = [
        f"{key} is {labels[key]}, declared {want}" if key in labels else f"{key} is missing, declared {want}"
        for key, want in pool.labels.items()
        if labels.get(key) != want
    ]
    if differ:
        status.add("labels", Verdict.DRIFT, "; ".join(differ))


def _driver(
    status: NodeStatus, node: Mapping[str, Any], pool: PoolDeclaration, here: list[dict[str, Any]] | None, error: str
) -> None:
    """``here``: the operator's driver pods on the node (None: they could not be listed, ``error`` says why)."""
    declared = pool.driver
    if declared is None:
        return
    labels = objects.labels(node)
    status.driver_owner = declared.owner
    status.driver_declared = declared.version
    status.driver_declared_image = declared.image or None
    running = status.driver_running
    told = False  # the running version is already in a finding
    if here is None:
        status.add("driver", Verdict.UNKNOWN, f"the GPU Operator's driver pods cannot be listed ({error})")
    elif declared.owner == "host":
        if status.driver_pods:
            status.add(
                "driver",
                Verdict.DRIFT,
                f"the GPU Operator runs a driver pod here ({status.driver_image}), but the hosts own the driver",
            )
    elif not status.driver_pods:
        deploy = labels.get(agent.GPU_DEPLOY_DRIVER_LABEL, "")
        if deploy == agent.DEPLOY_DRIVER_PRE_INSTALLED:
            told = True
            status.add(
                "driver",
                Verdict.DRIFT,
                f"runs a preinstalled driver {status.driver_running or ''} ({agent.GPU_DEPLOY_DRIVER_LABEL}={deploy}: "
                f"the node image's), not the GPU Operator's {declared.version}".replace("  ", " "),
            )
        else:
            status.add("driver", Verdict.DRIFT, "no driver pod of the GPU Operator on the node")
    else:
        if len(here) > 1:
            names = ", ".join(sorted(objects.name(pod) for pod in here))
            status.add("driver", Verdict.DRIFT, f"{len(here)} driver pods on the node: {names}")
        for pod in here:
            image = objects.container_image(pod.get("spec") or {}, operator.DRIVER_CONTAINER)
            if not image.startswith(declared.image):
                status.add(
                    "driver",
                    Verdict.DRIFT,
                    f"driver pod {objects.name(pod)} runs {image or 'no driver container'}, declared {declared.image}…",
                )
            elif not objects.pod_ready(pod):
                status.add("driver", Verdict.DRIFT, f"driver pod {objects.name(pod)} is not Ready")
    if declared.resource and labels.get(OWNER_LABEL) != declared.resource:
        found = labels.get(OWNER_LABEL) or "no NVIDIADriver"
        status.add("driver", Verdict.DRIFT, f"owned by {found} ({OWNER_LABEL}), declared {declared.resource}")
    if told or declared.version.startswith("sha256:"):
        return  # a digest-pinned driver: the image decides (GPU Feature Discovery reports a version, not a digest)
    if running is None:
        status.add(
            "driver", Verdict.UNKNOWN, f"GPU Feature Discovery reports no driver version ({GFD_DRIVER_VERSION_LABEL})"
        )
    elif running != declared.version:
        status.add("driver", Verdict.DRIFT, f"GPU Feature Discovery reports {running}, declared {declared.version}")


def _mig(status: NodeStatus, pool: PoolDeclaration) -> None:
    status.mig_declared = pool.mig_config
    status.resources_declared = dict(pool.resources)
    applied, state = status.mig_applied, status.mig_state
    if pool.mig_config is not None:
        if applied != pool.mig_config:
            status.add("mig", Verdict.DRIFT, f"{MIG_CONFIG_LABEL} is {applied or 'unset'}, declared {pool.mig_config}")
        if state == agent.MIG_STATE_FAILED:
            status.add(
                "mig",
                Verdict.FAILED,
                f"mig-manager failed to apply {applied or 'the layout'} ({agent.MIG_STATE_LABEL}=failed)",
            )
        elif state in (agent.MIG_STATE_PENDING, agent.MIG_STATE_REBOOTING):
            status.add(
                "mig", Verdict.IN_MAINTENANCE, f"mig-manager is applying {applied} ({agent.MIG_STATE_LABEL}={state})"
            )
        elif state != agent.MIG_STATE_SUCCESS:
            status.add(
                "mig", Verdict.DRIFT, f"mig-manager has not answered ({agent.MIG_STATE_LABEL} is {state or 'unset'})"
            )
    elif applied not in (None, MIG_ALL_DISABLED):
        status.add("mig", Verdict.DRIFT, f"{MIG_CONFIG_LABEL} is {applied}, the stack declares no MIG layout")
    if not objects.advertises_exactly(dict(status.resources), dict(pool.resources)):
        shown = _resources(status.resources) or "no GPU resource"
        status.add(
            "mig" if pool.mig_config else "gpus",
            Verdict.DRIFT,
            f"advertises {shown}, declared {_resources(pool.resources)}",
        )


def _resources(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{key.removeprefix(objects.GPU_RESOURCE_PREFIX)}={count}" for key, count in resources.items())


#: The node agent's states in which the node is held (cordoned by the controller, or failed after it was touched).
_AGENT_HOLDS: Final = frozenset({*agent.SLOT_STATES, agent.State.FAILED})
_KNOWN_STATES: Final = frozenset(state.value for state in agent.State)


def _maintenance(status: NodeStatus) -> None:
    state, reason = status.maintenance_state, status.maintenance_reason
    because = f" ({reason})" if reason else ""
    if state is None or state in (agent.State.IDLE, agent.State.DONE, agent.State.PROVING):
        pass  # (proving: its CUDA proof runs, not cordoned; the proof's finding says so)
    elif state not in _KNOWN_STATES:
        status.add("maintenance", Verdict.UNKNOWN, f"the node agent's state {state} is not one this tool knows", True)
    elif state == agent.State.FAILED:
        stays = ", the node stays cordoned" if status.cordoned else ""
        status.add("maintenance", Verdict.FAILED, f"the node agent failed it{because}{stays}")
    elif state == agent.State.REFUSED:
        status.add("maintenance", Verdict.FAILED, f"the node agent refuses to change it{because}")
    else:
        status.add("maintenance", Verdict.IN_MAINTENANCE, f"the node agent is at {state}{because}")
    upgrade = status.upgrade_state
    if upgrade == operator.UpgradeState.FAILED:
        status.add("upgrade", Verdict.FAILED, f"the GPU Operator's driver upgrade failed ({upgrade})")
    elif upgrade in operator.OPERATOR_HOLDS_STATES:
        status.add("upgrade", Verdict.IN_MAINTENANCE, f"the GPU Operator is upgrading the driver ({upgrade})")
    elif upgrade == operator.UpgradeState.UPGRADE_REQUIRED:
        status.add("upgrade", Verdict.IN_MAINTENANCE, f"the GPU Operator will upgrade the driver ({upgrade})")
    held = state in _AGENT_HOLDS or upgrade in operator.OPERATOR_HOLDS_STATES
    if status.cordoned and not held:
        status.add("cordon", Verdict.DRIFT, "cordoned, and neither the node agent nor the GPU Operator holds it")


def _proof(status: NodeStatus, pool: PoolDeclaration) -> None:
    proof = status.proof
    if proof.result == "none":
        if pool.proven:
            status.add(
                "proof", Verdict.UNKNOWN, "never proven: no CUDA pod has run on this node as it is (no proof record)"
            )
    elif proof.result == "unreadable":
        status.add("proof", Verdict.UNKNOWN, f"the proof record cannot be read ({proof.reason}: {PROOF_ANNOTATION})")
    elif proof.result == "failed":
        # The controller's continuous proof judges the node's evidence against the declaration: a failed record
        # is a difference from it (drift), as the fleet gauge counts it, not a failure someone must act on first.
        status.add(
            "proof",
            Verdict.DRIFT,
            f"the last proof failed{f' at {proof.at}' if proof.at else ''}: {proof.reason or 'no reason given'}",
        )
    else:
        driver = pool.driver.version if pool.driver else None
        if driver and proof.driver and proof.driver != driver:
            status.add("proof", Verdict.UNKNOWN, f"the last proof was of driver {proof.driver}, declared {driver}")
        if pool.mig_config and proof.mig and proof.mig != pool.mig_config:
            status.add(
                "proof", Verdict.UNKNOWN, f"the last proof was of MIG config {proof.mig}, declared {pool.mig_config}"
            )
        _cuda(status)


def _cuda(status: NodeStatus) -> None:
    """The evidence passed: the node is proven only once a CUDA proof of it as it is now (its UID and boot ID)
    passed, as the controller's gauges count it (``unproven`` until then)."""
    cuda = status.proof.cuda
    mine = cuda is not None and (cuda.uid, cuda.boot_id) == (status.uid, status.boot_id)
    when = f" at {cuda.at}" if cuda is not None and cuda.at else ""
    why = f": {cuda.reason}" if cuda is not None and cuda.reason else ""
    if status.maintenance_state == agent.State.PROVING:
        status.add("proof", Verdict.UNKNOWN, "its CUDA proof is running (the node agent's smoke pod on it)")
    elif cuda is None:
        status.add("proof", Verdict.UNKNOWN, "no CUDA proof of this node yet: its evidence passed, no CUDA pod ran")
    elif not mine:
        other = "another node under this name" if cuda.uid != status.uid else "an earlier boot of this node"
        status.add("proof", Verdict.UNKNOWN, f"the last CUDA proof{when} was of {other}: not proven as it is now")
    elif cuda.result == "failed":
        status.add("proof", Verdict.FAILED, f"the CUDA proof failed{when}{why}")
    elif cuda.result != "passed":
        status.add("proof", Verdict.UNKNOWN, f"not proven with CUDA yet ({cuda.result}{when}){why}")


def judge(
    node: Mapping[str, Any],
    pool: PoolDeclaration | None,
    driver_pods: list[dict[str, Any]] | None,
    driver_pods_error: str = "",
) -> NodeStatus:
    """One live node against its pool's declaration (``pool`` None: the node belongs to no declared pool).

    ``driver_pods``: the operator's driver pods on this node (None: they could not be listed).
    """
    status = _observe(node, driver_pods or [])
    labels = objects.labels(node)
    if pool is None:
        group = labels.get(NODE_GROUP_LABEL)
        where = f"{NODE_GROUP_LABEL}={group}" if group else f"no {NODE_GROUP_LABEL} label"
        status.add("pool", Verdict.DRIFT, f"a GPU node of no declared pool ({where})")
        status.pool = None
        return status
    status.pool, status.gpu_pool = pool.pool, pool.gpu_pool
    _ready(status, node)
    _labels(status, labels, pool)
    _driver(status, node, pool, driver_pods, driver_pods_error)
    _mig(status, pool)
    _maintenance(status)
    _proof(status, pool)
    return status


def missing_host(pool: PoolDeclaration) -> NodeStatus:
    """A declared bare-metal host that is not a node of the cluster."""
    status = NodeStatus(
        name=pool.gpu_pool,
        pool=pool.pool,
        gpu_pool=pool.gpu_pool,
        present=False,
        driver_owner=pool.driver.owner if pool.driver else None,
        driver_declared=pool.driver.version if pool.driver else None,
        driver_declared_image=(pool.driver.image or None) if pool.driver else None,
        mig_declared=pool.mig_config,
        resources_declared=dict(pool.resources),
    )
    status.add("node", Verdict.DRIFT, f"declared in {pool.config_path}, not a node of the cluster")
    return status


def judge_fleet(
    declaration: Declaration, nodes: list[dict[str, Any]], driver_pods: list[dict[str, Any]] | None, error: str = ""
) -> tuple[list[NodeStatus], int]:
    """Every GPU node of the cluster and every missing bare-metal host; also how many nodes were left out as not
    GPU nodes (no GPU label or resource, no declared pool)."""
    statuses: list[NodeStatus] = []
    seen: set[str] = set()
    others = 0
    by_node: dict[str, list[dict[str, Any]]] = {}
    for pod in driver_pods or []:
        if not objects.terminating(pod):
            by_node.setdefault(str((pod.get("spec") or {}).get("nodeName") or ""), []).append(pod)
    for node in nodes:
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name", ""))
        labels = metadata.get("labels") or {}
        seen.add(name)
        pool = declaration.for_node(name, labels)
        if pool is None and (not is_gpu_node(node) or _other_group(declaration, labels, node)):
            others += 1
            continue
        here = by_node.get(name, []) if driver_pods is not None else None
        statuses.append(judge(node, pool, here, error))
    statuses.extend(missing_host(pool) for pool in declaration.bare_metal_hosts if pool.gpu_pool not in seen)
    return statuses, others


def _other_group(declaration: Declaration, labels: Mapping[str, str], node: Mapping[str, Any]) -> bool:
    """A node of a declared CPU group (``gpus: 0``) that advertises no GPU: not a GPU node of no pool."""
    return labels.get(NODE_GROUP_LABEL) in declaration.other_pools and not advertised(node)
