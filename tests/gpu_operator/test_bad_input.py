"""GPU Operator, smoke-test and MIG settings that are legal YAML but wrong are refused by key."""

from __future__ import annotations

import pytest

from tests.helpers import refusal, set_path, stack_raw


@pytest.mark.parametrize("value", ["abc", "-5", "250%", -5])
def test_max_unavailable_must_be_a_count_or_a_percentage(value: object) -> None:
    lines = refusal(set_path(stack_raw("dev"), "gpuOperator.maxUnavailable", value))
    assert any(line.startswith("gpuOperator.maxUnavailable: ") for line in lines), lines
    lines = refusal(set_path(stack_raw("dev"), "gpuOperator.driver.upgradePolicy.maxUnavailable", value))
    assert any(line.startswith("gpuOperator.driver.upgradePolicy.maxUnavailable: ") for line in lines), lines


def test_a_bare_driver_branch_is_not_a_driver_version() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "gpuOperator.driver.version", "580"))
    assert line == (
        "gpuOperator.driver.version: '580' is not a full driver version such as 580.95.05 (a branch like 580 names "
        "no driver)"
    )


@pytest.mark.parametrize("name", ["Critical", "system-gpu", "a b"])
def test_an_invalid_priority_class_name_is_refused(name: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "gpuOperator.priorityClassName", name))
    assert line.startswith(f"gpuOperator.priorityClassName: {name!r}")


@pytest.mark.parametrize("cuda", ["13.9", "garbage"])
def test_an_unknown_smoke_image_cuda_is_refused_not_a_traceback(cuda: str) -> None:
    lines = refusal(set_path(stack_raw("dev"), "smokeTest.imageCuda", cuda))
    assert lines and all(line.startswith("smokeTest.imageCuda: ") for line in lines), lines


def test_a_skipped_smoke_pool_must_exist() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "smokeTest.skipPools", ["h200"]))
    assert line == "smokeTest.skipPools[0]: 'h200' is not a GPU pool; pools: a100, v100"


def test_an_empty_mig_config_map_name_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "mig.configMapName", ""))
    assert line.startswith("mig.configMapName: '' must be a DNS subdomain")


def test_an_invalid_containerd_config_path_is_refused_before_anything_is_built() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.hostPreparation.containerdConfig", "etc/containerd.toml"))
    assert line.startswith(
        "bareMetal.hostPreparation.containerdConfig: 'etc/containerd.toml' is refused by the container-toolkit step's "
        "own input check (CONTAINERD_CONFIG): containerd's main config file, an absolute path"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("gpuOperator.kyverno.namespace", "Kyverno"),
        ("gpuOperator.kyverno.configMap", "kyverno config"),
        ("gpuOperator.kyverno.policies", ["require-labels", "Bad_Name"]),
        ("nodeAgent.namespace", "gpu_platform"),
    ],
)
def test_object_names_the_api_server_would_refuse_are_refused_by_key(key: str, value: object) -> None:
    lines = refusal(set_path(stack_raw("dev"), key, value))
    bad = value[-1] if isinstance(value, list) else value
    expected = f"{key}[1]" if isinstance(value, list) else key
    assert [
        line for line in lines if line.startswith((f"{expected}: {bad!r} must be", f"{expected}: {bad!r} is not"))
    ], lines
