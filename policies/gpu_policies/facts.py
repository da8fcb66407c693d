"""What the policies need to know about node groups, the GPU Operator release and the operator namespace.

One reader per resource kind, shared by the resource and the stack policies, so "is this a GPU node
group" or "which driver does the operator install" has exactly one answer in the pack. Readers take
props as CrossGuard hands them over (inputs for resource policies, outputs for stack policies: for
these resource types both carry the same fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog import gpu_operator_chart as chart
from components.catalog.kubernetes import Taint, check_taints, taint_list_entries

from .names import (
    DECLARED_TAINTS_ANNOTATION,
    DRIVER_CUDA_ANNOTATION,
    DRIVER_OWNER_ANNOTATION,
    DRIVER_VERSION_ANNOTATION,
    GPU_MODEL_LABEL,
    GPU_MODELS_ANNOTATION,
    GPU_NODE_LABEL,
    HELM_RELEASE_TYPES,
    NAMESPACE_TYPE,
    NODE_GROUP_TYPE,
    NODE_PATCH_TYPE,
    NVIDIA_DRIVER_TYPE,
    UNTAINTED_ACCEPTED_ANNOTATION,
)
from .props import get, items, mapping, number, plain, string_map, text

REPELLING_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
"""Effects that keep a pod off a node unless it tolerates them (PreferNoSchedule only discourages)."""


@dataclass(frozen=True)
class NodeGroup:
    """A Yandex node group as the policies see it."""

    name: str
    urn: str
    gpus: float
    gpu_environment: str
    taints: tuple[str, ...]
    node_labels: Mapping[str, str]
    labels: Mapping[str, str]
    preemptible: bool
    auto_upgrade: bool

    @property
    def is_gpu(self) -> bool:
        """GPUs in the template, GPU settings, or the project's GPU-model node label."""
        return self.gpus > 0 or bool(self.gpu_environment) or GPU_MODEL_LABEL in self.node_labels

    @property
    def gpu_model(self) -> str:
        """The catalog model key from the node label ("" if absent)."""
        return self.node_labels.get(GPU_MODEL_LABEL, "")

    def parsed_taints(self) -> tuple[list[Taint], list[str]]:
        """(taints that parse, error messages of those that do not)."""
        return parse_taints(self.taints, value_required=True)


def parse_taints(texts: Iterable[str], *, value_required: bool = False) -> tuple[list[Taint], list[str]]:
    """The catalog's taint check (``check_taints``): the taints that parse, and every problem as a message.

    ``value_required``: a Yandex node group's ``nodeTaints`` (Yandex's API takes only ``key=value:Effect``).
    """
    taints, problems = check_taints(texts, value_required=value_required)
    return taints, [message for _, message in problems]


def read_node_group(props: Mapping[str, Any], name: str, urn: str = "") -> NodeGroup:
    """A node group from its props."""
    template = mapping(props.get("instanceTemplate"))
    return NodeGroup(
        name=name,
        urn=urn,
        gpus=number(get(template, "resources", "gpus")),
        gpu_environment=text(get(template, "gpuSettings", "gpuEnvironment")),
        taints=tuple(text(t) for t in items(props.get("nodeTaints")) if isinstance(t, str)),
        node_labels=string_map(props.get("nodeLabels")),
        labels=string_map(props.get("labels")),
        preemptible=get(template, "schedulingPolicy", "preemptible") is True,
        auto_upgrade=get(props, "maintenancePolicy", "autoUpgrade") is True,
    )


def is_gpu_operator_chart(props: Mapping[str, Any]) -> bool:
    """A Helm release of the GPU Operator (``gpu-operator``, ``nvidia/gpu-operator`` or an OCI ref)."""
    return text(props.get("chart")).rstrip("/").rsplit("/", 1)[-1] == chart.CHART_NAME


@dataclass(frozen=True)
class OperatorRelease:
    """The GPU Operator Helm release: the values the policies read, each read on demand."""

    name: str
    urn: str
    chart_version: str
    values: Mapping[str, Any]

    @property
    def driver_enabled(self) -> bool:
        """``driver.enabled`` (the chart default is true)."""
        return get(self.values, "driver", "enabled") is not False

    @property
    def uses_driver_resources(self) -> bool:
        """``driver.nvidiaDriverCRD.enabled``: the drivers are NVIDIADriver resources, not the ClusterPolicy's."""
        return self.driver_enabled and get(self.values, "driver", "nvidiaDriverCRD", "enabled") is True

    def driver_version(self) -> tuple[str, str]:
        """(driver version, where it comes from); the chart default when ``driver.version`` is unset."""
        version = text(get(self.values, "driver", "version"))
        if version:
            return version, f"release {self.name} driver.version"
        try:
            default = chart.release(self.chart_version).default_driver_version
        except ValueError:
            return "", f"release {self.name}: chart {self.chart_version or '(unpinned)'} is not in the catalog"
        return default, f"release {self.name} (the chart {self.chart_version} default driver.version)"

    def _tolerations(self, path: tuple[str, ...], defaults: Iterable[chart.Toleration]) -> list[dict[str, Any]]:
        # Helm replaces a list value wholesale: a set list is the whole list, an unset one is the default.
        configured = get(self.values, *path)
        if configured is None:
            return [toleration.to_values() for toleration in defaults]
        return [t for t in plain(items(configured)) if isinstance(t, dict)]

    def daemonset_tolerations(self) -> list[dict[str, Any]]:
        """What every operand DaemonSet tolerates (``daemonsets.tolerations``)."""
        return self._tolerations(("daemonsets", "tolerations"), self._release_defaults("daemonset_tolerations"))

    def nfd_worker_tolerations(self) -> list[dict[str, Any]] | None:
        """What the NFD worker tolerates, or None when the NFD subchart is disabled."""
        if get(self.values, "nfd", "enabled") is False:
            return None
        return self._tolerations(
            ("node-feature-discovery", "worker", "tolerations"), self._release_defaults("nfd_worker_tolerations")
        )

    def _release_defaults(self, attribute: str) -> tuple[chart.Toleration, ...]:
        try:
            defaults: tuple[chart.Toleration, ...] = getattr(chart.release(self.chart_version), attribute)
        except ValueError:
            return ()
        return defaults


def read_operator_release(props: Mapping[str, Any], name: str, urn: str = "") -> OperatorRelease:
    """An operator release from its props."""
    return OperatorRelease(name, urn, text(props.get("version")), mapping(props.get("values")))


@dataclass(frozen=True)
class NodePatch:
    """A bare-metal node the program labels through a NodePatch, with the taints its config declares.

    The program records a node's declared taints in an annotation (it never writes ``spec.taints``, see
    ``components.catalog.names.DECLARED_TAINTS_ANNOTATION``); a patch that does set ``spec.taints`` is read too.
    """

    name: str
    urn: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    taint_errors: tuple[str, ...] = ()
    declares_taints: bool = False  # the declared-taints annotation is present (even empty)
    untainted_accepted: bool = False

    @property
    def is_gpu_node(self) -> bool:
        """The program's GPU-node label says so (the MIG-label patch of the same node carries none)."""
        return self.labels.get(GPU_NODE_LABEL) == "true"


def read_node_patch(props: Mapping[str, Any], name: str, urn: str = "") -> NodePatch:
    """A NodePatch from its props (``spec.taints`` are objects; declared taints are ``key=value:Effect`` text)."""
    taints = [taint for entry in items(get(props, "spec", "taints")) if (taint := Taint.from_object(mapping(entry)))]
    annotations = string_map(get(props, "metadata", "annotations"))
    declared = annotations.get(DECLARED_TAINTS_ANNOTATION)
    parsed, errors = parse_taints(taint_list_entries(declared or ""))
    return NodePatch(
        name,
        urn,
        string_map(get(props, "metadata", "labels")),
        tuple(taints + [taint for taint in parsed if taint not in taints]),
        tuple(errors),
        declares_taints=declared is not None,
        untainted_accepted=annotations.get(UNTAINTED_ACCEPTED_ANNOTATION) == "true",
    )


@dataclass(frozen=True)
class DriverNamespace:
    """A namespace that declares the stack's driver facts (the GPU Operator's)."""

    name: str
    urn: str
    driver_owner: str
    driver_version: str
    gpu_models: tuple[str, ...]


@dataclass(frozen=True)
class NvidiaDriverResource:
    """An NVIDIADriver resource: the driver it installs and the nodes it selects."""

    name: str
    urn: str
    version: str
    node_selector: Mapping[str, str]
    gpu_models: tuple[str, ...]  # the program's annotation (what its pools carry)
    cuda: str  # the newest CUDA level its pools need (annotation; "" if absent)

    def selects(self, node_labels: Mapping[str, str]) -> bool:
        """True when a node with ``node_labels`` matches the selector (an empty selector matches every node)."""
        return all(node_labels.get(key) == value for key, value in self.node_selector.items())


def read_nvidia_driver(props: Mapping[str, Any], name: str, urn: str = "") -> NvidiaDriverResource:
    """An NVIDIADriver from its props."""
    annotations = string_map(get(props, "metadata", "annotations"))
    models = tuple(m.strip() for m in annotations.get(GPU_MODELS_ANNOTATION, "").split(",") if m.strip())
    return NvidiaDriverResource(
        name=text(get(props, "metadata", "name")) or name,
        urn=urn,
        version=text(get(props, "spec", "version")),
        node_selector=string_map(get(props, "spec", "nodeSelector")),
        gpu_models=models,
        cuda=annotations.get(DRIVER_CUDA_ANNOTATION, ""),
    )


@dataclass
class StackFacts:
    """The GPU-relevant resources of one stack."""

    node_groups: list[NodeGroup] = field(default_factory=list)
    operator_releases: list[OperatorRelease] = field(default_factory=list)
    driver_namespaces: list[DriverNamespace] = field(default_factory=list)
    node_patches: list[NodePatch] = field(default_factory=list)
    nvidia_drivers: list[NvidiaDriverResource] = field(default_factory=list)

    @property
    def gpu_node_groups(self) -> list[NodeGroup]:
        """Node groups with GPUs."""
        return [group for group in self.node_groups if group.is_gpu]


_LAST: list[tuple[Any, StackFacts]] = []


def stack_facts(resources: Iterable[Any]) -> StackFacts:
    """Sort the stack's resources into the facts above; everything else is ignored.

    Several stack policies ask in a row about the same resource list (the offline gate hands every
    stack policy one list; the CLI builds a new list per policy), so the facts of the last list
    are kept and reused while the very same list object is asked about again.
    """
    if _LAST and _LAST[0][0] is resources:
        return _LAST[0][1]
    facts = _read_stack(resources)
    _LAST[:] = [(resources, facts)]
    return facts


def _read_stack(resources: Iterable[Any]) -> StackFacts:
    facts = StackFacts()
    for resource in resources:
        kind, props = resource.resource_type, resource.props
        if kind == NODE_GROUP_TYPE:
            facts.node_groups.append(read_node_group(props, resource.name, resource.urn))
        elif kind in HELM_RELEASE_TYPES and is_gpu_operator_chart(props):
            facts.operator_releases.append(read_operator_release(props, resource.name, resource.urn))
        elif kind == NODE_PATCH_TYPE:
            facts.node_patches.append(read_node_patch(props, resource.name, resource.urn))
        elif kind == NVIDIA_DRIVER_TYPE:
            facts.nvidia_drivers.append(read_nvidia_driver(props, resource.name, resource.urn))
        elif kind == NAMESPACE_TYPE:
            annotations = string_map(get(props, "metadata", "annotations"))
            if DRIVER_VERSION_ANNOTATION in annotations or GPU_MODELS_ANNOTATION in annotations:
                models = tuple(m.strip() for m in annotations.get(GPU_MODELS_ANNOTATION, "").split(",") if m.strip())
                facts.driver_namespaces.append(
                    DriverNamespace(
                        name=resource.name,
                        urn=resource.urn,
                        driver_owner=annotations.get(DRIVER_OWNER_ANNOTATION, ""),
                        driver_version=annotations.get(DRIVER_VERSION_ANNOTATION, ""),
                        gpu_models=models,
                    )
                )
    return facts
