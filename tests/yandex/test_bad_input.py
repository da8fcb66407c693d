"""Yandex node-group config that is legal YAML but wrong is refused with the key, the value and what is allowed."""

from __future__ import annotations

import pytest

from tests.helpers import plan_raw, refusal, set_path, stack_raw

V100 = "nodeGroups.v100"


def test_a_taint_listed_twice_or_with_the_same_key_and_effect_is_refused() -> None:
    taints = ["nvidia.com/gpu=true:NoSchedule", "nvidia.com/gpu=false:NoSchedule"]
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.taints", taints))
    assert line == (
        f"{V100}.taints: taint nvidia.com/gpu=false:NoSchedule repeats key 'nvidia.com/gpu' with effect NoSchedule; keep one"
    )


def test_a_newline_inside_a_taint_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.taints", ["nvidia.com/gpu\n=true:NoSchedule"]))
    assert line.startswith(f"{V100}.taints[0]: taint 'nvidia.com/gpu\\n=true:NoSchedule'")
    assert "whitespace" in line


@pytest.mark.parametrize("duration", ["0m", "999h", "30m", "25h"])
def test_maintenance_windows_outside_one_to_24_hours_are_refused(duration: str) -> None:
    windows = [{"day": "saturday", "startTime": "02:00", "duration": duration}]
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.maintenance.windows", windows))
    assert (
        line
        == f"{V100}.maintenance.windows[0].duration: duration {duration!r} must be from 1h to 24h (Yandex maintenance windows)"
    )


def test_two_windows_on_one_day_are_refused() -> None:
    window = {"day": "saturday", "startTime": "02:00", "duration": "2h"}
    (line,) = refusal(
        set_path(stack_raw("dev"), f"{V100}.maintenance.windows", [window, {**window, "startTime": "10:00"}])
    )
    assert line == f"{V100}.maintenance: one window per day; saturday has more than one"


def test_a_scale_beyond_any_kubernetes_cluster_is_refused() -> None:
    raw = set_path(stack_raw("dev"), f"{V100}.scale.auto", {"min": 1, "max": 100000, "initial": 1})
    (line,) = refusal(raw)
    assert line.startswith(f"{V100}.scale.auto.max: Input should be less than or equal to 5000")


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.31", "1.31 is newer than the cluster's 1.30; nodes never run ahead"),
        # Yandex lets a node group lag its cluster by two minors (Kubernetes itself allows three).
        ("1.27", "1.27 is more than 2 minor versions behind the cluster's 1.30; allowed: 1.28 to 1.30"),
        ("1.26", "1.26 is more than 2 minor versions behind the cluster's 1.30; allowed: 1.28 to 1.30"),
    ],
)
def test_a_node_group_version_outside_the_skew_policy_is_refused(version: str, expected: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.kubernetesVersion", version))
    assert line.startswith(f"{V100}.kubernetesVersion: {expected}")
    assert plan_raw(set_path(stack_raw("dev"), f"{V100}.kubernetesVersion", "1.28")), "two minors behind is allowed"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("kubernetes.io/role", "the kubernetes.io/ prefix is reserved"),
        ("node-role.kubernetes.io/gpu", "the node-role.kubernetes.io/ prefix is reserved"),
        ("gpu-platform.io/node-group", "is set by gpu-platform itself"),
        ("nvidia.com/mig.config", "is set by gpu-platform itself"),
    ],
)
def test_reserved_and_platform_owned_label_keys_are_refused(key: str, expected: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), (*V100.split("."), "labels", key), "x"))
    assert line.startswith(f"{V100}.labels.{key}: key {key!r}") and expected in line


def test_a_label_value_over_63_characters_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), (*V100.split("."), "labels", "team"), "x" * 64))
    assert "must be at most 63 characters" in line
