"""GPU Operator images only from allowed registries: in the release values, the rendered CRs and operator pods."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from components.catalog.gpu_operator_operands import (
    CHART_IMAGE_REGISTRIES,
    image_name,
    image_registry,
    operand_image_reference,
    registry_allowed,
)
from policies.gpu_policies.operands import gpu_operator_images_allowed_registries as policy
from tests.policies.support import RELEASE_TYPE, config_for, daemon_set, operator_release, pod_spec, run_resource

CLUSTER_POLICY = "kubernetes:nvidia.com/v1:ClusterPolicy"
NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
MIRROR = "registry.example.com/nvidia"


def _cluster_policy(**blocks: dict) -> dict:
    """A ClusterPolicy as the v26.7.0 chart renders it (the blocks that matter here)."""
    spec = {
        "driver": {
            "enabled": True,
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "580.95.05",
            "manager": {
                "repository": "nvcr.io/nvidia/cloud-native",
                "image": "k8s-driver-manager",
                "version": "v0.12.0",
            },
        },
        "vgpuManager": {"enabled": False, "image": "vgpu-manager"},
        "toolkit": {"enabled": True, "repository": "nvcr.io/nvidia/k8s", "image": "container-toolkit", "version": "v1"},
    }
    for name, block in blocks.items():
        spec[name] = {**spec.get(name, {}), **block}
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def test_the_operator_reference_rule_is_the_operators_image_path() -> None:
    assert operand_image_reference("nvcr.io/nvidia", "driver", "580.95.05") == "nvcr.io/nvidia/driver:580.95.05"
    assert operand_image_reference("nvcr.io/nvidia", "driver", "sha256:abc") == "nvcr.io/nvidia/driver@sha256:abc"
    assert operand_image_reference("", "quay.io/x/driver:1", "") == "quay.io/x/driver:1"  # image is the whole ref
    assert operand_image_reference("registry.k8s.io/nfd/node-feature-discovery", "", "v0.19.0").startswith(
        "registry.k8s.io/nfd/"
    )


def test_registries_follow_the_docker_reference_grammar() -> None:
    assert image_registry("nvcr.io/nvidia/driver:580") == "nvcr.io"
    assert image_registry("localhost:5000/driver") == "localhost:5000"
    assert image_name("busybox:1.36") == "docker.io/library/busybox"
    assert image_registry("nvidia/driver:580") == "docker.io"  # no dot: a Docker Hub namespace, not a host
    assert registry_allowed("nvcr.io/nvidia/driver:1", ["nvcr.io/nvidia"])
    assert not registry_allowed("nvcr.io/other/driver:1", ["nvcr.io/nvidia"])
    assert not registry_allowed("nvcr.io.example.com/nvidia/driver:1", ["nvcr.io"])


def test_the_chart_default_values_pass() -> None:
    assert run_resource(policy, RELEASE_TYPE, operator_release()).messages == []
    assert policy.enforcement_level is EnforcementLevel.MANDATORY
    assert tuple(config_for(policy)["allowedRegistries"]) == CHART_IMAGE_REGISTRIES


def test_values_that_move_the_driver_to_another_registry_are_refused() -> None:
    values = {"driver": {"enabled": True, "version": "580.95.05", "repository": MIRROR}}
    outcome = run_resource(policy, RELEASE_TYPE, operator_release(values), name="gpu-operator-release")
    assert outcome.messages == [
        f"GPU Operator release gpu-operator-release values driver pulls {MIRROR}/driver:580.95.05, which is not "
        "from an allowed registry (nvcr.io, registry.k8s.io); GPU Operator pods run privileged on every GPU node, "
        "so mirror the image into an allowed registry or add the registry (policy config allowedRegistries)"
    ]


def test_a_whole_reference_in_image_and_the_nfd_subchart_image_are_read_too() -> None:
    values = {
        "driver": {"repository": "", "version": "", "image": "docker.io/someone/driver:580"},
        "node-feature-discovery": {"image": {"repository": "ghcr.io/someone/nfd", "tag": "v0.19.0"}},
        "toolkit": {"version": "v1.20.1"},  # a new version from the default registry is fine
    }
    outcome = run_resource(policy, RELEASE_TYPE, operator_release(values))
    assert [m.split(" pulls ")[1].split(",")[0] for m in outcome.messages] == [
        "docker.io/someone/driver:580",
        "ghcr.io/someone/nfd:v0.19.0",
    ]


def test_an_allowed_mirror_passes() -> None:
    values = {"driver": {"repository": MIRROR}}
    config = config_for(policy, allowedRegistries=["registry.example.com"])
    assert run_resource(policy, RELEASE_TYPE, operator_release(values), config=config).messages == []


def test_the_rendered_cluster_policy_is_checked_block_by_block() -> None:
    assert run_resource(policy, CLUSTER_POLICY, _cluster_policy()).messages == []
    manager = {"repository": MIRROR, "image": "k8s-driver-manager", "version": "v0.12.0"}
    outcome = run_resource(policy, CLUSTER_POLICY, _cluster_policy(driver={"manager": manager}))
    assert outcome.messages[0].startswith(
        f"ClusterPolicy cluster-policy spec.driver.manager pulls {MIRROR}/k8s-driver-manager:v0.12.0"
    )
    assert len(outcome.messages) == 1


def test_a_disabled_operand_pulls_nothing() -> None:
    # vgpuManager's default image has no registry at all (users build it); disabled, it is never pulled.
    disabled = _cluster_policy(toolkit={"enabled": False, "repository": MIRROR})
    assert run_resource(policy, CLUSTER_POLICY, disabled).messages == []
    enabled = _cluster_policy(vgpuManager={"enabled": True, "repository": MIRROR, "version": "1"})
    assert "spec.vgpuManager pulls" in run_resource(policy, CLUSTER_POLICY, enabled).text


def test_an_nvidia_driver_resource_is_one_driver_block() -> None:
    props = {"metadata": {"name": "r580"}, "spec": {"repository": MIRROR, "image": "driver", "version": "580"}}
    outcome = run_resource(policy, NVIDIA_DRIVER, props)
    assert outcome.messages[0].startswith(f"NVIDIADriver r580 spec pulls {MIRROR}/driver:580")


@pytest.mark.parametrize(
    ("namespace", "image", "refused"),
    [
        ("gpu-operator", "nvcr.io/nvidia/gpu-operator:v26.7.0", False),
        ("gpu-operator", "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", False),
        ("gpu-operator", "docker.io/someone/gpu-operator:v26.7.0", True),
        ("team-a", "docker.io/someone/app:1.0", False),  # not the operator's namespace
    ],
)
def test_pods_in_the_operator_namespace_pull_from_allowed_registries(namespace: str, image: str, refused: bool) -> None:
    props = daemon_set(namespace, "gpu-operator", pod=pod_spec(image))
    outcome = run_resource(policy, DEPLOYMENT, props)
    assert bool(outcome.messages) is refused, outcome.text
    if refused:
        assert outcome.messages[0].startswith(f"Deployment {namespace}/gpu-operator containers main pulls {image}")
