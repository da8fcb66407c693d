"""GPU Operator operands: where their images come from, read from the release values and the rendered CRs.

Why: the operator runs privileged DaemonSets on every GPU node from the images its ``ClusterPolicy``
names, and ``gpuOperator.extraValues`` (or any values edit) can point ``driver.repository`` at any
registry; the chart contract accepts it (the key is real), so only a registry rule stops a driver
from an unvetted registry. Two views of the same blocks:

- the GPU Operator Helm release's ``values`` (what ``pulumi preview --policy-pack`` sees): each block
  the values set, merged with the chart's default for that block (``gpu_operator_chart``), the way
  Helm merges values;
- the GPU Operator's custom resources (``ClusterPolicy``, ``NVIDIADriver``) as the offline gate renders
  them from the pinned chart: the complete blocks the operator reads.

Pods in the operator's namespace (the operator, node-feature-discovery, the hook Jobs, and anything
else placed in that PSA-privileged namespace) are checked by their container images. A block with
``enabled: false`` runs nothing and is skipped, with everything under it.
"""

from __future__ import annotations

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

from components.catalog import gpu_operator_chart as chart
from components.catalog.gpu_operator_operands import (
    CHART_IMAGE_REGISTRIES,
    operand_image_reference,
    registry_allowed,
)
from components.catalog.names import GPU_OPERATOR_NAMESPACE

from .facts import is_gpu_operator_chart
from .names import GPU_OPERATOR_RESOURCE_PREFIX, HELM_RELEASE_TYPES
from .props import is_mapping, mapping, text
from .settings import setting, string_list
from .workloads import workload


@dataclass(frozen=True)
class Block:
    """One mapping of operand settings and where it is.

    ``path`` is the dotted Helm values path (``driver``, ``driver.manager``), the name allow-lists use;
    ``where`` is how the resource itself spells it (``values driver``, ``spec.driver.manager``).
    """

    path: str
    where: str
    keys: Mapping[str, Any]


def enabled_blocks(node: Any, path: tuple[str, ...] = (), where: str = "values") -> Iterator[Block]:
    """Every mapping under ``node`` (``node`` included) not switched off by ``enabled: false``."""
    if not is_mapping(node) or node.get("enabled") is False:
        return
    yield Block(".".join(path), where, node)
    separator = " " if where == "values" else "."
    for key in list(node):
        child = node[key]
        if is_mapping(child):
            yield from enabled_blocks(child, (*path, str(key)), f"{where}{separator}{key}")


def is_operator_resource(resource_type: str) -> bool:
    """A custom resource of the GPU Operator (``kubernetes:nvidia.com/<version>:<Kind>``)."""
    return resource_type.startswith(GPU_OPERATOR_RESOURCE_PREFIX)


def operator_resource_blocks(resource_type: str, props: Mapping[str, Any]) -> Iterator[Block]:
    """The operand blocks of a GPU Operator resource, with paths as the Helm values spell them.

    ``ClusterPolicy.spec.dcgmExporter`` is values ``dcgmExporter``; an ``NVIDIADriver`` spec is one
    driver block, values ``driver``.
    """
    spec = mapping(props.get("spec"))
    prefix = ("driver",) if resource_type.endswith(":NVIDIADriver") else ()
    yield from enabled_blocks(spec, prefix, "spec")


def is_operator_release(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A Helm release of the GPU Operator chart."""
    return resource_type in HELM_RELEASE_TYPES and is_gpu_operator_chart(props)


def _defaults(chart_version: str) -> Mapping[str, chart.OperandImage]:
    try:
        return chart.release(chart_version).images
    except ValueError:
        return {}


def release_images(props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, image reference) of every image block the release's values change.

    A block that sets ``repository`` or ``image`` gets the chart default for the keys it leaves out
    (Helm merges maps), so ``driver: {repository: r.example.com/nvidia}`` is
    ``r.example.com/nvidia/driver:<default version>``. Blocks the values leave alone keep the chart's
    defaults, which come from the chart's own registries.
    """
    defaults = _defaults(text(props.get("version")))
    for block in enabled_blocks(props.get("values")):
        keys = block.keys
        if not isinstance(keys.get("repository"), str) and not isinstance(keys.get("image"), str):
            continue
        default = defaults.get(block.path)

        def value(key: str, fallback: str, keys: Mapping[str, Any] = keys) -> str:
            return text(keys[key]) if key in keys else fallback

        reference = operand_image_reference(
            value("repository", default.repository if default else ""),
            value("image", default.image if default else ""),
            value("version", default.version if default else "") or text(keys.get("tag")),
        )
        if reference:
            yield block.where, reference


def resource_images(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, image reference) of every enabled operand block of a GPU Operator resource."""
    for block in operator_resource_blocks(resource_type, props):
        keys = block.keys
        if not isinstance(keys.get("repository"), str) and not isinstance(keys.get("image"), str):
            continue
        reference = operand_image_reference(
            text(keys.get("repository")), text(keys.get("image")), text(keys.get("version"))
        )
        if reference:
            yield block.where, reference


_REGISTRY_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedRegistries": {
            "type": "array",
            "items": {"type": "string"},
            "default": list(CHART_IMAGE_REGISTRIES),
            "description": "registries (host, or host/path prefix) operand and operator images may come from; "
            "the default is what the pinned chart itself pulls from",
        },
        "namespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": [GPU_OPERATOR_NAMESPACE],
            "description": "the GPU Operator's namespaces: every pod there pulls from an allowed registry",
        },
    }
)


def _validate_registries(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allowed = string_list(setting(args, _REGISTRY_SCHEMA, "allowedRegistries"))
    if is_operator_release(args.resource_type, args.props):
        found = list(release_images(args.props))
        label = f"GPU Operator release {args.name}"
    elif is_operator_resource(args.resource_type):
        kind = args.resource_type.rsplit(":", 1)[-1]
        name = text(mapping(args.props.get("metadata")).get("name")) or args.name
        found = list(resource_images(args.resource_type, args.props))
        label = f"{kind} {name}"
    else:
        pod = workload(args)
        if pod is None or pod.namespace not in string_list(setting(args, _REGISTRY_SCHEMA, "namespaces")):
            return
        found = [
            (f"{list_name} {text(container.get('name')) or '(unnamed)'}", text(container.get("image")))
            for list_name, container in pod.containers()
            if text(container.get("image"))
        ]
        label = pod.label
    for where, reference in found:
        if not registry_allowed(reference, allowed):
            report(
                f"{label} {where} pulls {reference}, which is not from an allowed registry "
                f"({', '.join(allowed) or 'none allowed'}); GPU Operator pods run privileged on every GPU node, "
                "so mirror the image into an allowed registry or add the registry (policy config allowedRegistries)",
                None,
            )


gpu_operator_images_allowed_registries = ResourceValidationPolicy(
    name="gpu-operator-images-allowed-registries",
    description="GPU Operator operand and operator images (release values, rendered ClusterPolicy/NVIDIADriver, "
    "pods in the operator namespace) come only from allowed registries.",
    validate=_validate_registries,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=_REGISTRY_SCHEMA,
    tags=["gpu-operator", "supply-chain"],
)

POLICIES = [gpu_operator_images_allowed_registries]
