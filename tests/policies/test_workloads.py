"""Root on the node only where allowed; container images pinned by tag (mandatory) and digest (advisory)."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from policies.gpu_policies.workloads import (
    container_image_digest_pinned,
    container_image_tag_pinned,
    parse_image,
    privileged_workloads_allowlisted,
)
from tests.policies.support import config_for, daemon_set, pod_spec, run_resource

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
PRIVILEGED = {
    "hostPID": True,
    "containers": [
        {"name": "remover", "image": "registry.k8s.io/kubectl:v1.31.0", "securityContext": {"privileged": True}}
    ],
    "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
}


def test_the_host_driver_removal_daemonset_is_allowed_in_the_platform_namespace() -> None:
    props = daemon_set("gpu-platform-system", pod=PRIVILEGED)
    assert run_resource(privileged_workloads_allowlisted, DAEMON_SET, props).messages == []


def test_the_same_daemonset_elsewhere_is_refused_with_every_reason() -> None:
    props = daemon_set("team-a", "debug", pod=PRIVILEGED)
    outcome = run_resource(privileged_workloads_allowlisted, DAEMON_SET, props)
    assert outcome.messages == [
        "DaemonSet team-a/debug gets root on the node (containers remover is privileged; hostPID: true; volume "
        "host-root mounts the host's / (hostPath)) outside the allowed namespaces (gpu-operator, "
        "gpu-platform-system); drop it, or allow this workload explicitly (policy config allowedWorkloads: "
        "namespace/name)"
    ]
    assert privileged_workloads_allowlisted.enforcement_level is EnforcementLevel.MANDATORY


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("kubernetes:core/v1:Pod", {"metadata": {"name": "p"}, "spec": pod_spec(hostPID=True)}),
        (
            "kubernetes:batch/v1:Job",
            {"metadata": {"name": "j"}, "spec": {"template": {"spec": pod_spec(hostPID=True)}}},
        ),
        (
            "kubernetes:batch/v1:CronJob",
            {
                "metadata": {"name": "c"},
                "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(hostPID=True)}}}},
            },
        ),
        (
            "kubernetes:apps/v1:Deployment",
            {"metadata": {"name": "d"}, "spec": {"template": {"spec": pod_spec(hostPID=True)}}},
        ),
        (
            "kubernetes:apps/v1:StatefulSet",
            {"metadata": {"name": "s"}, "spec": {"template": {"spec": pod_spec(hostPID=True)}}},
        ),
        ("kubernetes:apps/v1:DaemonSetPatch", daemon_set("default", pod=pod_spec(hostPID=True))),
    ],
)
def test_every_workload_kind_is_checked_and_no_namespace_means_default(kind: str, props: dict) -> None:
    outcome = run_resource(privileged_workloads_allowlisted, kind, props)
    assert len(outcome.messages) == 1 and " default/" in outcome.messages[0] and "hostPID: true" in outcome.text


def test_privileged_init_containers_and_hostpath_spellings_of_root_are_caught() -> None:
    spec = {
        "initContainers": [{"name": "setup", "image": "busybox:1.36", "securityContext": {"privileged": True}}],
        "containers": [{"name": "main", "image": "busybox:1.36"}],
        "volumes": [{"name": "root", "hostPath": {"path": "//."}}, {"name": "logs", "hostPath": {"path": "/var/log"}}],
    }
    outcome = run_resource(privileged_workloads_allowlisted, DAEMON_SET, daemon_set("team-a", pod=spec))
    assert "initContainers setup is privileged; volume root mounts the host's / (hostPath))" in outcome.text
    assert "logs" not in outcome.text


def test_allowed_namespaces_and_workloads_are_configurable() -> None:
    props = daemon_set("team-a", "debug", pod=PRIVILEGED)
    by_namespace = config_for(privileged_workloads_allowlisted, allowedNamespaces=["team-a"])
    assert run_resource(privileged_workloads_allowlisted, DAEMON_SET, props, config=by_namespace).messages == []
    by_workload = config_for(privileged_workloads_allowlisted, allowedWorkloads=["team-a/debug"])
    assert run_resource(privileged_workloads_allowlisted, DAEMON_SET, props, config=by_workload).messages == []
    narrowed = config_for(privileged_workloads_allowlisted, allowedNamespaces=["gpu-operator"])
    platform = daemon_set("gpu-platform-system", pod=PRIVILEGED)
    assert len(run_resource(privileged_workloads_allowlisted, DAEMON_SET, platform, config=narrowed).messages) == 1


def test_an_unprivileged_workload_passes_anywhere() -> None:
    assert run_resource(privileged_workloads_allowlisted, DAEMON_SET, daemon_set("team-a")).messages == []


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("busybox", ("busybox", "", "")),
        ("registry:5000/team/app", ("registry:5000/team/app", "", "")),
        ("registry:5000/team/app:1.2", ("registry:5000/team/app", "1.2", "")),
        ("nvcr.io/nvidia/cuda:12.6.3-base@sha256:abc", ("nvcr.io/nvidia/cuda", "12.6.3-base", "sha256:abc")),
    ],
)
def test_image_references_split_like_a_container_runtime_does(reference: str, expected: tuple) -> None:
    ref = parse_image(reference)
    assert (ref.repository, ref.tag, ref.digest) == expected


def test_a_tagged_image_passes_the_mandatory_rule() -> None:
    assert run_resource(container_image_tag_pinned, DAEMON_SET, daemon_set()).messages == []


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("busybox", "uses busybox without a tag, which means :latest; pin a version tag"),
        ("registry:5000/team/app", "uses registry:5000/team/app without a tag, which means :latest; pin a version tag"),
        (
            "nvcr.io/nvidia/cuda:latest",
            "uses nvcr.io/nvidia/cuda:latest: :latest moves under a running workload; pin a version tag",
        ),
    ],
)
def test_untagged_and_latest_images_are_refused(image: str, message: str) -> None:
    outcome = run_resource(container_image_tag_pinned, DAEMON_SET, daemon_set("team-a", "app", pod=pod_spec(image)))
    assert outcome.messages == [f"DaemonSet team-a/app containers main {message}"]
    assert container_image_tag_pinned.enforcement_level is EnforcementLevel.MANDATORY


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("nvcr.io/NVIDIA/cuda:12.6", "the repository path 'NVIDIA/cuda' must be lowercase"),
        ("busybox:1 2", "it holds a blank or a control character"),
        ("busybox@sha256:abc", "the digest 'sha256:abc' is not algorithm:hex"),
    ],
)
def test_a_reference_the_kubelet_cannot_parse_is_refused_by_the_same_grammar_as_the_config(
    image: str, why: str
) -> None:
    outcome = run_resource(container_image_tag_pinned, DAEMON_SET, daemon_set("team-a", "app", pod=pod_spec(image)))
    (message,) = outcome.messages
    assert message.startswith(f"DaemonSet team-a/app containers main: {image!r} is not an image reference the kubelet")
    assert why in message


def test_a_digest_pins_even_a_latest_tag() -> None:
    props = daemon_set(pod=pod_spec("busybox:latest@sha256:" + "a" * 64))
    assert run_resource(container_image_tag_pinned, DAEMON_SET, props).messages == []


def test_images_without_a_digest_get_the_advisory() -> None:
    outcome = run_resource(
        container_image_digest_pinned, DAEMON_SET, daemon_set("team-a", "app", pod=pod_spec("busybox:1.36"))
    )
    assert outcome.messages == [
        "DaemonSet team-a/app containers main uses busybox:1.36 without a digest; a tag can be re-pushed, "
        "image@sha256:... cannot"
    ]
    assert container_image_digest_pinned.enforcement_level is EnforcementLevel.ADVISORY
    pinned = daemon_set(pod=pod_spec("busybox:1.36@sha256:" + "b" * 64))
    assert run_resource(container_image_digest_pinned, DAEMON_SET, pinned).messages == []
