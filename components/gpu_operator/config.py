"""Config model of the NVIDIA GPU Operator release (``gpuOperator`` in the stack file).

Two situations, chosen by ``driver.owner``:
- ``operator``: the operator builds and owns the driver (Yandex ``runc`` groups, driverless bare-metal
  hosts). ``driver.version`` is pinned here and checked against every GPU architecture in the stack
  and the CUDA level.
- ``host``: the driver is on the host (bare metal, or Yandex ``runc_drivers_cuda`` groups).
  ``hostDriver.version`` declares what the hosts run, checked the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.file_paths import file_path_problem
from components.catalog.gpu_operator_chart import (
    DEFAULT_CHART_VERSION,
    SUPPORTED_CHART_VERSIONS,
    unsupported_version_message,
)
from components.catalog.gpu_operator_operands import operand_max_unavailable_problem
from components.catalog.helm import release_name_problem
from components.catalog.kubernetes import (
    custom_resource_name_problem,
    dns_label_problem,
    object_name_problem,
    priority_class_problem,
    system_namespace_problem,
)
from components.catalog.names import GPU_OPERATOR_NAMESPACE
from components.catalog.versions import full_driver_version_problem
from components.gpu_operator.chart_source import chart_path_problem
from components.gpu_operator.pool_config import KernelModuleType, UpgradePolicy

DriverOwner = Literal["operator", "host"]


class DriverConfig(ConfigModel):
    """Who owns the driver, and the operator-managed driver's settings."""

    owner: DriverOwner | None = Field(
        default=None,
        description="operator or host; default: operator when any Yandex group is runc, else host; on bare metal "
        "operator declares the hosts driverless (no gpuOperator.hostDriver, host preparation checks no host driver)",
    )
    version: str | None = Field(default=None, description="operator-managed driver version, e.g. 580.95.05")
    kernel_module_type: KernelModuleType = "auto"
    use_precompiled: bool = False
    upgrade_policy: UpgradePolicy = UpgradePolicy()


class HostDriverConfig(ConfigModel):
    """The driver the hosts run when ``driver.owner`` is host (checked, and by bare-metal preparation)."""

    version: str


class KyvernoExclusion(ConfigModel):
    """Keep Kyverno from blocking the operator's privileged pods.

    ``webhookNamespaceSelector`` (default, per the Kyverno docs the cheapest and most reliable):
    the API server never sends the namespace's objects to Kyverno's webhooks. ``policyException``:
    a kyverno.io/v2 PolicyException for the named policies (Kyverno must allow exceptions in the
    operator namespace).
    """

    enabled: bool = False
    mode: Literal["webhookNamespaceSelector", "policyException"] = "webhookNamespaceSelector"
    namespace: str = "kyverno"
    config_map: str = "kyverno"
    policies: list[str] = Field(default_factory=list)


class GpuOperatorConfig(ConfigModel):
    """The GPU Operator Helm release."""

    enabled: bool = True
    namespace: str = GPU_OPERATOR_NAMESPACE
    release_name: str = Field(
        default="gpu-operator", description="the Helm release name: at most 53 characters (Helm), a lowercase DNS label"
    )
    chart_version: str = DEFAULT_CHART_VERSION
    chart_path: str | None = Field(
        default=None,
        description="install the chart from this local .tgz or folder (air-gapped), not the NVIDIA Helm "
        "repository; relative to the project folder; must be the pinned chart at chartVersion",
    )
    timeout_seconds: int = Field(default=1800, ge=300, description="driver builds take 10-15 minutes per node")
    driver: DriverConfig = DriverConfig()
    host_driver: HostDriverConfig | None = None
    toolkit: bool | None = Field(
        default=None, description="toolkit.enabled; default: false where host preparation configures containerd"
    )
    vgpu_device_manager: bool = False
    vfio_manager: bool = False
    sandbox_device_plugin: bool = False
    disable_dev_char_symlinks: bool | None = Field(
        default=None, description="validator.driver.env DISABLE_DEV_CHAR_SYMLINK_CREATION; default true for host"
    )
    priority_class_name: str = "system-node-critical"
    update_strategy: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    max_unavailable: str | int = Field(
        default="1",
        description="daemonsets.rollingUpdate.maxUnavailable: a number of nodes (at least 1) or a percentage from 1% "
        "to 100% (the operator writes it with no maxSurge, so 0 would never proceed)",
    )
    scope_nfd_to_gpu_nodes: bool = True
    prometheus_operator: bool = Field(default=False, description="the cluster has the ServiceMonitor CRD")
    mig_manager: bool = True
    kyverno: KyvernoExclusion = KyvernoExclusion()
    extra_values: dict[str, Any] = Field(default_factory=dict, description="rare needs; checked against the chart")

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _count_not_a_boolean(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number of nodes or a percentage such as '25%', not a boolean")
        return value

    def problems(self, path: str) -> Iterator[Problem]:
        """Shape checks that need no other section (the checks across sections: components.stack.plan)."""
        if self.chart_version not in SUPPORTED_CHART_VERSIONS:
            yield Problem(join_path(path, "chartVersion"), unsupported_version_message(self.chart_version))
        elif self.enabled and self.chart_path is not None:
            shape = file_path_problem(self.chart_path)
            problem = f"{self.chart_path[:80]!r} {shape}" if shape else None
            problem = problem or chart_path_problem(Path(self.chart_path), self.chart_version)
            if problem:
                yield Problem(join_path(path, "chartPath"), problem)
        problem = dns_label_problem(self.namespace)
        if problem:
            yield Problem(join_path(path, "namespace"), problem)
        # Helm's own rule first; the chart then names objects after the release (gpu-operator.fullname, truncated
        # to 63), so it is a DNS label as well.
        problem = release_name_problem(self.release_name) or dns_label_problem(self.release_name)
        if problem:
            yield Problem(join_path(path, "releaseName"), problem)
        yield from _kyverno_name_problems(self.kyverno, join_path(path, "kyverno"))
        versions: list[tuple[str, str | None]] = [
            ("driver", self.driver.version),
            ("hostDriver", self.host_driver.version if self.host_driver else None),
        ]
        counts: list[tuple[str, str | int]] = [(join_path(path, "maxUnavailable"), self.max_unavailable)]
        yield from self.driver.upgrade_policy.problems(join_path(path, "driver", "upgradePolicy"))
        problem = system_namespace_problem(self.namespace)
        if problem:
            yield Problem(join_path(path, "namespace"), problem)
        yield from _owned_extra_value_problems(self.extra_values, join_path(path, "extraValues"))
        found = [
            *(
                (join_path(path, key, "version"), full_driver_version_problem(v))
                for key, v in versions
                if v is not None
            ),
            *((key, operand_max_unavailable_problem(value)) for key, value in counts),
            (join_path(path, "priorityClassName"), priority_class_problem(self.priority_class_name)),
        ]
        yield from (Problem(key, problem) for key, problem in found if problem)
        if self.kyverno.enabled and self.kyverno.mode == "policyException" and not self.kyverno.policies:
            yield Problem(
                join_path(path, "kyverno", "policies"), "name at least one Kyverno policy to except the namespace from"
            )


#: ``extraValues`` paths the program writes itself, and the config key that sets each. Why refused: a value
#: laid over ours silently undoes a decision the checks were made for (``driver.nvidiaDriverCRD.deployDefaultCR:
#: true`` adds the chart's default NVIDIADriver, which selects every GPU node, beside the per-pool ones;
#: ``driver.usePrecompiled`` switches the image kind without the checks of ``gpuOperator.driver``).
OWNED_EXTRA_VALUES: dict[tuple[str, ...], str] = {
    ("driver", "enabled"): "gpuOperator.driver.owner",
    ("driver", "version"): "gpuOperator.driver.version (or a pool's driver.version)",
    ("driver", "usePrecompiled"): "gpuOperator.driver.usePrecompiled (or a pool's driver.usePrecompiled)",
    ("driver", "kernelModuleType"): "gpuOperator.driver.kernelModuleType (or a pool's driver.kernelModuleType)",
    ("driver", "upgradePolicy"): "gpuOperator.driver.upgradePolicy (or a pool's driver.upgradePolicy)",
    # The operator gives a node to the one non-default NVIDIADriver that selects it, else to the default one, else
    # to none: no owner label, no driver, no error (catalog.nvidia_driver, "Who owns a node"); the switch on
    # without per-pool drivers leaves every node without one, off with them has the ClusterPolicy ignore ours,
    # and its default resource runs the chart's default driver on nodes the program does not declare.
    ("driver", "nvidiaDriverCRD"): "a pool's own driver (nodeGroups.<name>.driver, bareMetal.nodes[i].driver): "
    "the program writes one NVIDIADriver per distinct driver, each selecting exactly its pools' nodes, and a node "
    "no NVIDIADriver selects gets no driver",
    ("toolkit", "enabled"): "gpuOperator.toolkit",
    ("mig", "strategy"): "mig.strategy",
    ("migManager", "enabled"): "gpuOperator.migManager",
}


def _owned_extra_value_problems(extra: dict[str, Any], path: str) -> Iterator[Problem]:
    """``extraValues`` keys the program owns, each refused with the config key to use instead."""
    for keys, instead in OWNED_EXTRA_VALUES.items():
        node: Any = extra
        for key in keys:
            node = node.get(key, _ABSENT) if isinstance(node, dict) else _ABSENT
        if node is not _ABSENT:
            yield Problem(
                join_path(path, *keys),
                f"is set by gpu-platform from its own config (a value here would undo the checks made for it); "
                f"set {instead} instead",
            )


_ABSENT = object()


def _kyverno_name_problems(kyverno: KyvernoExclusion, path: str) -> Iterator[Problem]:
    """Kyverno's namespace, ConfigMap and policy names, by the rules the API server applies to them."""
    checks = [
        ("namespace", kyverno.namespace, dns_label_problem),
        ("configMap", kyverno.config_map, lambda name: object_name_problem(name, "ConfigMap", "ValidateConfigMapName")),
    ]
    checks += [
        (join_path("policies", index), name, lambda name: custom_resource_name_problem(name, "Kyverno policy"))
        for index, name in enumerate(kyverno.policies)
    ]
    for key, value, rule in checks:
        problem = rule(value)
        if problem:
            yield Problem(join_path(path, key), problem)
