"""Resource rules for pod specs: host-level privileges only where allowed, and pinned images.

Why: a privileged container, ``hostPID`` or a hostPath mount of ``/`` is root on the node; GPU
platforms need that for exactly two things (the GPU Operator's operands and the host-driver
hand-over), so anything else asking for it is a mistake or an attack. An image without a tag, or
``:latest``, changes under a running deployment, so two nodes can run different code from one
manifest; a digest makes the reference immutable (advisory: tags are the team's normal practice).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.image_reference import image_reference_problem
from components.catalog.names import GPU_OPERATOR_NAMESPACE
from components.catalog.node_agent import DEFAULT_AGENT_NAMESPACE

from .names import pod_spec_path
from .props import get, items, mapping, text
from .settings import setting, string_list

# The GPU Operator's namespace and the node agent's (its privileged executors), as the program defaults them.
DEFAULT_PRIVILEGED_NAMESPACES = (GPU_OPERATOR_NAMESPACE, DEFAULT_AGENT_NAMESPACE)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Workload:
    """A resource with a pod spec."""

    kind: str
    namespace: str
    name: str
    pod_spec: Mapping[str, Any]

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(list name, container) for init, regular and ephemeral containers."""
        for list_name in _CONTAINER_LISTS:
            for container in items(self.pod_spec.get(list_name)):
                yield list_name, mapping(container)


def workload(args: ResourceValidationArgs) -> Workload | None:
    """The workload ``args`` describes, or None for resources without a pod spec."""
    path = pod_spec_path(args.resource_type)
    if path is None:
        return None
    spec = get(args.props, *path)
    if spec is None:
        return None
    metadata = mapping(args.props.get("metadata"))
    kind = args.resource_type.rsplit(":", 1)[-1]
    # An unset namespace is the provider's default namespace, normally "default".
    return Workload(kind, text(metadata.get("namespace")) or "default", text(metadata.get("name")) or args.name, spec)


def host_access(pod: Workload) -> list[str]:
    """What in the pod spec gives root on the node."""
    found = []
    for list_name, container in pod.containers():
        if get(container, "securityContext", "privileged") is True:
            found.append(f"{list_name} {text(container.get('name')) or '(unnamed)'} is privileged")
    if pod.pod_spec.get("hostPID") is True:
        found.append("hostPID: true")
    for volume in items(pod.pod_spec.get("volumes")):
        path = text(get(volume, "hostPath", "path"))
        # "/", "//", "/." and "/.." all name the host's root (normpath keeps a leading "//", hence lstrip).
        if path.startswith("/") and posixpath.normpath("/" + path.lstrip("/")) == "/":
            found.append(f"volume {text(get(volume, 'name')) or '(unnamed)'} mounts the host's / (hostPath)")
    return found


_PRIVILEGE_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": list(DEFAULT_PRIVILEGED_NAMESPACES),
            "description": "namespaces whose workloads may be privileged, use hostPID or mount the host's /",
        },
        "allowedWorkloads": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "single workloads allowed the same, as namespace/name",
        },
    }
)


def _validate_privileged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    pod = workload(args)
    if pod is None:
        return
    found = host_access(pod)
    if not found:
        return
    namespaces = string_list(setting(args, _PRIVILEGE_SCHEMA, "allowedNamespaces"))
    workloads = string_list(setting(args, _PRIVILEGE_SCHEMA, "allowedWorkloads"))
    if pod.namespace in namespaces or f"{pod.namespace}/{pod.name}" in workloads:
        return
    report(
        f"{pod.label} gets root on the node ({'; '.join(found)}) outside the allowed namespaces "
        f"({', '.join(namespaces) or 'none'}); drop it, or allow this workload explicitly "
        "(policy config allowedWorkloads: namespace/name)",
        None,
    )


privileged_workloads_allowlisted = ResourceValidationPolicy(
    name="privileged-workloads-allowlisted",
    description="Privileged containers, hostPID and hostPath / only in allow-listed namespaces or workloads.",
    validate=_validate_privileged,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=_PRIVILEGE_SCHEMA,
    tags=["security", "kubernetes"],
)


@dataclass(frozen=True)
class ImageRef:
    """A container image reference split into repository, tag and digest."""

    repository: str
    tag: str
    digest: str


def parse_image(reference: str) -> ImageRef:
    """``registry:5000/team/app:1.2@sha256:...`` -> repository, tag, digest (a port is not a tag)."""
    name, _, digest = reference.strip().partition("@")
    head, slash, last = name.rpartition("/")
    repository, colon, tag = last.partition(":")
    return ImageRef(f"{head}{slash}{repository}", tag if colon else "", digest)


def _images(pod: Workload) -> Iterator[tuple[str, str]]:
    for list_name, container in pod.containers():
        yield f"{list_name} {text(container.get('name')) or '(unnamed)'}", text(container.get("image"))


def _validate_tag(args: ResourceValidationArgs, report: ReportViolation) -> None:
    pod = workload(args)
    if pod is None:
        return
    for where, image in _images(pod):
        ref = parse_image(image)
        if not image:
            if args.resource_type.endswith("Patch"):
                continue  # a patch may leave the image to the live object
            report(f"{pod.label} {where} names no image", None)
        elif image_reference_problem(image):  # the kubelet's grammar: InvalidImageName, the pod never starts
            report(f"{pod.label} {where}: {image_reference_problem(image)}", None)
        elif ref.digest:
            continue  # a digest pins the image whatever the tag says
        elif not ref.tag:
            report(f"{pod.label} {where} uses {image} without a tag, which means :latest; pin a version tag", None)
        elif ref.tag.lower() == "latest":
            report(f"{pod.label} {where} uses {image}: :latest moves under a running workload; pin a version tag", None)


container_image_tag_pinned = ResourceValidationPolicy(
    name="container-image-tag-pinned",
    description="Container images carry a version tag (not latest, not missing) or a digest.",
    validate=_validate_tag,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["supply-chain", "kubernetes"],
)


def _validate_digest(args: ResourceValidationArgs, report: ReportViolation) -> None:
    pod = workload(args)
    if pod is None:
        return
    for where, image in _images(pod):
        if image and not parse_image(image).digest:
            report(
                f"{pod.label} {where} uses {image} without a digest; a tag can be re-pushed, image@sha256:... cannot",
                None,
            )


container_image_digest_pinned = ResourceValidationPolicy(
    name="container-image-digest-pinned",
    description="Container images are pinned by digest (advisory).",
    validate=_validate_digest,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    tags=["supply-chain", "kubernetes"],
)

POLICIES = [privileged_workloads_allowlisted, container_image_tag_pinned, container_image_digest_pinned]
