"""The ``NVIDIADriver`` object of one driver group, as plain data (the stack plan builds them, tests validate them).

Each object selects the nodes whose ``gpu-platform.io/driver`` label names its group, so a node matches
exactly one object. The spec carries what the chart's own default object would
(``templates/nvidiadriver.yaml``: repository, image, manager, rdma, the operand tolerations), plus the
group's version, kernel module type, precompiled switch, upgrade policy and node selector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.catalog import gpu_operator_chart as chart
from components.catalog import nvidia_driver as crd
from components.catalog.names import (
    DRIVER_CUDA_ANNOTATION,
    DRIVER_GROUP_LABEL,
    DRIVER_POOLS_ANNOTATION,
    GPU_MODELS_ANNOTATION,
    MANAGED_BY_LABELS,
)
from components.gpu_operator.config import GpuOperatorConfig
from components.gpu_operator.drivers import DriverGroup


def nvidia_driver_object(
    group: DriverGroup, operator: GpuOperatorConfig, values: Mapping[str, Any], gpu_models: Sequence[str]
) -> dict[str, Any]:
    """The whole NVIDIADriver object of one group (what the API server receives)."""
    release = chart.release(operator.chart_version)
    driver_image, manager = release.images["driver"], release.images["driver.manager"]
    # What the values say wins (a mirrored registry in extraValues), as it would in the chart's default object.
    driver_values: Mapping[str, Any] = values.get("driver", {})
    manager_values: Mapping[str, Any] = driver_values.get("manager", {})
    driver = group.driver
    spec: dict[str, Any] = {
        "default": False,
        "driverType": crd.DRIVER_TYPE,
        "repository": driver_values.get("repository", driver_image.repository),
        "image": driver_values.get("image", driver_image.image),
        "version": driver.version,
        "kernelModuleType": driver.kernel_module_type,
        "usePrecompiled": driver.use_precompiled,
        "nodeSelector": {DRIVER_GROUP_LABEL: group.name},
        "manager": {
            "repository": manager_values.get("repository", manager.repository),
            "image": manager_values.get("image", manager.image),
            "version": manager_values.get("version", manager.version),
        },
        "rdma": {"enabled": False, "useHostMofed": False},
        "tolerations": [dict(t) for t in values["daemonsets"]["tolerations"]],
        "priorityClassName": operator.priority_class_name,
        "upgradePolicy": driver.upgrade_policy.spelled(crd=True),
    }
    return {
        "apiVersion": crd.API_VERSION,
        "kind": crd.KIND,
        "metadata": {
            "name": crd.resource_name(group.name),
            "labels": dict(MANAGED_BY_LABELS),
            "annotations": {
                # Read by the policy pack: each driver is checked against its own pools.
                DRIVER_POOLS_ANNOTATION: ",".join(p.pool for p in group.pools),
                GPU_MODELS_ANNOTATION: ",".join(sorted(set(gpu_models))),
                DRIVER_CUDA_ANNOTATION: group.cuda,
            },
        },
        "spec": spec,
    }
