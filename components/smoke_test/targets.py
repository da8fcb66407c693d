"""Where the smoke Jobs run: one target per GPU pool and per GPU resource its nodes advertise."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from components.catalog.pools import GpuPool, pool_scheduling


@dataclass(frozen=True)
class SmokeTarget:
    """Where one Job runs and what it requests."""

    pool: str
    resource: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    revision: str = ""
    #: The driver version the pool's nodes must report before the CUDA test runs ("" = not checked).
    driver_version: str = ""

    @property
    def job_name(self) -> str:
        """``gpu-smoke-<pool>-<resource>[-<revision>]``, a valid object name (at most 63 characters).

        The revision is the node group's replacement key: a replaced group gets a new Job, which runs
        on the new nodes before Pulumi deletes the old group at the end of the update.
        """
        suffix = self.resource.removeprefix("nvidia.com/")
        revision = f"-{self.revision}" if self.revision else ""
        base = re.sub(r"[^a-z0-9-]", "-", f"gpu-smoke-{self.pool}-{suffix}".lower())[: 63 - len(revision)]
        return base.rstrip("-") + revision


def smoke_targets(
    pools: Sequence[GpuPool],
    resources_per_node: Mapping[str, Mapping[str, int]],
    skip_pools: Collection[str],
    driver_versions: Mapping[str, str] | None = None,
) -> list[SmokeTarget]:
    """One target per pool (except ``skip_pools``) and per resource it advertises (each MIG profile in use).

    ``driver_versions`` (pool -> declared driver) makes each Job check the node's driver first.
    """
    versions = driver_versions or {}
    targets: list[SmokeTarget] = []
    for pool in pools:
        if pool.name in skip_pools:
            continue
        scheduling = pool_scheduling(pool)
        targets.extend(
            SmokeTarget(
                pool=pool.name,
                resource=resource,
                node_selector=scheduling["nodeSelector"],
                tolerations=scheduling["tolerations"],
                revision=pool.revision,
                driver_version=versions.get(pool.name, ""),
            )
            for resource in resources_per_node[pool.name]
        )
    return targets
