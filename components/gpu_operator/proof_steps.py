"""What the proof of each driver step checks: per pool, its nodes' selector and tolerations, the GPU resource a
CUDA pod takes there, the declared driver (version, image, owning NVIDIADriver) and the check script.

Pure data (the ``ProofSettings`` JSON the checker reads, ``components/node_agent/agent/proof/check.py``); the
stack program registers one ``GpuProof`` Job per step with it. The steps are the driver plan's: the canaries,
then the rest (per-pool drivers), or the whole fleet under the ClusterPolicy's one driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.catalog import gpu_operator_chart as chart
from components.catalog import nvidia_driver as crd
from components.catalog.pools import GpuPool, pool_scheduling
from components.gpu_operator.drivers import DriverGroup, DriverPlan

#: Seconds between two passes of the checker (each pass lists the nodes and pods once).
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
    groups: Sequence[DriverGroup],
    plan: DriverPlan,
    pools: Sequence[GpuPool],
    *,
    values: Mapping[str, Any],
    objects: Mapping[str, Mapping[str, Any]],
    chart_version: str,
    resources: Mapping[str, str],
    image: str,
    namespace: str,
    operator_namespace: str,
    deadline_seconds: int,
) -> dict[str, Any] | None:
    """The settings of one step's proof; None when none of its pools can run a CUDA pod (all skipped).

    ``resources``: pool -> the GPU resource a CUDA pod requests there (a whole GPU or one MIG slice).
    """
    by_name = {pool.name: pool for pool in pools}
    entries = []
    for group in groups:
        obj = objects.get(group.name) if plan.per_pool else None
        repository, driver_image = _driver_image(values, obj, chart_version)
        for member in group.pools:
            if member.pool not in resources:
                continue
            scheduling = pool_scheduling(by_name[member.pool])
            entries.append(
                {
                    "pool": member.pool,
                    "selector": dict(scheduling["nodeSelector"]),
                    "tolerations": [dict(t) for t in scheduling["tolerations"]],
                    "resource": resources[member.pool],
                    "driver_version": member.version,
                    "driver_image": crd.driver_image_prefix(repository, driver_image, member.version),
                    "owner": crd.resource_name(group.name) if plan.per_pool else "",
                    "check_script": crd.driver_check_script(member.version),
                }
            )
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
