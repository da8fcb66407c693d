"""Helm releases pin one exact chart version and come from an allowed repository."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest
from pulumi_policy import EnforcementLevel

from components.catalog.upstream import GPU_OPERATOR_CHART
from policies.gpu_policies.helm import helm_chart_version_pinned, helm_repository_allowed
from tests.helpers import ROOT
from tests.policies.support import RELEASE_TYPE, config_for, operator_release, run_resource

V4_CHART = "kubernetes:helm.sh/v4:Chart"


@pytest.mark.parametrize("version", ["v26.7.0", "26.7.0", "1.2.3-rc.1", "0.19.0+build.5"])
def test_exact_versions_pass(version: str) -> None:
    assert run_resource(helm_chart_version_pinned, RELEASE_TYPE, operator_release(version=version)).messages == []


@pytest.mark.parametrize("version", ["^26.3.0", "~26.7", ">=26.0.0", "*", "26.x", "26.7", "26.7.x", "v26"])
def test_ranges_are_refused(version: str) -> None:
    outcome = run_resource(helm_chart_version_pinned, RELEASE_TYPE, operator_release(version=version), name="op")
    assert outcome.messages == [
        f"Helm release op (chart gpu-operator) version {version!r} is a range, not one version (Helm reads ^, ~, "
        ">=, *, x and partial versions as constraints); pin an exact version such as v26.7.0"
    ]
    assert helm_chart_version_pinned.enforcement_level is EnforcementLevel.MANDATORY


def test_a_missing_version_is_refused() -> None:
    props = operator_release()
    del props["version"]
    outcome = run_resource(helm_chart_version_pinned, V4_CHART, props, name="op")
    assert outcome.messages == [
        "Helm release op (chart gpu-operator) pins no chart version, so every deploy takes whatever the "
        "repository serves as newest"
    ]


def test_the_nvidia_repository_is_allowed_by_default() -> None:
    assert run_resource(helm_repository_allowed, RELEASE_TYPE, operator_release()).messages == []


def test_another_repository_is_refused() -> None:
    props = {**operator_release(), "repositoryOpts": {"repo": "https://charts.example.com/mirror/"}}
    outcome = run_resource(helm_repository_allowed, RELEASE_TYPE, props, name="op")
    assert outcome.messages == [
        "Helm release op (chart gpu-operator) comes from https://charts.example.com/mirror, which is not an allowed "
        "repository; allowed: https://helm.ngc.nvidia.com/nvidia (policy config allowedRepositories)"
    ]
    assert helm_repository_allowed.enforcement_level is EnforcementLevel.MANDATORY


def test_a_configured_repository_list_replaces_the_default() -> None:
    props = {**operator_release(), "repositoryOpts": {"repo": "https://charts.example.com/mirror"}}
    config = config_for(helm_repository_allowed, allowedRepositories=["https://charts.example.com/mirror/"])
    assert run_resource(helm_repository_allowed, RELEASE_TYPE, props, config=config).messages == []
    nvidia = run_resource(helm_repository_allowed, RELEASE_TYPE, operator_release(), config=config)
    assert "comes from https://helm.ngc.nvidia.com/nvidia, which is not an allowed repository" in nvidia.text


def test_an_oci_chart_is_checked_by_its_registry_path() -> None:
    props = {"chart": "oci://ghcr.io/example/charts/gpu-operator", "version": "v26.7.0"}
    outcome = run_resource(helm_repository_allowed, V4_CHART, props, name="op")
    assert "comes from oci://ghcr.io/example/charts, which is not an allowed repository" in outcome.text
    config = config_for(helm_repository_allowed, allowedRepositories=["oci://ghcr.io/example/charts"])
    assert run_resource(helm_repository_allowed, V4_CHART, props, config=config).messages == []


def test_a_local_chart_needs_allow_local_charts() -> None:
    props = {"chart": "./charts/smoke-test", "version": "0.1.0"}
    outcome = run_resource(helm_repository_allowed, RELEASE_TYPE, props, name="smoke")
    assert outcome.messages == [
        "Helm release smoke (chart ./charts/smoke-test) names no repository (repositoryOpts.repo or an oci:// "
        "chart); install it from one of: https://helm.ngc.nvidia.com/nvidia"
    ]
    config = config_for(helm_repository_allowed, allowLocalCharts=True)
    assert run_resource(helm_repository_allowed, RELEASE_TYPE, props, config=config).messages == []


def test_defaults_apply_when_the_caller_sends_no_config() -> None:
    props = {**operator_release(), "repositoryOpts": {"repo": "https://evil.example.com"}}
    assert len(run_resource(helm_repository_allowed, RELEASE_TYPE, props, config={}).messages) == 1


# A mirrored copy of the pinned chart (gpuOperator.chartPath): the content is the pin.

PINNED_FOLDER = ROOT / GPU_OPERATOR_CHART.path


def _local(chart: str) -> dict:
    props = operator_release()
    del props["version"], props["repositoryOpts"]
    props["chart"] = chart
    return props


def _pack(folder: Path, archive: Path) -> Path:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=GPU_OPERATOR_CHART.strip_prefix)
    return archive


@pytest.mark.parametrize("form", ["relative folder", "absolute folder", "archive"])
def test_a_mirrored_copy_of_the_pinned_chart_passes_both_rules(form: str, tmp_path: Path) -> None:
    chart = {
        "relative folder": GPU_OPERATOR_CHART.path,
        "absolute folder": str(PINNED_FOLDER),
        "archive": str(_pack(PINNED_FOLDER, tmp_path / GPU_OPERATOR_CHART.archive)),
    }[form]
    props = _local(chart)
    assert run_resource(helm_chart_version_pinned, RELEASE_TYPE, props).messages == []
    assert run_resource(helm_repository_allowed, RELEASE_TYPE, props).messages == []


def test_an_edited_local_chart_is_still_refused_by_both_rules(tmp_path: Path) -> None:
    edited = tmp_path / "gpu-operator"
    shutil.copytree(PINNED_FOLDER, edited)
    (edited / "values.yaml").write_text((edited / "values.yaml").read_text() + "\n# edited\n")
    for chart in (str(edited), str(tmp_path / "missing")):
        pinned = run_resource(helm_chart_version_pinned, RELEASE_TYPE, _local(chart), name="op")
        assert pinned.messages and "pins no chart version" in pinned.messages[0]
        repository = run_resource(helm_repository_allowed, RELEASE_TYPE, _local(chart), name="op")
        assert repository.messages and "names no repository" in repository.messages[0]


def test_a_mirrored_chart_passes_only_while_its_repository_is_allowed() -> None:
    settings = config_for(helm_repository_allowed, allowedRepositories=["https://charts.example.com"])
    outcome = run_resource(helm_repository_allowed, RELEASE_TYPE, _local(str(PINNED_FOLDER)), config=settings)
    assert outcome.messages and "names no repository" in outcome.messages[0]
