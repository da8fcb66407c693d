"""What Kubeflow offers of the GPU fleet: quotas checked against it, a PodDefault per pool, spawner entries.

The Kubeflow capability does not plan the fleet: the stack plan hands it a ``GpuFleet`` (plain data,
each pool with the resources one node advertises under the cluster's MIG strategy), and this module
turns that into three things a team notices:

- ``quota_findings``: every Profile quota on an NVIDIA resource is checked against the fleet. A resource
  no pool advertises is refused (a quota on ``nvidia.com/mig-1g.10gb`` under the ``single`` strategy, where
  slices are ``nvidia.com/gpu``, would cap nothing and hide the real resource's missing cap); the sum of a
  resource's quotas across Profiles above what the fleet holds at its maximum size is refused or warned
  about, as ``kubeflow.gpuQuotaCheck`` says;
- ``pod_default``: one PodDefault per pool, ticked in the spawner, that gives a notebook the pool's
  tolerations (the CRD has no node selector field: node selection is the spawner's affinity option);
- ``spawner_vendors`` and ``spawner_affinity_options``: the GPU dropdown (``nvidia.com/gpu`` plus each MIG
  resource the fleet advertises) and one node-affinity option per pool.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from components.base.problems import Problem, join_path
from components.catalog.gpu_operator_chart import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from components.catalog.gpu_quotas import gpu_quota_resource, uncounted_quota_problem
from components.catalog.kubeflow.v1_10_2.spawner import PODDEFAULT_API_VERSION, PODDEFAULT_KIND
from components.catalog.kubernetes import EXTENDED_RESOURCE_QUOTA_PREFIX
from components.catalog.names import GPU_POOL_PODDEFAULT_LABEL_PREFIX, GPU_POOL_PODDEFAULT_PREFIX

QuotaCheck = Literal["warn", "refuse"]

_WHOLE = re.compile(r"\+?[0-9]+\Z")
_MAX_LABEL_NAME = 63  #: a label key's name part (after the prefix), Kubernetes' limit


@dataclass(frozen=True)
class FleetPool:
    """One GPU pool as Kubeflow sees it: where it is configured, its GPUs, what one node advertises, how to land on it."""

    name: str
    config_path: str
    model: str
    max_nodes: int
    resources_per_node: Mapping[str, int]
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]

    def capacity(self) -> dict[str, int]:
        """What the pool advertises at its maximum size."""
        return {name: count * self.max_nodes for name, count in self.resources_per_node.items()}


@dataclass(frozen=True)
class GpuFleet:
    """The stack's GPU pools and the cluster's MIG strategy (``single`` or ``mixed``), decided by the stack plan."""

    pools: tuple[FleetPool, ...] = ()
    mig_strategy: str = "single"
    capacity: dict[str, int] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        total: dict[str, int] = {}
        for pool in self.pools:
            for name, count in pool.capacity().items():
                total[name] = total.get(name, 0) + count
        object.__setattr__(self, "capacity", dict(sorted(total.items())))

    def providers(self, resource: str) -> list[str]:
        """How each pool adds to ``resource``: ``nodeGroups.a100: 7 per node x 2 nodes``."""
        return [
            f"{pool.config_path}: {pool.resources_per_node[resource]} per node x {pool.max_nodes} "
            f"node{'s' if pool.max_nodes != 1 else ''}"
            for pool in self.pools
            if pool.resources_per_node.get(resource)
        ]

    def mig_resources(self) -> list[str]:
        """The MIG resources the fleet advertises (``mixed`` strategy only), sorted."""
        return [name for name in self.capacity if name.startswith(MIG_RESOURCE_PREFIX)]


@dataclass(frozen=True)
class QuotaFindings:
    """What the quota check found: problems refuse the stack, warnings are printed once."""

    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileQuota:
    """One Profile's name and its ``resourceQuota`` (the config's keys as written)."""

    name: str
    resource_quota: Mapping[str, str]


def quota_findings(
    profiles: Sequence[ProfileQuota], fleet: GpuFleet, check: QuotaCheck, path: str = "kubeflow"
) -> QuotaFindings:
    """Check every NVIDIA quota of ``profiles`` against ``fleet``; ``path`` is the kubeflow section's key."""
    problems: list[Problem] = []
    asked: dict[str, list[tuple[str, int]]] = {}
    for index, profile in enumerate(profiles):
        for key, quantity in profile.resource_quota.items():
            resource = gpu_quota_resource(key)
            if resource is None:
                continue
            here = join_path(path, "profiles", index, "resourceQuota", key)
            problem = _key_problem(key, resource, quantity, fleet)
            if problem:
                problems.append(Problem(here, problem))
                continue
            asked.setdefault(resource, []).append((profile.name, int(quantity.lstrip("+"))))
    warnings: list[str] = []
    check_key = join_path(path, "gpuQuotaCheck")
    for resource, quotas in sorted(asked.items()):
        total, offered = sum(n for _name, n in quotas), fleet.capacity[resource]
        if total <= offered:
            continue
        shares = ", ".join(f"{name} {n}" for name, n in quotas)
        message = (
            f"{EXTENDED_RESOURCE_QUOTA_PREFIX}{resource}: the Profiles' quotas add up to {total} ({shares}), "
            f"the fleet provides {offered} at its maximum size ({'; '.join(fleet.providers(resource))})"
        )
        if check == "refuse":
            problems.append(
                Problem(
                    join_path(path, "profiles"),
                    f"{message}; lower the quotas, grow the pools, or set {check_key}: warn to oversubscribe",
                )
            )
        else:
            warnings.append(f"{join_path(path, 'profiles')}: {message}; oversubscribed ({check_key}: warn)")
    return QuotaFindings(tuple(problems), tuple(warnings))


def _key_problem(key: str, resource: str, quantity: str, fleet: GpuFleet) -> str | None:
    uncounted = uncounted_quota_problem(key)
    if uncounted:
        return uncounted
    if resource not in fleet.capacity:
        offered = ", ".join(fleet.capacity) or "none (the stack has no GPU pool)"
        hint = ""
        if resource.startswith(MIG_RESOURCE_PREFIX) and fleet.mig_strategy == "single":
            hint = f" (mig.strategy is single: MIG slices are advertised as {GPU_RESOURCE}; set mig.strategy: mixed)"
        return f"no GPU pool of the stack advertises {resource}{hint}; the fleet offers: {offered}"
    if not isinstance(quantity, str) or not _WHOLE.match(quantity):
        return f"{quantity!r}: a quota of {resource} must be a whole number of devices, e.g. 2"
    return None


# --------------------------------------------------------------------------------------------
# PodDefaults: one per pool, in every Profile namespace
# --------------------------------------------------------------------------------------------


def pool_label_key(pool: str) -> str:
    """The label a ticked PodDefault of ``pool`` matches: ``gpu-platform.io/gpu-pool-<pool>`` (shortened if long)."""
    prefix, name = GPU_POOL_PODDEFAULT_LABEL_PREFIX.split("/", 1)
    name += pool
    if len(name) > _MAX_LABEL_NAME:  # a bare-metal node name may be a long DNS name
        digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_LABEL_NAME - 9].rstrip('.-_')}-{digest}"
    return f"{prefix}/{name}"


def pool_description(pool: FleetPool) -> str:
    """How the spawner names a pool: ``GPU pool a100 (A100-80GB: 7 x nvidia.com/mig-1g.10gb per node)``."""
    resources = ", ".join(f"{n} x {name}" for name, n in pool.resources_per_node.items()) or "no GPU resource"
    return f"GPU pool {pool.name} ({pool.model}: {resources} per node)"


def pod_default(pool: FleetPool, namespace: str) -> dict[str, Any]:
    """The PodDefault of ``pool`` in a Profile namespace: the pool's tolerations, for notebooks that tick it."""
    return {
        "apiVersion": PODDEFAULT_API_VERSION,
        "kind": PODDEFAULT_KIND,
        "metadata": {"name": f"{GPU_POOL_PODDEFAULT_PREFIX}{pool.name}", "namespace": namespace},
        "spec": {
            "desc": f"{pool_description(pool)}: its tolerations",
            "selector": {"matchLabels": {pool_label_key(pool.name): "true"}},
            "tolerations": [dict(toleration) for toleration in pool.tolerations],
        },
    }


# --------------------------------------------------------------------------------------------
# The spawner's dropdowns
# --------------------------------------------------------------------------------------------


def mig_ui_name(resource: str) -> str:
    """``nvidia.com/mig-1g.10gb`` -> ``NVIDIA MIG 1g.10gb``; ``...mig-1g.10gb.me`` -> ``NVIDIA MIG 1g.10gb+me``."""
    profile = resource.removeprefix(MIG_RESOURCE_PREFIX)
    if profile.endswith(".me"):  # the device plugin's spelling of the "+me" profiles (mig_resource_name)
        profile = profile[: -len(".me")] + "+me"
    return f"NVIDIA MIG {profile}"


def spawner_vendors(fleet: GpuFleet) -> list[dict[str, str]]:
    """The GPU vendor entries to add after upstream's ``nvidia.com/gpu``: one per MIG resource the fleet advertises."""
    return [{"limitsKey": resource, "uiName": mig_ui_name(resource)} for resource in fleet.mig_resources()]


def spawner_affinity_options(fleet: GpuFleet) -> list[dict[str, Any]]:
    """One node-affinity option per pool (``required``: the notebook runs on that pool's nodes only)."""
    return [
        {
            "configKey": f"{GPU_POOL_PODDEFAULT_PREFIX}{pool.name}",
            "displayName": pool_description(pool),
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": label, "operator": "In", "values": [value]}
                                    for label, value in sorted(pool.node_selector.items())
                                ]
                            }
                        ]
                    }
                }
            },
        }
        for pool in fleet.pools
    ]
