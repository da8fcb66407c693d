"""The GPU Operator release: values built from config, checked against the chart, in both driver modes."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.gpu_operator.component import kyverno_webhooks
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT, one_driver, plan_raw, refusal, set_path, stack_raw
from tests.support.chart_render import render_release


def _values(raw: dict[str, Any]) -> dict[str, Any]:
    """The GPU Operator values the plan of ``raw`` installs."""
    operator = plan_raw(raw).operator
    assert operator is not None, "the stack installs the GPU Operator"
    return operator.values


RELEASE = "kubernetes:helm.sh/v3:Release"


def _dev_config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


def _run(**overrides: Any) -> ProgramRun:
    """dev with one driver for every pool (its A100 group's own driver dropped), with ``overrides``."""
    single = {"nodeGroups": one_driver(stack_raw("dev", expand_defaults=False))["nodeGroups"]}
    merged = {**single, **overrides}
    return run_program("dev", overrides={f"gpu-platform:{k}": v for k, v in merged.items()})


def _preinstalled_host_mode() -> dict[str, Any]:
    """dev, but every group keeps the image's driver and the hosts own it."""
    groups = one_driver(stack_raw("dev"))["nodeGroups"]
    for group in groups.values():
        group["gpuEnvironment"] = "runc_drivers_cuda"
    operator = {"driver": {"owner": "host"}, "hostDriver": {"version": "580.95.05"}, "toolkit": False}
    return {"nodeGroups": groups, "gpuOperator": operator}


def test_dev_release_is_pinned_atomic_and_sized_for_driver_builds() -> None:
    release = _run().one(RELEASE, "gpu-operator-release").inputs
    assert release["chart"] == "gpu-operator"
    assert release["version"] == "v26.7.0"
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert release["name"] == "gpu-operator" and release["namespace"] == "gpu-operator"
    assert release["atomic"] is True and release["cleanupOnFail"] is True
    assert release["timeout"] == 1800.0


def test_dev_values_operator_managed_r580_driver() -> None:
    values = _run().one(RELEASE, "gpu-operator-release").inputs["values"]
    driver = values["driver"]
    assert driver["enabled"] is True and driver["version"] == "580.95.05"
    assert driver["upgradePolicy"]["drain"]["enable"] is True
    assert driver["upgradePolicy"]["maxParallelUpgrades"] == 1
    assert "validator" not in values, "the dev-char symlink fix is for host drivers"


def test_tolerations_cover_every_gpu_taint_and_keep_the_chart_defaults() -> None:
    values = _run().one(RELEASE, "gpu-operator-release").inputs["values"]
    daemonsets = values["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in daemonsets
    assert {
        "key": "gpu-platform.io/workload",
        "operator": "Equal",
        "value": "notebooks",
        "effect": "NoSchedule",
    } in daemonsets
    nfd = values["node-feature-discovery"]["worker"]
    assert {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    } in nfd["tolerations"]
    assert {
        "key": "gpu-platform.io/workload",
        "operator": "Equal",
        "value": "notebooks",
        "effect": "NoSchedule",
    } in nfd["tolerations"]
    assert nfd["nodeSelector"] == {"gpu-platform.io/gpu": "true"}
    assert "nodeSelector" not in values["daemonsets"], "daemonsets.nodeSelector does not exist in the chart"


def test_namespace_allows_privileged_pods() -> None:
    labels = _run().one("kubernetes:core/v1:Namespace", "gpu-operator-namespace").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


def test_release_waits_for_the_node_groups() -> None:
    run = _run()
    release = run.one(RELEASE, "gpu-operator-release")
    group = run.one("yandex:index/kubernetesNodeGroup:KubernetesNodeGroup", "gpu-v100-group")
    assert group.urn in release.dependencies


def test_host_driver_mode_values() -> None:
    run = _run(**_preinstalled_host_mode())
    assert run.config_error is None, run.config_error
    values = run.one(RELEASE, "gpu-operator-release").inputs["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["validator"]["driver"]["env"] == [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]
    operator = run.outputs["gpuOperator"]
    assert operator["driverOwner"] == "host" and operator["driverVersion"] == "580.95.05"


def test_dev_operator_outputs() -> None:
    operator = _run().outputs["gpuOperator"]
    assert operator == {
        "namespace": "gpu-operator",
        "releaseName": "gpu-operator",
        "chartVersion": "v26.7.0",
        "driverOwner": "operator",
        "driverVersion": "580.95.05",
        "maxCuda": "13.0",
        "gpuResourceNames": ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"],  # dev runs mig.strategy mixed
    }


def test_v100_stack_cannot_get_an_r595_driver() -> None:
    lines = refusal(set_path(stack_raw("dev"), "gpuOperator.driver.version", "595.91.07"))
    assert len(lines) == 1
    assert lines[0].startswith("gpuOperator.driver.version: driver 595.91.07 (R595) does not support Volta GPUs")
    assert "nodeGroups.v100" in lines[0]


def test_chart_default_driver_is_refused_for_v100_with_advice() -> None:
    raw = stack_raw("dev")
    del raw["gpuOperator"]["driver"]["version"]
    (line,) = refusal(raw)
    assert "595.91.07" in line and "the chart v26.7.0 default; set gpuOperator.driver.version" in line


def test_cuda_12_8_workloads_cannot_run_on_a_550_driver() -> None:
    raw = set_path(stack_raw("dev"), "cuda.version", "12.8")
    lines = refusal(set_path(raw, "gpuOperator.driver.version", "550.144.03"))
    (line,) = [line for line in lines if line.startswith("gpuOperator.driver.version:")]
    assert line.startswith("gpuOperator.driver.version: driver 550.144.03 is too old for CUDA 12.8 workloads")
    assert "570.26" in line


def test_host_driver_is_checked_like_the_operators() -> None:
    raw = {**stack_raw("dev"), **_preinstalled_host_mode()}
    raw = set_path(raw, "cuda.version", "12.8")
    lines = refusal(set_path(raw, "gpuOperator.hostDriver.version", "550.144.03"))
    assert any(
        line.startswith("gpuOperator.hostDriver.version: driver 550.144.03 is too old for CUDA 12.8") for line in lines
    )
    assert any(line.startswith("smokeTest.imageCuda: the smoke-test image cannot run") for line in lines)


def test_host_mode_needs_the_declared_host_driver() -> None:
    raw = {**stack_raw("dev"), **_preinstalled_host_mode()}
    del raw["gpuOperator"]["hostDriver"]
    assert refusal(raw) == [
        "gpuOperator.hostDriver.version: is required when the hosts own the driver: declare the driver version the nodes run, e.g. 580.95.05"
    ]


def test_preinstalled_group_under_an_operator_driver_needs_removal() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.v100.gpuEnvironment", "runc_drivers_cuda")
    (line,) = refusal(raw)
    assert line.startswith("nodeGroups.v100.hostDriverRemoval: this group boots with a preinstalled driver")
    assert plan_raw(set_path(raw, "nodeGroups.v100.hostDriverRemoval", True))


def test_extra_values_outside_the_chart_contract_are_refused() -> None:
    raw = set_path(stack_raw("dev"), "gpuOperator.extraValues", {"daemonsets": {"nodeSelector": {"a": "b"}}})
    (line,) = refusal(raw)
    assert line.startswith("gpuOperator.extraValues.daemonsets.nodeSelector:")


def test_extra_values_inside_the_contract_are_merged() -> None:
    raw = set_path(stack_raw("dev"), "gpuOperator.extraValues", {"daemonsets": {"labels": {"team": "ml"}}})
    values = _values(raw)
    assert values["daemonsets"]["labels"] == {"team": "ml"}
    assert values["daemonsets"]["priorityClassName"] == "system-node-critical", "maps merge, they do not replace"


def test_unknown_chart_version_is_refused_with_the_supported_list() -> None:
    lines = refusal(set_path(stack_raw("dev"), "gpuOperator.chartVersion", "26.7.0"))
    assert any(line.startswith("gpuOperator.chartVersion:") and "v26.7.0" in line for line in lines)


def test_kyverno_webhook_exclusion_keeps_kyvernos_defaults() -> None:
    run = _run(gpuOperator={**_dev_config()["gpu-platform:gpuOperator"], "kyverno": {"enabled": True}})
    patch = run.one("kubernetes:core/v1:ConfigMapPatch", "gpu-operator-kyverno-webhooks").inputs
    assert patch["metadata"]["name"] == "kyverno" and patch["metadata"]["namespace"] == "kyverno"
    assert patch["data"]["webhooks"] == kyverno_webhooks("gpu-operator", "kyverno")
    assert '"values":["gpu-operator","kube-system","kyverno"]' in patch["data"]["webhooks"]


def test_kyverno_policy_exception() -> None:
    kyverno = {"enabled": True, "mode": "policyException", "policies": ["disallow-privileged-containers"]}
    run = _run(gpuOperator={**_dev_config()["gpu-platform:gpuOperator"], "kyverno": kyverno})
    exception = run.one("kubernetes:kyverno.io/v2:PolicyException", "gpu-operator-kyverno-exception").inputs
    assert exception["spec"]["exceptions"] == [{"policyName": "disallow-privileged-containers", "ruleNames": ["*"]}]
    assert exception["spec"]["match"]["any"][0]["resources"]["namespaces"] == ["gpu-operator"]


@pytest.mark.parametrize(
    ("kyverno", "kind", "name"),
    [
        ({"enabled": True}, "kubernetes:core/v1:ConfigMapPatch", "gpu-operator-kyverno-webhooks"),
        (
            {"enabled": True, "mode": "policyException", "policies": ["disallow-privileged-containers"]},
            "kubernetes:kyverno.io/v2:PolicyException",
            "gpu-operator-kyverno-exception",
        ),
    ],
)
def test_the_release_waits_for_the_kyverno_exclusion(kyverno: dict[str, Any], kind: str, name: str) -> None:
    """Operand pods admitted before the exclusion exists would be refused and the atomic release rolled back."""
    run = _run(gpuOperator={**_dev_config()["gpu-platform:gpuOperator"], "kyverno": kyverno})
    exclusion = run.one(kind, name)
    release = run.one(RELEASE, "gpu-operator-release")
    assert exclusion.urn in release.dependencies
    assert release.urn not in exclusion.dependencies


def test_prod_release_waits_for_its_kyverno_webhook_exclusion() -> None:
    run = run_program("prod")
    patch = run.one("kubernetes:core/v1:ConfigMapPatch", "gpu-operator-kyverno-webhooks")
    assert patch.urn in run.one(RELEASE, "gpu-operator-release").dependencies


def test_removal_needs_an_operator_that_installs_the_driver() -> None:
    raw = {**stack_raw("dev"), **_preinstalled_host_mode()}
    raw = set_path(raw, "nodeGroups.v100.hostDriverRemoval", True)
    lines = refusal(raw)
    assert any(
        line.startswith("nodeGroups.v100.hostDriverRemoval: removal hands the node to the GPU Operator's driver")
        for line in lines
    )


def test_removal_makes_the_operator_the_default_owner() -> None:
    raw = {**stack_raw("dev"), **_preinstalled_host_mode()}
    # One budget for the ClusterPolicy's driver over both handed-over pools: the default 25% of their 5 nodes is
    # 2, more than the node agent's 1 per pool (refused, tests/stack/test_shared_budget.py), so 1 node at a time.
    raw["gpuOperator"] = {"driver": {"version": "580.95.05", "upgradePolicy": {"maxUnavailable": 1}}}
    for name in raw["nodeGroups"]:
        raw = set_path(raw, ("nodeGroups", name, "hostDriverRemoval"), True)
    values = _values(raw)
    assert values["driver"]["enabled"] is True


def test_an_operator_owned_driver_on_bare_metal_means_driverless_hosts() -> None:
    """prod declares a host driver and host-configured containerd: both contradict driverless hosts."""
    lines = refusal(set_path(stack_raw("prod"), "gpuOperator.driver.owner", "operator"))
    assert sorted(line.split(":")[0] for line in lines) == [
        "bareMetal.hostPreparation.configureContainerd",
        "gpuOperator.hostDriver",
    ]


# Air-gapped install: the chart from a local folder or archive (gpuOperator.chartPath).
PINNED_CHART = ".upstream/gpu-operator-v26.7.0"


def _pack(folder: Path, archive: Path) -> Path:
    """A chart archive laid out like `helm package` (one top folder, gpu-operator/)."""
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="gpu-operator")
    return archive


def _chart_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "gpu-operator"
    shutil.copytree(ROOT / PINNED_CHART, copy)
    return copy


def test_release_installs_from_the_nvidia_repository_by_default() -> None:
    release = _run().one(RELEASE, "gpu-operator-release").inputs
    assert (release["chart"], release["version"]) == ("gpu-operator", "v26.7.0")
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}


def test_release_installs_from_a_local_chart_folder() -> None:
    run = _run(gpuOperator={**_dev_config()["gpu-platform:gpuOperator"], "chartPath": PINNED_CHART})
    assert run.config_error is None, run.config_error
    release = run.one(RELEASE, "gpu-operator-release").inputs
    assert release["chart"] == PINNED_CHART
    assert "repositoryOpts" not in release and "version" not in release, "a local chart is checked, not looked up"
    assert release["values"]["driver"]["version"] == "580.95.05"
    assert run.outputs["gpuOperator"]["chartVersion"] == "v26.7.0"


def test_release_installs_from_a_mirrored_chart_archive(tmp_path: Path) -> None:
    archive = _pack(ROOT / PINNED_CHART, tmp_path / "gpu-operator-v26.7.0.tgz")
    run = _run(gpuOperator={**_dev_config()["gpu-platform:gpuOperator"], "chartPath": str(archive)})
    assert run.config_error is None, run.config_error
    release = run.one(RELEASE, "gpu-operator-release").inputs
    assert release["chart"] == str(archive) and "repositoryOpts" not in release
    rendered = render_release(release)
    assert rendered.cluster_policy["driver"]["version"] == "580.95.05", "helm renders the archive itself"


def _chart_path_refusal(path: Path | str) -> str:
    (line,) = refusal(set_path(stack_raw("dev"), "gpuOperator.chartPath", str(path)))
    assert line.startswith("gpuOperator.chartPath: ")
    return line


def test_a_missing_chart_path_is_refused(tmp_path: Path) -> None:
    line = _chart_path_refusal(tmp_path / "gpu-operator-v26.7.0.tgz")
    assert "does not exist" in line and "Air-gapped install" in line


def test_a_chart_at_another_version_is_refused(tmp_path: Path) -> None:
    chart = _chart_copy(tmp_path)
    manifest = chart / "Chart.yaml"
    manifest.write_text(manifest.read_text().replace("version: v26.7.0", "version: v26.3.3"))
    line = _chart_path_refusal(_pack(chart, tmp_path / "gpu-operator-v26.3.3.tgz"))
    assert "holds gpu-operator v26.3.3, but gpuOperator.chartVersion is v26.7.0" in line


def test_an_edited_copy_of_the_pinned_chart_is_refused(tmp_path: Path) -> None:
    chart = _chart_copy(tmp_path)
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("repository: nvcr.io/nvidia", "repository: registry.example.com", 1))
    line = _chart_path_refusal(chart)
    assert "other content than the pinned chart" in line and "components/catalog/upstream.py" in line


def test_a_path_that_is_not_a_chart_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a chart")
    assert "not a Helm chart" in _chart_path_refusal(tmp_path)
    assert "neither a chart folder nor a readable chart archive" in _chart_path_refusal(tmp_path / "notes.txt")
