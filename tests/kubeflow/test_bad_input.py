"""Kubeflow and secret-key settings that are legal YAML but wrong are refused by key."""

from __future__ import annotations

import pytest

from tests.helpers import refusal, set_path, stack_raw


@pytest.mark.parametrize("host", ["192.0.2.10", "kubeflow", "Kubeflow.Example.com"])
def test_an_ingress_host_must_be_a_dns_name(host: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.ingress.host", host))
    assert line.startswith("kubeflow.ingress.host: ") and repr(host) in line


@pytest.mark.parametrize("name", ["kube-system", "kubeflow", "istio-system", "default"])
def test_a_profile_cannot_take_a_system_namespace(name: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.profiles.0.name", name))
    assert (
        line
        == f"kubeflow.profiles[0].name: {name!r} is a namespace of Kubernetes or the Kubeflow install; a team needs its own"
    )


def test_a_profile_owner_must_be_an_email() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.profiles.0.owner", "ml-platform"))
    assert line.startswith("kubeflow.profiles[0].owner: 'ml-platform' is not an email address")


def test_quota_values_must_be_quantities() -> None:
    raw = set_path(stack_raw("dev"), "kubeflow.profiles.0.resourceQuota", {"requests.nvidia.com/gpu": "two"})
    (line,) = refusal(raw)
    assert line.startswith(
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/gpu: 'two' is not a Kubernetes quantity"
    )


@pytest.mark.parametrize(
    ("stack", "key"),
    [
        ("dev", "kubeflow.dex.passwordHashSecret"),
        ("prod", "cluster.kubeconfigSecret"),
        ("prod", "bareMetal.ssh.privateKeySecret"),
    ],
)
def test_a_secret_key_cannot_be_a_program_setting_or_empty(stack: str, key: str) -> None:
    (line,) = refusal(set_path(stack_raw(stack), key, "cuda"))
    assert line == f"{key}: 'cuda' is a program setting of its own, not a secret key; name another key"
    lines = refusal(set_path(stack_raw(stack), key, ""))
    assert any(line.startswith(f"{key}: ") for line in lines), lines


def test_a_manifests_path_longer_than_any_path_is_refused() -> None:
    lines = refusal(set_path(stack_raw("dev"), "kubeflow.manifestsPath", "a" * 5000))
    assert "kubeflow.manifestsPath: is longer than 4096 characters" in lines
