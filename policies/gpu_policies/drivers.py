"""Stack rules about the NVIDIA driver: one owner per node, new enough for CUDA, able to drive every GPU.

Why: (1) a Yandex ``runc_drivers_cuda`` node boots with a driver from the image; if the GPU Operator
also installs one, the operator's driver manager finds the host driver, marks the node
``pre-installed`` and never manages it again, so the fleet silently runs two driver versions. Such
nodes must be opted in to the host-driver hand-over. (2) A driver older than the workloads' CUDA
toolkit fails at run time with "CUDA driver version is insufficient". (3) A driver branch that
dropped an architecture (R595 and Volta) leaves those nodes with no working GPU at all.
With per-pool drivers (the release's ``driver.nvidiaDriverCRD.enabled``) each ``NVIDIADriver``
resource is checked against the GPU models of the nodes its ``nodeSelector`` matches and the CUDA
level its pools declare, not against the whole fleet. (4) With NVIDIADriver resources the operator gives each GPU
node to the one resource that selects it, else to a default one, else to none: no owner, no driver, no error
(``components.catalog.nvidia_driver``), so every GPU node must be selected by exactly one.
All facts (CUDA minimums, architecture support, chart default drivers) come from ``components.catalog``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.catalog.drivers import (
    PREINSTALLED_ENVIRONMENT,
    CudaCheckMode,
    CudaVersionError,
    architecture_problem,
    cuda_problem,
    known_cuda_versions,
    two_drivers_on_node,
)
from components.catalog.gpus import Architecture, UnknownGpuModelError, gpu_model
from components.catalog.names import DRIVER_GROUP_LABEL
from components.catalog.nvidia_driver import OWNER_LABEL, selecting_drivers
from components.catalog.versions import is_version

from .facts import StackFacts, stack_facts
from .names import (
    DRIVER_VERSION_ANNOTATION,
    GPU_MODEL_LABEL,
    GPU_MODELS_ANNOTATION,
    NVIDIA_DRIVER_TYPE,
    OPT_IN_LABEL,
    OPT_IN_VALUE,
)
from .props import get, text
from .settings import setting


def _validate_handover(args: StackValidationArgs, report: ReportViolation) -> None:
    facts = stack_facts(args.resources)
    operators = [release for release in facts.operator_releases if release.driver_enabled]
    preinstalled = [g for g in facts.gpu_node_groups if g.gpu_environment == PREINSTALLED_ENVIRONMENT]
    if not operators or not preinstalled:
        args.not_applicable("no node group with a preinstalled driver under an operator that installs one")
    operator = operators[0]
    for group in preinstalled:
        handed_over = group.node_labels.get(OPT_IN_LABEL) == OPT_IN_VALUE
        if not two_drivers_on_node(operator_installs_driver=True, preinstalled=True, handed_over=handed_over):
            continue
        report(
            f"node group {group.name} boots with a preinstalled driver (gpuEnvironment {PREINSTALLED_ENVIRONMENT}) "
            f"while GPU Operator release {operator.name} installs its own (driver.enabled is true): the operator "
            "marks such nodes pre-installed and never manages their driver, so two drivers fight over the fleet; "
            f"enable host-driver removal (node label {OPT_IN_LABEL}={OPT_IN_VALUE}, config hostDriverRemoval: true) "
            "or recreate the group with gpuEnvironment runc",
            group.urn or None,
        )


host_driver_removal_required = StackValidationPolicy(
    name="host-driver-removal-required",
    description="Node groups with a preinstalled driver opt in to host-driver removal when the GPU Operator "
    "installs the driver.",
    validate=_validate_handover,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    tags=["gpu", "driver"],
)


@dataclass(frozen=True)
class DriverSource:
    """One driver version the stack installs or declares, and where it was read.

    ``models`` are the GPU models the driver serves (None: the whole fleet); ``cuda`` is a CUDA level
    its own pools declare beyond the stack-wide ``requiredCuda`` ("" = none).
    """

    version: str
    where: str
    urn: str
    models: tuple[str, ...] | None = None
    cuda: str = ""


def _driver_resource_sources(facts: StackFacts) -> list[DriverSource]:
    """One source per NVIDIADriver: the models of the nodes it selects (node groups, node patches)."""
    sources = []
    for driver in facts.nvidia_drivers:
        models = {g.gpu_model for g in facts.gpu_node_groups if g.gpu_model and driver.selects(g.node_labels)}
        models |= {p.labels.get(GPU_MODEL_LABEL, "") for p in facts.node_patches if driver.selects(p.labels)}
        models |= set(driver.gpu_models)
        where = f"NVIDIADriver {driver.name} spec.version"
        sources.append(
            DriverSource(driver.version, where, driver.urn, tuple(sorted(m for m in models if m)), driver.cuda)
        )
    return sources


def driver_sources(facts: StackFacts) -> list[DriverSource]:
    """The operator's driver where it installs one (each NVIDIADriver's with per-pool drivers); otherwise
    the version the operator namespace declares."""
    if any(release.uses_driver_resources for release in facts.operator_releases):
        return _driver_resource_sources(facts)
    sources = []
    for release in facts.operator_releases:
        if release.driver_enabled:
            version, where = release.driver_version()
            if version:
                sources.append(DriverSource(version, where, release.urn))
    if any(release.driver_enabled for release in facts.operator_releases):
        return sources
    for namespace in facts.driver_namespaces:
        if namespace.driver_version:
            where = f"namespace {namespace.name} annotation {DRIVER_VERSION_ANNOTATION}"
            sources.append(DriverSource(namespace.driver_version, where, namespace.urn))
    return sources


def _report_bad_versions(sources: list[DriverSource], report: ReportViolation) -> list[DriverSource]:
    good = []
    for source in sources:
        if is_version(source.version):
            good.append(source)
        else:
            report(f"{source.where}: {source.version!r} is not a driver version (e.g. 580.95.05)", source.urn or None)
    return good


_CUDA_SCHEMA = PolicyConfigSchema(
    properties={
        "requiredCuda": {
            "type": "string",
            "pattern": r"^\d+\.\d+(\.\d+)?$",
            "description": "CUDA version the workloads' images are built with (e.g. 12.6); unset = no check",
        },
        "cudaCheck": {
            "type": "string",
            "enum": [mode.value for mode in CudaCheckMode],
            "default": CudaCheckMode.STRICT.value,
            "description": "strict: the toolkit's own driver; permissive: the minor-version-compatibility floor",
        },
    }
)


def _validate_cuda(args: StackValidationArgs, report: ReportViolation) -> None:
    required = setting(args, _CUDA_SCHEMA, "requiredCuda")
    if not required:
        args.not_applicable("requiredCuda is not configured")
    mode_text = str(setting(args, _CUDA_SCHEMA, "cudaCheck"))
    try:
        mode = CudaCheckMode(mode_text)
    except ValueError:
        report(f"cudaCheck {mode_text!r} must be one of {', '.join(m.value for m in CudaCheckMode)}", None)
        return
    sources = driver_sources(stack_facts(args.resources))
    if not sources:
        args.not_applicable("the stack installs and declares no driver version")
    for source in _report_bad_versions(sources, report):
        try:
            problem = cuda_problem(source.version, str(required), mode)
        except CudaVersionError as error:
            report(f"requiredCuda: {error} (known: {', '.join(known_cuda_versions())})", None)
            return
        if problem:
            report(f"{source.where}: {problem}", source.urn or None)
            continue
        _report_own_cuda(source, mode, report)


def _report_own_cuda(source: DriverSource, mode: CudaCheckMode, report: ReportViolation) -> None:
    """The CUDA level the driver's own pools declare (annotation of its NVIDIADriver)."""
    if not source.cuda:
        return
    try:
        problem = cuda_problem(source.version, source.cuda, mode)
    except (CudaVersionError, ValueError) as error:
        report(f"{source.where}: its pools' CUDA level {source.cuda!r}: {error}", source.urn or None)
        return
    if problem:
        report(f"{source.where}: {problem} (the CUDA level its pools declare)", source.urn or None)


driver_supports_cuda = StackValidationPolicy(
    name="driver-supports-cuda",
    description="The NVIDIA driver the stack installs (or declares) runs workloads built with the required CUDA "
    "version.",
    validate=_validate_cuda,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_CUDA_SCHEMA,
    tags=["gpu", "driver", "cuda"],
)


def _models(facts: StackFacts) -> dict[str, list[str]]:
    """GPU model key -> where it was seen (node groups, node patches, the operator namespace)."""
    seen: dict[str, list[str]] = {}
    for group in facts.gpu_node_groups:
        if group.gpu_model:
            seen.setdefault(group.gpu_model, []).append(f"node group {group.name}")
    for patch in facts.node_patches:
        model = patch.labels.get(GPU_MODEL_LABEL, "")
        if model:
            seen.setdefault(model, []).append(f"node patch {patch.name}")
    for namespace in facts.driver_namespaces:
        for model in namespace.gpu_models:
            seen.setdefault(model, []).append(f"namespace {namespace.name} annotation {GPU_MODELS_ANNOTATION}")
    return seen


def _validate_architectures(args: StackValidationArgs, report: ReportViolation) -> None:
    facts = stack_facts(args.resources)
    sources = driver_sources(facts)
    models = _models(facts)
    if not sources or not models:
        args.not_applicable("the stack declares no driver version or no GPU model")
    architectures: dict[Architecture, list[str]] = {}
    for model, places in sorted(models.items()):
        try:
            architecture = gpu_model(model).architecture
        except UnknownGpuModelError as error:
            report(f"{places[0]}: {error}; the driver cannot be checked against it", None)
            continue
        architectures.setdefault(architecture, []).append(model)
    for source in _report_bad_versions(sources, report):
        for architecture in sorted(architectures, key=list(Architecture).index):
            affected = [m for m in architectures[architecture] if source.models is None or m in source.models]
            problem = architecture_problem(source.version, architecture) if affected else None
            if problem:
                report(f"{source.where}: {problem}; affected models: {', '.join(affected)}", source.urn or None)


driver_supports_gpu_architectures = StackValidationPolicy(
    name="driver-supports-gpu-architectures",
    description="The NVIDIA driver branch supports every GPU architecture in the stack (R580 is the last for Volta).",
    validate=_validate_architectures,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    tags=["gpu", "driver"],
)


def _default_resources(resources: Iterable[Any]) -> list[str]:
    """The NVIDIADriver resources marked ``spec.default: true`` (they own the nodes no other one selects)."""
    return [
        text(get(r.props, "metadata", "name")) or r.name
        for r in resources
        if r.resource_type == NVIDIA_DRIVER_TYPE and get(r.props, "spec", "default") is True
    ]


def _validate_owners(args: StackValidationArgs, report: ReportViolation) -> None:
    facts = stack_facts(args.resources)
    releases = [release for release in facts.operator_releases if release.uses_driver_resources]
    if not releases:
        args.not_applicable("the GPU Operator's driver is not run from NVIDIADriver resources")
    release = releases[0]
    # The chart's own default resource (values driver.nvidiaDriverCRD.deployDefaultCR, true by default) and any
    # default: true resource the stack declares take the nodes no other resource selects.
    chart_default = get(release.values, "driver", "nvidiaDriverCRD", "deployDefaultCR") is not False
    defaults = _default_resources(args.resources) + (["default (the chart's)"] if chart_default else [])
    selectors = {d.name: dict(d.node_selector) for d in facts.nvidia_drivers if d.name not in defaults}
    nodes = [(f"node group {g.name}", g.node_labels, g.urn) for g in facts.gpu_node_groups]
    nodes += [(f"node patch {p.name}", p.labels, p.urn) for p in facts.node_patches if p.is_gpu_node]
    for where, labels, resource_urn in nodes:
        owners = selecting_drivers(labels, selectors)
        if len(owners) > 1:
            report(
                f"{where} is selected by NVIDIADrivers {', '.join(owners)}: the operator refuses a node two of them "
                "select (multiple NVIDIADrivers match the same node), so it gets no driver; give each node exactly "
                f"one {DRIVER_GROUP_LABEL} value that one NVIDIADriver selects",
                resource_urn or None,
            )
        elif not owners and not defaults:
            report(
                f"{where} is selected by no NVIDIADriver and release {release.name} deploys no default one: the "
                f"operator gives its nodes no owner ({OWNER_LABEL}) and no driver, and reports nothing; label the "
                f"nodes with the {DRIVER_GROUP_LABEL} of an NVIDIADriver",
                resource_urn or None,
            )


gpu_nodes_have_one_driver_owner = StackValidationPolicy(
    name="gpu-nodes-have-one-driver-owner",
    description="With NVIDIADriver resources, every GPU node group and bare-metal GPU node is selected by exactly one "
    "of them (or left to a default one): a node none selects gets no driver, silently.",
    validate=_validate_owners,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    tags=["gpu", "driver"],
)

POLICIES = [
    host_driver_removal_required,
    driver_supports_cuda,
    driver_supports_gpu_architectures,
    gpu_nodes_have_one_driver_owner,
]
