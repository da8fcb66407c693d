"""What the proof of each step checks: per pool, its nodes' selector and tolerations, the GPU resource a CUDA pod
takes there, the declared driver (version, image, owning NVIDIADriver) and the check script, and for a pool the
program re-partitions its MIG config and the resources a node must then advertise.

Pure data (the ``ProofSettings`` JSON the Job's runner reads, ``components/catalog/proof.py``); the stack program
registers one ``GpuProof`` Job per step with it. The steps are the driver plan's: the canaries,
then the rest (per-pool drivers), or the whole fleet under the ClusterPolicy's one driver; where the hosts own the
driver, one MIG step over the re-partitioned pools (``mig_step_settings``).

The driver plan is the GPU Operator capability's (``components.gpu_operator.drivers``); capabilities never import
each other, so this module names only the few fields it reads (``DriverPlanLike``, ``DriverGroupLike``,
``PoolDriverLike``), which the plan's ``DriverPlan``, ``DriverGroup`` and ``PoolDriver`` have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from components.catalog import gpu_operator_chart as chart
from components.catalog import nvidia_driver as crd
from components.catalog.pools import GpuPool, pool_scheduling


class PoolDriverLike(Protocol):
    """One pool of a driver group: its name and the driver version it runs."""

    @property
    def pool(self) -> str: ...

    @property
    def version(self) -> str: ...


class DriverGroupLike(Protocol):
    """Pools that run the same driver (one NVIDIADriver, named ``name``), and its upgrade waves."""

    @property
    def name(self) -> str: ...

    @property
    def pools(self) -> Sequence[PoolDriverLike]: ...

    @property
    def waves(self) -> int | None: ...


class DriverPlanLike(Protocol):
    """Who owns the driver (``"operator"`` or the hosts), its groups, and whether they are NVIDIADrivers."""

    @property
    def owner(self) -> str: ...

    @property
    def per_pool(self) -> bool: ...

    @property
    def groups(self) -> Sequence[DriverGroupLike]: ...


#: Seconds between two passes of the Job's runner (each pass lists the nodes and pods once).
POLL_SECONDS = 15.0


def _driver_image(values: Mapping[str, Any], obj: Mapping[str, Any] | None, chart_version: str) -> tuple[str, str]:
    """The repository and image the operator runs the driver from (the NVIDIADriver's, else the values')."""
    if obj is not None:
        return str(obj["spec"]["repository"]), str(obj["spec"]["image"])
    default = chart.release(chart_version).images["driver"]
    driver: Mapping[str, Any] = values.get("driver", {})
    return str(driver.get("repository", default.repository)), str(driver.get("image", default.image))


def step_settings(
    step: str,
    groups: Sequence[DriverGroupLike],
    plan: DriverPlanLike,
    pools: Sequence[GpuPool],
    *,
    values: Mapping[str, Any],
    objects: Mapping[str, Mapping[str, Any]],
    chart_version: str,
    resources: Mapping[str, str],
    mig: Mapping[str, tuple[str, Mapping[str, int]]],
    image: str,
    namespace: str,
    operator_namespace: str,
    deadline_seconds: int,
) -> dict[str, Any] | None:
    """The settings of one driver step's proof; None when none of its pools can run a CUDA pod (all skipped).

    ``resources``: pool -> the GPU resource a CUDA pod requests there (a whole GPU or one MIG slice);
    ``mig``: pool -> (its mig-parted config, what a node advertises then) for the pools the program re-partitions.
    ``deadline_seconds`` is per wave (``gpuOperator.timeoutSeconds``: a driver build on a node): the step may take
    as many as its slowest upgrade budget has waves (budgets of different NVIDIADrivers run side by side).
    """
    waves = max((group.waves or 1 for group in groups), default=1)
    by_name = {pool.name: pool for pool in pools}
    entries = []
    for group in groups:
        obj = objects.get(group.name) if plan.per_pool else None
        repository, driver_image = _driver_image(values, obj, chart_version)
        for member in group.pools:
            if member.pool not in resources:
                continue
            entry = _pool_entry(by_name[member.pool], resources[member.pool], mig)
            entry.update(_driver_entry(plan, group, member.version, repository, driver_image))
            entry["check_script"] = crd.driver_check_script(member.version)
            entries.append(entry)
    return _settings(step, entries, image, namespace, operator_namespace, deadline_seconds * waves)


def _driver_entry(
    plan: DriverPlanLike, group: DriverGroupLike, version: str, repository: str, image: str
) -> dict[str, str]:
    """What a node of the group must run: the declared version, the image it starts with, the owning NVIDIADriver."""
    return {
        "driver_version": version,
        "driver_image": crd.driver_image_prefix(repository, image, version),
        "owner": crd.resource_name(group.name) if plan.per_pool else "",
    }


def pool_declarations(
    plan: DriverPlanLike,
    pools: Sequence[GpuPool],
    *,
    values: Mapping[str, Any],
    objects: Mapping[str, Mapping[str, Any]],
    chart_version: str,
    mig: Mapping[str, tuple[str, Mapping[str, int]]],
) -> dict[str, dict[str, Any]]:
    """Per pool, what the rollout controller's continuous proof checks every node of it against: the same driver
    fields as a driver step's proof (empty where the hosts own the driver) and the MIG config and resources where
    the program re-partitions the pool. A pool with nothing declared is left out (nothing to prove).

    Unlike a step's proof, no smoke resource is needed: the continuous proof reads evidence and runs no CUDA pod.
    """
    found: dict[str, dict[str, Any]] = {}
    if plan.owner == "operator":
        for group in plan.groups:
            obj = objects.get(group.name) if plan.per_pool else None
            repository, driver_image = _driver_image(values, obj, chart_version)
            for member in group.pools:
                found[member.pool] = _driver_entry(plan, group, member.version, repository, driver_image)
    for pool in pools:
        if pool.name in mig:
            config, advertised = mig[pool.name]
            entry = found.setdefault(pool.name, {"driver_version": "", "driver_image": "", "owner": ""})
            entry["mig_config"] = config
            entry["mig_resources"] = dict(sorted(advertised.items()))
    return {name: found[name] for name in sorted(found)}


def mig_step_settings(
    step: str,
    pools: Sequence[GpuPool],
    *,
    resources: Mapping[str, str],
    mig: Mapping[str, tuple[str, Mapping[str, int]]],
    host_driver: str,
    image: str,
    namespace: str,
    operator_namespace: str,
    deadline_seconds: int,
) -> dict[str, Any] | None:
    """The proof of the MIG layouts where the hosts own the driver: every node of each re-partitioned pool.

    The CUDA pod still first waits for ``host_driver`` (the declared host driver) on the node's GPUs.
    """
    entries = []
    for pool in pools:
        if pool.name in mig and pool.name in resources:
            entry = _pool_entry(pool, resources[pool.name], mig)
            if host_driver:
                entry["check_script"] = crd.driver_check_script(host_driver)
            entries.append(entry)
    return _settings(step, entries, image, namespace, operator_namespace, deadline_seconds)


def _pool_entry(pool: GpuPool, resource: str, mig: Mapping[str, tuple[str, Mapping[str, int]]]) -> dict[str, Any]:
    scheduling = pool_scheduling(pool)
    entry: dict[str, Any] = {
        "pool": pool.name,
        "selector": dict(scheduling["nodeSelector"]),
        "tolerations": [dict(t) for t in scheduling["tolerations"]],
        "resource": resource,
    }
    if pool.name in mig:
        config, advertised = mig[pool.name]
        entry["mig_config"] = config
        entry["mig_resources"] = dict(sorted(advertised.items()))
    return entry


def _settings(
    step: str,
    entries: list[dict[str, Any]],
    image: str,
    namespace: str,
    operator_namespace: str,
    deadline_seconds: int,
) -> dict[str, Any] | None:
    if not entries:
        return None
    return {
        "step": step,
        "namespace": namespace,
        "operator_namespace": operator_namespace,
        "image": image,
        "pools": sorted(entries, key=lambda entry: entry["pool"]),
        "deadline_seconds": float(deadline_seconds),
        "poll_seconds": POLL_SECONDS,
    }
