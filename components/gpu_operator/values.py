"""The GPU Operator's Helm values, built as one Python dict from the typed config and the catalog.

Never merged from YAML text: a duplicated top-level key in YAML silently drops a whole block. The
chart has no values schema and ignores unknown keys, so ``extraValues`` is checked against the
pinned chart's contract (``components.catalog.gpu_operator_contract``) before it is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from components.base.merge import deep_merge
from components.base.problems import Problem, join_path
from components.catalog import gpu_operator_chart as chart
from components.catalog.gpu_operator_contract import contract_for
from components.catalog.kubernetes import Taint, tolerates
from components.catalog.names import GPU_NODE_LABEL
from components.catalog.pools import GpuPool, gpu_taints
from components.gpu_operator.config import GpuOperatorConfig
from components.gpu_operator.drivers import OPERATOR_PATH, DriverPlan


def _covered(defaults: Iterable[chart.Toleration], taint: Taint) -> bool:
    """True when a chart default toleration already tolerates ``taint``."""
    return any(tolerates(default.to_values(), taint) for default in defaults)


def build_values(
    operator: GpuOperatorConfig,
    pools: Sequence[GpuPool],
    plan: DriverPlan,
    *,
    toolkit: bool,
    mig_values: Mapping[str, Any],
) -> dict[str, Any]:
    """The complete Helm values of the release: ours, then MIG's (``mig_values``), then ``extraValues``."""
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
        "toolkit": {"enabled": toolkit},
        "mig": {"strategy": "single"},
        "migManager": {"enabled": operator.mig_manager},
        "dcgmExporter": {"serviceMonitor": {"enabled": operator.prometheus_operator}},
        "vgpuDeviceManager": {"enabled": operator.vgpu_device_manager},
        "vfioManager": {"enabled": operator.vfio_manager},
        # Always set: values.yaml defaults it to true. The chart writes the ClusterPolicy key only when
        # true, and the operator reads a missing key as false (gpu_operator_chart.OPERAND_ENABLED_WHEN_ABSENT).
        "sandboxDevicePlugin": {"enabled": operator.sandbox_device_plugin},
    }
    if operator.scope_nfd_to_gpu_nodes:
        values["node-feature-discovery"]["worker"]["nodeSelector"] = {GPU_NODE_LABEL: "true"}
    if plan.owner == "operator" and plan.per_pool:
        # One NVIDIADriver resource per driver group, written by the program (gpu_operator.nvidia_drivers). No
        # default resource: it would not overlap ours (it takes only nodes no other resource selects), but it would
        # run the chart's default version on any node the program failed to label; instead every pool is checked
        # to be selected by exactly one of ours (the config check, policy gpu-nodes-have-one-driver-owner). The
        # chart writes the ClusterPolicy's upgradePolicy either way; in this mode the upgrade controller reads
        # each NVIDIADriver's own instead (components.catalog.nvidia_driver, Waves).
        values["driver"].update(
            {
                "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False},
                "upgradePolicy": operator.driver.upgrade_policy.spelled(crd=False),
            }
        )
    elif plan.owner == "operator":
        values["driver"].update(
            {
                "version": plan.version,
                "kernelModuleType": operator.driver.kernel_module_type,
                "usePrecompiled": operator.driver.use_precompiled,
                "upgradePolicy": operator.driver.upgrade_policy.spelled(crd=False),
            }
        )
    disable_symlinks = operator.disable_dev_char_symlinks
    if disable_symlinks is None:
        disable_symlinks = plan.owner == "host"
    if disable_symlinks:
        values["validator"] = {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]}}
    values = deep_merge(values, dict(mig_values))
    return deep_merge(values, operator.extra_values)


def extra_values_problems(operator: GpuOperatorConfig) -> Iterator[Problem]:
    """Every path of ``extraValues`` that the pinned chart does not accept."""
    if operator.chart_version not in chart.SUPPORTED_CHART_VERSIONS:
        return
    contract = contract_for(operator.chart_version)
    for violation in contract.violations(operator.extra_values):
        yield Problem(join_path(OPERATOR_PATH, "extraValues", violation.path), violation.message)
