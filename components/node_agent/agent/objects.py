"""Reading Kubernetes objects (plain JSON dicts) the way both programs need: labels, GPU pods, readiness, time.

Shared by the controller and the executors; pure functions, standard library only.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from components.catalog.gpu_operator_upgrade import GPU_DRA_DRIVER
from components.catalog.node_agent import SMOKE_LABEL

# The readers of any object are the catalog's (the proof's rules read objects with them too).
from components.catalog.objects import annotations_of as annotations_of
from components.catalog.objects import container_image as container_image
from components.catalog.objects import labels as labels
from components.catalog.objects import name as name
from components.catalog.objects import owner_kind as owner_kind
from components.catalog.objects import owner_name as owner_name
from components.catalog.objects import ready as ready
from components.catalog.objects import terminating as terminating
from components.catalog.objects import uid as uid

# The MIG effect rule is the proof's (the controller closes a MIG change with it too); read here under these names.
from components.catalog.proof import GPU_RESOURCE_PREFIX as GPU_RESOURCE_PREFIX
from components.catalog.proof import advertises_exactly as advertises_exactly
from components.catalog.proof import gpu_resources as gpu_resources

#: A pod is Ready: the catalog's reader, under the name the controller and executors call it by.
pod_ready = ready

#: Pod phases after which no container runs (core/v1 PodPhase).
FINISHED_PHASES = ("Succeeded", "Failed")


@functools.lru_cache(maxsize=8192)
def _parsed(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def json_annotation(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """A JSON object stored in an annotation; ``{}`` when absent or unreadable (never an exception).

    Parsed once per distinct text (a controller reads the same records every pass): read it, never change it.
    """
    raw = annotations_of(obj).get(key, "")
    return _parsed(raw) if raw else {}


def requests_gpu(pod: dict[str, Any]) -> bool:
    """The pod asks for an NVIDIA resource in any container, init container or ephemeral container."""
    spec = pod.get("spec") or {}
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(kind) or []:
            resources = container.get("resources") or {}
            asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            if any(key.startswith(GPU_RESOURCE_PREFIX) for key in asked):
                return True
    return False


#: ResourceClaims by ``namespace/name``; None when they could not be read (every named claim then counts).
Claims = dict[str, dict[str, Any]] | None


def claim_names(pod: dict[str, Any]) -> list[str]:
    """``namespace/name`` of every ResourceClaim the pod holds: named in its spec, or generated from a template
    (the name is then in ``status.resourceClaimStatuses``); an entry with no claim object yet holds nothing."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    generated = {
        item.get("name"): item.get("resourceClaimName")
        for item in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    names = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if name:
            names.append(f"{namespace}/{name}")
    return names


def holds_gpu_claim(pod: dict[str, Any], claims: Claims) -> bool:
    """The pod holds a claim the NVIDIA DRA driver allocated, as the GPU Operator decides it (v26.7.0
    ``controllers/nodelabeling_controller.go`` ``PodHasNVIDIAGPUClaim`` with ``includeAdminAccess`` false, the
    meaning its pod-deletion filter uses): a claim that cannot be read counts; an admin-access result (a
    monitoring view that consumes no device) does not."""
    for key in claim_names(pod):
        claim = None if claims is None else claims.get(key)
        if claim is None:
            return True
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            continue
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("adminAccess"):
                continue
            if result.get("driver") == GPU_DRA_DRIVER:
                return True
    return False


def is_running_gpu_pod(pod: dict[str, Any], claims: Claims = None) -> bool:
    """A pod that holds (or may start using) a GPU on its node: bound, not finished, asking for a GPU through
    the device plugin's resources or through a DRA claim of the NVIDIA GPU driver.

    A terminating pod (``deletionTimestamp`` set) still runs until its grace period ends, so it counts.
    The controller's own smoke pods are not workloads.
    """
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return False
    if labels(pod).get(SMOKE_LABEL):
        return False
    return requests_gpu(pod) or holds_gpu_claim(pod, claims)


def format_time(seconds: float) -> str:
    """RFC 3339 with seconds, as the API server writes ``creationTimestamp``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(seconds: float) -> str:
    """RFC 3339 with microseconds (``MicroTime``: Lease ``renewTime``, Event ``eventTime``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float:
    """Seconds since the epoch from either form; 0.0 when absent or unreadable."""
    if not text:
        return 0.0
    for pattern in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return 0.0


def created(obj: dict[str, Any]) -> float:
    return parse_time(str((obj.get("metadata") or {}).get("creationTimestamp", "")))
