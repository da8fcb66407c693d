"""The GPU Operator's Helm values, built as one Python dict from the typed config and the catalog.

Never merged from YAML text: a duplicated top-level key in YAML silently drops a whole block. The
chart has no values schema and ignores unknown keys, so the finished dict is checked against the
pinned chart's contract (``components.catalog.gpu_operator_contract``) before it is used.

Also here: the fleet-wide driver checks (who owns the driver, is it new enough for the stack's
CUDA, does it support every GPU architecture), because they need the GPU pools and the operator
config together.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from components.catalog import gpu_operator_chart as chart
from components.catalog.drivers import architecture_problem, cuda_problem, max_cuda_for_driver
from components.catalog.gpu_operator_contract import contract_for
from components.catalog.gpus import Architecture
from components.catalog.kubernetes import Taint, tolerates
from components.stack.config import StackConfig
from components.base.config_model import Problem, join_path
from components.stack.pools import GpuPool, gpu_pools, gpu_taints
from components.gpu_operator.config import GpuOperatorConfig
from components.catalog.names import GPU_NODE_LABEL

OPERATOR_PATH = "gpuOperator"


@dataclass(frozen=True)
class DriverPlan:
    """Who owns the driver and which version runs, with the config key that set it."""

    owner: str
    version: str
    config_key: str
    explicit: bool

    @property
    def max_cuda(self) -> str:
        """The newest CUDA level this driver runs."""
        return max_cuda_for_driver(self.version)


def driver_owner(stack: StackConfig, pools: list[GpuPool]) -> str:
    """The configured owner, or the default: operator when any pool is driverless, else host."""
    configured = stack.gpu_operator.driver.owner
    if configured is not None:
        return configured
    if stack.cluster.kind == "bare-metal":
        return "host"
    operator_needed = any(not pool.preinstalled_driver or pool.host_driver_removal for pool in pools)
    return "operator" if operator_needed else "host"


def driver_plan(stack: StackConfig, pools: list[GpuPool]) -> DriverPlan | None:
    """The driver the GPU nodes will run; None when the host driver is required but not declared."""
    operator = stack.gpu_operator
    owner = driver_owner(stack, pools)
    if owner == "operator":
        key = join_path(OPERATOR_PATH, "driver", "version")
        version = operator.driver.version or chart.release(operator.chart_version).default_driver_version
        return DriverPlan("operator", version, key, operator.driver.version is not None)
    if operator.host_driver is None:
        return None
    return DriverPlan("host", operator.host_driver.version, join_path(OPERATOR_PATH, "hostDriver", "version"), True)


def driver_problems(stack: StackConfig) -> Iterator[Problem]:
    """Fleet-wide driver problems: ownership conflicts, CUDA level, GPU architectures."""
    operator = stack.gpu_operator
    pools = gpu_pools(stack)
    if not operator.enabled or not pools:
        return
    owner = driver_owner(stack, pools)
    if owner == "operator" and stack.cluster.kind == "bare-metal":
        yield Problem(
            join_path(OPERATOR_PATH, "driver", "owner"),
            "operator cannot own the driver on bare-metal nodes: their driver is installed on the host "
            "(checked by host preparation); use host and declare gpuOperator.hostDriver.version",
        )
        return
    for pool in pools:
        if owner == "host" and pool.host_driver_removal:
            yield Problem(
                join_path(pool.config_path, "hostDriverRemoval"),
                "removal hands the node to the GPU Operator's driver, but gpuOperator.driver.owner is host "
                "(driver.enabled=false), so nothing would replace the removed driver; set gpuOperator.driver.owner: operator",
            )
        if owner == "operator" and pool.preinstalled_driver and not pool.host_driver_removal:
            yield Problem(
                join_path(pool.config_path, "hostDriverRemoval"),
                "this group boots with a preinstalled driver while the GPU Operator owns the driver "
                "(gpuOperator.driver.owner: operator), so two drivers would fight; recreate the group with "
                "gpuEnvironment: runc (recommended) or set hostDriverRemoval: true",
            )
        if owner == "host" and not pool.preinstalled_driver and stack.cluster.kind == "yandex":
            yield Problem(
                join_path(pool.config_path, "gpuEnvironment"),
                "runc nodes have no driver, but gpuOperator.driver.owner is host; use owner operator "
                "or gpuEnvironment: runc_drivers_cuda",
            )
    plan = driver_plan(stack, pools)
    if plan is None:
        yield Problem(
            join_path(OPERATOR_PATH, "hostDriver", "version"),
            "is required when the hosts own the driver: declare the driver version the nodes run, e.g. 580.95.05",
        )
        return
    default_note = "" if plan.explicit else f" (the chart {operator.chart_version} default; set {plan.config_key})"
    for architecture in sorted({pool.model.architecture for pool in pools}, key=list(Architecture).index):
        problem = architecture_problem(plan.version, architecture)
        if problem:
            users = ", ".join(p.config_path for p in pools if p.model.architecture == architecture)
            yield Problem(plan.config_key, f"{problem}{default_note}; used by {users}")
    if stack.smoke_test.enabled:
        smoke = cuda_problem(plan.version, stack.smoke_test.image_cuda, stack.cuda.check)
        if smoke:
            yield Problem(
                "smokeTest.imageCuda",
                f"the smoke-test image cannot run: {smoke}; pick an image built with an older CUDA",
            )
    cuda = cuda_problem(plan.version, stack.cuda.version, stack.cuda.check)
    if cuda:
        yield Problem(plan.config_key, f"{cuda}{default_note}; the workloads' CUDA is set in cuda.version")
    if operator.toolkit and host_configures_containerd(stack):
        yield Problem(
            join_path(OPERATOR_PATH, "toolkit"),
            "true would make the operator's container toolkit and host preparation both rewrite containerd's "
            "config; leave it unset (false) or set bareMetal.hostPreparation.configureContainerd: false",
        )
    if operator.driver.kernel_module_type == "open" and any(p.model.architecture == Architecture.VOLTA for p in pools):
        yield Problem(
            join_path(OPERATOR_PATH, "driver", "kernelModuleType"),
            "open kernel modules need Turing or newer; Volta (V100) needs proprietary or auto",
        )


def host_configures_containerd(stack: StackConfig) -> bool:
    """True when bare-metal host preparation registers the NVIDIA runtime with containerd itself."""
    prep = stack.bare_metal.host_preparation if stack.bare_metal else None
    return bool(prep and prep.enabled and prep.configure_containerd)


def toolkit_enabled(stack: StackConfig) -> bool:
    """The operator's toolkit runs unless the hosts configure containerd (both would fight over it)."""
    configured = stack.gpu_operator.toolkit
    return (not host_configures_containerd(stack)) if configured is None else configured


def _covered(defaults: Iterable[chart.Toleration], taint: Taint) -> bool:
    """True when a chart default toleration already tolerates ``taint``."""
    return any(tolerates(default.to_values(), taint) for default in defaults)


def _upgrade_policy(operator: GpuOperatorConfig) -> dict[str, Any]:
    policy = operator.driver.upgrade_policy
    return {
        "autoUpgrade": policy.auto_upgrade,
        "maxParallelUpgrades": policy.max_parallel_upgrades,
        "maxUnavailable": policy.max_unavailable,
        "gpuPodDeletion": {
            "force": policy.gpu_pod_deletion.force,
            "timeoutSeconds": policy.gpu_pod_deletion.timeout_seconds,
            "deleteEmptyDir": policy.gpu_pod_deletion.delete_empty_dir,
        },
        "drain": {
            "enable": policy.drain.enable,
            "force": policy.drain.force,
            "podSelector": policy.drain.pod_selector,
            "timeoutSeconds": policy.drain.timeout_seconds,
            "deleteEmptyDir": policy.drain.delete_empty_dir,
        },
        "waitForCompletion": {
            "timeoutSeconds": policy.wait_for_completion.timeout_seconds,
            "podSelector": policy.wait_for_completion.pod_selector,
        },
    }


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge rule: maps merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def build_values(stack: StackConfig) -> dict[str, Any]:
    """The complete Helm values of the release (call only for a stack whose problems are empty)."""
    operator = stack.gpu_operator
    pools = gpu_pools(stack)
    plan = driver_plan(stack, pools)
    assert plan is not None  # driver_problems refused the stack otherwise
    release = chart.release(operator.chart_version)
    taints = gpu_taints(pools)
    daemonset_extra = [t.toleration() for t in taints if not _covered(release.daemonset_tolerations, t)]
    nfd_extra = [t.toleration() for t in taints if not _covered(release.nfd_worker_tolerations, t)]
    values: dict[str, Any] = {
        "daemonsets": {
            "priorityClassName": operator.priority_class_name,
            "updateStrategy": operator.update_strategy,
            "rollingUpdate": {"maxUnavailable": operator.max_unavailable},
            "tolerations": chart.daemonset_tolerations(daemonset_extra, operator.chart_version),
        },
        "node-feature-discovery": {
            "worker": {"tolerations": chart.nfd_worker_tolerations(nfd_extra, operator.chart_version)},
        },
        "driver": {"enabled": plan.owner == "operator"},
        "toolkit": {"enabled": toolkit_enabled(stack)},
        "mig": {"strategy": "single"},
        "migManager": {"enabled": operator.mig_manager},
        "dcgmExporter": {"serviceMonitor": {"enabled": operator.prometheus_operator}},
        "vgpuDeviceManager": {"enabled": operator.vgpu_device_manager},
        "vfioManager": {"enabled": operator.vfio_manager},
    }
    if operator.sandbox_device_plugin:
        # The chart renders this key only when true; false is the operator's behaviour without it.
        values["sandboxDevicePlugin"] = {"enabled": True}
    if operator.scope_nfd_to_gpu_nodes:
        values["node-feature-discovery"]["worker"]["nodeSelector"] = {GPU_NODE_LABEL: "true"}
    if plan.owner == "operator":
        values["driver"].update(
            {
                "version": plan.version,
                "kernelModuleType": operator.driver.kernel_module_type,
                "usePrecompiled": operator.driver.use_precompiled,
                "upgradePolicy": _upgrade_policy(operator),
            }
        )
    disable_symlinks = operator.disable_dev_char_symlinks
    if disable_symlinks is None:
        disable_symlinks = plan.owner == "host"
    if disable_symlinks:
        values["validator"] = {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]}}
    from components.mig.plan import mig_values, plan_mig

    values = _deep_merge(values, mig_values(stack, plan_mig(stack)[0]))
    return _deep_merge(values, operator.extra_values)


def extra_values_problems(operator: GpuOperatorConfig) -> Iterator[Problem]:
    """Every path of ``extraValues`` that the pinned chart does not accept."""
    if operator.chart_version not in chart.SUPPORTED_CHART_VERSIONS:
        return
    contract = contract_for(operator.chart_version)
    for violation in contract.violations(operator.extra_values):
        yield Problem(join_path(OPERATOR_PATH, "extraValues", violation.path), violation.message)
