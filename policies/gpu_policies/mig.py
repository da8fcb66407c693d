"""Resource rule: every MIG layout in a mig-parted config can really be created on the GPU it targets.

Why: mig-manager applies a layout only when a node is labelled with its config name, on the node,
hours or weeks after the deploy; a layout that does not fit (``4g`` + ``4g`` on a 7-slice GPU, or
``1g.10gb`` x 7 on an A100-40GB, where that name means two memory slices) then leaves the node
with MIG half-configured and its GPUs unusable. Placement is decided by
``components.catalog.mig.place`` (start positions, not just slice sums), the same function the
program's config validation uses. The target model comes from each entry's ``device-filter``
(PCI device ids, mapped to models through the catalog).

Two places carry a mig-parted file: the GPU Operator release's
``migManager.config.data["config.yaml"]`` and a ConfigMap the release points at.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.mig import MIG_GPUS, MigError, place

from .facts import is_gpu_operator_chart
from .names import CONFIG_MAP_TYPE, HELM_RELEASE_TYPES
from .props import get, is_list, is_mapping, text

PARTED_KEY = "config.yaml"

# PCI device id ("0x233010de", lower case) -> model key, from the MIG catalog.
_MODEL_BY_PCI_ID: Mapping[str, str] = {
    pci_id.lower(): gpu.model for gpu in MIG_GPUS.values() for pci_id in gpu.pci_device_ids
}


def _parted_text(args: ResourceValidationArgs) -> str | None:
    """The mig-parted YAML this resource carries, if any."""
    if args.resource_type in HELM_RELEASE_TYPES and is_gpu_operator_chart(args.props):
        value = get(args.props, "values", "migManager", "config", "data", PARTED_KEY)
        return value if isinstance(value, str) else None
    if args.resource_type == CONFIG_MAP_TYPE:
        value = get(args.props, "data", PARTED_KEY)
        if isinstance(value, str) and "mig-configs" in value:
            return value
    return None


def _filters(entry: Mapping[str, Any]) -> list[str]:
    device_filter = entry.get("device-filter")
    if isinstance(device_filter, str):
        return [device_filter]
    return [str(item) for item in device_filter] if is_list(device_filter) else []


def _candidate_models(layout: Mapping[str, Any]) -> list[str]:
    """Models offering every profile of ``layout`` (for entries without a device filter)."""
    names = set(layout)
    return [gpu.model for gpu in MIG_GPUS.values() if names <= {p.name for p in gpu.profiles}]


def layout_problems(document: Any) -> Iterator[str]:
    """Every reason a parsed mig-parted document holds a layout that cannot be placed."""
    configs = document.get("mig-configs") if is_mapping(document) else None
    if not is_mapping(configs):
        yield "the mig-parted file has no mig-configs mapping"
        return
    for name in sorted(configs, key=str):
        entries = configs[name]
        if not is_list(entries):
            yield f"config {name!r} must be a list of entries"
            continue
        for index, entry in enumerate(entries):
            where = f"config {name!r} entry {index}"
            if not is_mapping(entry) or entry.get("mig-enabled") is not True:
                continue
            layout = entry.get("mig-devices") or {}
            if not is_mapping(layout):
                yield f"{where}: mig-devices must map profile names to counts"
                continue
            filters = _filters(entry)
            if filters:
                models = sorted({_MODEL_BY_PCI_ID[f.lower()] for f in filters if f.lower() in _MODEL_BY_PCI_ID})
                if not models:
                    yield (
                        f"{where}: device-filter {', '.join(filters)} matches no MIG-capable GPU in the catalog, "
                        "so the layout cannot be checked"
                    )
                    continue
            else:
                models = _candidate_models(layout)
                if not models:
                    yield f"{where}: no MIG-capable GPU in the catalog offers all of {', '.join(sorted(layout))}"
                    continue
            failures = []
            for model in models:
                try:
                    place(model, dict(layout))
                except MigError as error:
                    failures.append(str(error))
            # With a filter the layout must fit every model the filter selects; without one, some model.
            if failures and (filters or len(failures) == len(models)):
                yield f"{where}: {'; '.join(failures)}"


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    parted = _parted_text(args)
    if parted is None:
        return
    label = f"{args.name} {PARTED_KEY}"
    try:
        document = yaml.safe_load(parted)
    except yaml.YAMLError as error:
        report(f"{label} is not valid YAML: {text(str(error)).splitlines()[0]}", None)
        return
    for problem in layout_problems(document):
        report(f"{label}: {problem}", None)


mig_layouts_placeable = ResourceValidationPolicy(
    name="mig-layouts-placeable",
    description="Every MIG layout in a mig-parted config can be placed on the GPU model its device filter selects.",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["gpu", "mig"],
)

POLICIES = [mig_layouts_placeable]
