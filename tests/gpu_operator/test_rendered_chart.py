"""The GPU Operator release rendered with the real pinned chart (v26.7.0) and the real helm.

Each test runs the program under mocks, takes the Release it registers (chart, name, namespace, values in
the wire format) and renders it with ``helm template`` (tests/support/chart_render.py). The expectations
come from the stack config, never from the values dict: what is checked is that each configured operand
setting reaches the ClusterPolicy the operator reconciles (and node-feature-discovery's worker DaemonSet),
read the way the operator reads it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.catalog import gpu_operator_chart as chart
from components.catalog.kubernetes import Taint, tolerates
from components.catalog.names import (
    DRIVER_GROUP_LABEL,
    GPU_NODE_LABEL,
    MIG_ALL_DISABLED,
    MIG_CONFIG_LABEL,
    NVIDIA_DRIVER_TYPE,
)
from components.catalog.pools import gpu_taints
from components.gpu_operator.config import GpuOperatorConfig
from components.stack.config import parse_stack_config
from components.stack.pools import gpu_pools
from preview.run.runner import ProgramRun
from tests.helpers import one_driver, run_raw, stack_raw
from tests.support.chart_render import PINNED_CHART, RenderedChart, render_release

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"
NODE_PATCH = "kubernetes:core/v1:NodePatch"


def _rendered(run: ProgramRun) -> RenderedChart:
    return render_release(run.one(RELEASE, "gpu-operator-release").inputs)


def _taints(raw: dict[str, Any]) -> list[Taint]:
    """Every taint of every GPU pool of the stack config."""
    return gpu_taints(gpu_pools(parse_stack_config(raw)))


def _mig_labels(run: ProgramRun) -> set[str]:
    """Every nvidia.com/mig.config value the program puts on nodes (node groups and bare-metal patches)."""
    values = {r.inputs.get("nodeLabels", {}).get(MIG_CONFIG_LABEL) for r in run.by_type(NODE_GROUP)}
    values |= {r.inputs["metadata"]["labels"].get(MIG_CONFIG_LABEL) for r in run.by_type(NODE_PATCH)}
    return {value for value in values if value}


def _expected_toolkit(raw: dict[str, Any]) -> bool:
    """The config's toolkit: explicit, else off where host preparation configures containerd."""
    stack = parse_stack_config(raw)
    if stack.gpu_operator.toolkit is not None:
        return stack.gpu_operator.toolkit
    prep = stack.bare_metal.host_preparation if stack.bare_metal else None
    return not (prep and prep.enabled and prep.configure_containerd)


def _expected_upgrade_policy(operator: GpuOperatorConfig) -> dict[str, Any]:
    """``driver.upgradePolicy`` of the config, spelled as the ClusterPolicy spells it."""
    policy = operator.driver.upgrade_policy
    drain: dict[str, Any] = {
        "enable": policy.drain.enable,
        "force": policy.drain.force,
        "timeoutSeconds": policy.drain.timeout_seconds,
        "deleteEmptyDir": policy.drain.delete_empty_dir,
    }
    if policy.drain.pod_selector:
        drain["podSelector"] = policy.drain.pod_selector
    wait: dict[str, Any] = {"timeoutSeconds": policy.wait_for_completion.timeout_seconds}
    if policy.wait_for_completion.pod_selector:
        wait["podSelector"] = policy.wait_for_completion.pod_selector
    return {
        "autoUpgrade": policy.auto_upgrade,
        "maxParallelUpgrades": policy.max_parallel_upgrades,
        "maxUnavailable": policy.max_unavailable,
        "podDeletion": {
            "force": policy.gpu_pod_deletion.force,
            "timeoutSeconds": policy.gpu_pod_deletion.timeout_seconds,
            "deleteEmptyDir": policy.gpu_pod_deletion.delete_empty_dir,
        },
        "drain": drain,
        "waitForCompletion": wait,
    }


def assert_configured_settings_rendered(stack: str, raw: dict[str, Any]) -> RenderedChart:
    """Run and render ``raw``; every operand setting of its ``gpuOperator`` (and ``mig``) must show."""
    run = run_raw(stack, raw)
    rendered = _rendered(run)
    spec = rendered.cluster_policy
    operator = parse_stack_config(raw).gpu_operator
    owner = run.outputs["gpuOperator"]["driverOwner"]

    # driver
    assert rendered.operand_enabled("driver") is (owner == "operator")
    drivers = {r.inputs["spec"]["nodeSelector"][DRIVER_GROUP_LABEL]: r.inputs for r in run.by_type(NVIDIA_DRIVER_TYPE)}
    if owner == "operator" and drivers:
        # Per-pool drivers: the ClusterPolicy hands the driver to the NVIDIADriver resources.
        driver = spec["driver"]
        assert driver["useNvidiaDriverCRD"] is True and "version" not in driver
        assert driver["upgradePolicy"] == _expected_upgrade_policy(operator)
        for name, group in parse_stack_config(raw).node_groups.items():
            own = group.driver.version if group.driver and group.driver.version else None
            versions = {
                d["spec"]["version"]
                for d in drivers.values()
                if name in d["metadata"]["annotations"]["gpu-platform.io/pools"].split(",")
            }
            assert versions == {own or operator.driver.version}, name
    elif owner == "operator":
        driver = spec["driver"]
        assert driver["useNvidiaDriverCRD"] is False
        assert driver["version"] == operator.driver.version
        assert driver["kernelModuleType"] == operator.driver.kernel_module_type
        assert driver["usePrecompiled"] is operator.driver.use_precompiled
        assert driver["upgradePolicy"] == _expected_upgrade_policy(operator)
    # toolkit and the optional operands
    assert rendered.operand_enabled("toolkit") is _expected_toolkit(raw)
    assert rendered.operand_enabled("vgpuDeviceManager") is operator.vgpu_device_manager
    assert rendered.operand_enabled("vfioManager") is operator.vfio_manager
    assert rendered.operand_enabled("sandboxDevicePlugin") is operator.sandbox_device_plugin
    assert spec["dcgmExporter"]["serviceMonitor"]["enabled"] is operator.prometheus_operator
    # validator env: the dev-char symlink fix, by default for host drivers only
    symlinks = operator.disable_dev_char_symlinks
    symlinks = owner == "host" if symlinks is None else symlinks
    driver_env = spec["validator"].get("driver", {}).get("env", [])
    assert ({"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"} in driver_env) is symlinks
    # daemonsets: priority class, update strategy, tolerations of every GPU taint plus the chart's own
    daemonsets = spec["daemonsets"]
    assert daemonsets["priorityClassName"] == operator.priority_class_name
    assert daemonsets["updateStrategy"] == operator.update_strategy
    assert daemonsets["rollingUpdate"] == {"maxUnavailable": operator.max_unavailable}
    taints = _taints(raw)
    for taint in taints:
        assert any(tolerates(t, taint) for t in daemonsets["tolerations"]), f"operands do not tolerate {taint}"
    assert chart.GPU_TOLERATION.to_values() in daemonsets["tolerations"]
    # node-feature-discovery's worker: scoped to GPU nodes, tolerating their taints and the control plane
    worker = rendered.nfd_worker()
    if operator.scope_nfd_to_gpu_nodes:
        assert worker["nodeSelector"] == {GPU_NODE_LABEL: "true"}
    else:
        assert GPU_NODE_LABEL not in (worker.get("nodeSelector") or {})
    for taint in taints:
        assert any(tolerates(t, taint) for t in worker["tolerations"]), f"NFD's worker does not tolerate {taint}"
    assert chart.CONTROL_PLANE_TOLERATION.to_values() in worker["tolerations"]
    # MIG: the strategy the outputs promise, mig-manager, and a config for every label the nodes get
    assert spec["mig"]["strategy"] == run.outputs["mig"]["strategy"]
    assert rendered.operand_enabled("migManager") is operator.mig_manager
    _assert_mig_config_rendered(raw, run, rendered)
    return rendered


def _assert_mig_config_rendered(raw: dict[str, Any], run: ProgramRun, rendered: RenderedChart) -> None:
    manager = rendered.cluster_policy["migManager"]
    assert manager["config"]["default"] == MIG_ALL_DISABLED
    env = manager.get("env", [])
    with_reboot = bool((raw.get("mig") or {}).get("withReboot"))
    assert ({"name": "WITH_REBOOT", "value": "true"} in env) is with_reboot
    labels = _mig_labels(run)
    name = manager["config"].get("name")
    if name is None:
        # Named layouts only: the operator's own default-mig-parted-config defines them.
        assert not [c for c in rendered.all("ConfigMap") if "config.yaml" in c.get("data", {})]
        return
    parted = yaml.safe_load(rendered.one("ConfigMap", name)["data"]["config.yaml"])
    assert labels <= set(parted["mig-configs"]), "a node label names a config the ConfigMap does not define"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_configured_operand_setting_reaches_the_cluster_policy(stack: str) -> None:
    assert_configured_settings_rendered(stack, stack_raw(stack))


def test_prod_values_deploy_no_sandbox_device_plugin() -> None:
    """prod says sandboxDevicePlugin: false; the chart's default (true) must not win."""
    rendered = _rendered(run_raw("prod", stack_raw("prod")))
    assert rendered.operand_enabled("sandboxDevicePlugin") is False
    assert "enabled" not in rendered.cluster_policy["sandboxDevicePlugin"], "the chart writes the key only when true"


@pytest.mark.parametrize("enabled", [True, False])
def test_sandbox_device_plugin_is_rendered_as_configured(enabled: bool) -> None:
    raw = stack_raw("dev")
    raw["gpuOperator"]["sandboxDevicePlugin"] = enabled
    rendered = assert_configured_settings_rendered("dev", raw)
    assert rendered.operand_enabled("sandboxDevicePlugin") is enabled


def _dev(**operator: Any) -> dict[str, Any]:
    raw = one_driver(stack_raw("dev"))
    raw["gpuOperator"].update(copy.deepcopy(operator))
    return raw


VARIANTS = {
    "optional operands on": _dev(vgpuDeviceManager=True, vfioManager=True, prometheusOperator=True),
    "mig-manager off": _dev(migManager=False),
    "daemonset scheduling": _dev(
        priorityClassName="gpu-operands", updateStrategy="OnDelete", maxUnavailable="2", scopeNfdToGpuNodes=False
    ),
    "driver build and upgrade policy": _dev(
        driver={
            "owner": "operator",
            "version": "580.95.05",
            "kernelModuleType": "proprietary",
            "usePrecompiled": False,  # true with a full version is refused (precompiled images are per branch)
            "upgradePolicy": {
                "autoUpgrade": False,
                "maxParallelUpgrades": 3,
                "maxUnavailable": 2,
                "gpuPodDeletion": {"force": True, "timeoutSeconds": 120, "deleteEmptyDir": True},
                "drain": {
                    "enable": True,
                    "force": True,
                    "podSelector": "app=notebook",
                    "timeoutSeconds": 900,
                    "deleteEmptyDir": True,
                },
                "waitForCompletion": {"timeoutSeconds": 3600, "podSelector": "app=training"},
            },
        }
    ),
    "dev-char symlink fix for an operator driver": _dev(disableDevCharSymlinks=True),
}


@pytest.mark.parametrize("raw", list(VARIANTS.values()), ids=list(VARIANTS))
def test_dev_variants_render_as_configured(raw: dict[str, Any]) -> None:
    assert_configured_settings_rendered("dev", raw)


def test_host_driver_mode_on_yandex_renders_without_driver_and_toolkit() -> None:
    raw = one_driver(stack_raw("dev"))
    for group in raw["nodeGroups"].values():
        group["gpuEnvironment"] = "runc_drivers_cuda"
    raw["gpuOperator"] = {"driver": {"owner": "host"}, "hostDriver": {"version": "580.95.05"}, "toolkit": False}
    rendered = assert_configured_settings_rendered("dev", raw)
    assert rendered.operand_enabled("driver") is False and rendered.operand_enabled("toolkit") is False


def test_prod_with_reboot_and_without_prometheus_renders_as_configured() -> None:
    raw = stack_raw("prod")
    raw["mig"]["withReboot"] = True
    raw["gpuOperator"]["prometheusOperator"] = False
    rendered = assert_configured_settings_rendered("prod", raw)
    assert {"name": "WITH_REBOOT", "value": "true"} in rendered.cluster_policy["migManager"]["env"]


def test_extra_values_reach_the_cluster_policy() -> None:
    raw = _dev(extraValues={"daemonsets": {"labels": {"team": "ml"}}, "dcgmExporter": {"enablePodLabels": True}})
    rendered = assert_configured_settings_rendered("dev", raw)
    assert rendered.cluster_policy["daemonsets"]["labels"]["team"] == "ml"
    assert rendered.cluster_policy["dcgmExporter"]["enablePodLabels"] is True


def test_the_release_renders_from_a_local_chart_folder_too() -> None:
    """chartPath: the same settings, rendered from the folder the Release points at."""
    raw = _dev(chartPath=str(PINNED_CHART.relative_to(PINNED_CHART.parents[1])))
    run = run_raw("dev", raw)
    inputs = run.one(RELEASE, "gpu-operator-release").inputs
    assert inputs["chart"] == ".upstream/gpu-operator-v26.7.0" and "repositoryOpts" not in inputs
    assert assert_configured_settings_rendered("dev", raw).cluster_policy["driver"]["version"] == "580.95.05"
