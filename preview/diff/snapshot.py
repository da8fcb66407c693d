"""One stack's preview as the diff engine reads it: only the files the preview writes.

A ``Snapshot`` is read from ``<preview>/<stack>/`` (``resources.json``, ``outputs.json``,
``policy-report.json``), never from the program's objects, so a preview made by another revision of
the code (the base of a diff) is read the same way, and new outputs are picked up without code here.

The MIG layout of each GPU comes from the same files: a pool's ``migConfig`` (output ``gpuPools``)
names a config of the mig-parted file the GPU Operator release ships (the release's values in
``resources.json``, ``migManager.config.data["config.yaml"]``), or one of NVIDIA's named configs
(``components.catalog.mig.named_layouts``); each GPU's layout is then placed at memory-slice starts
with the catalog's placer, the way mig-manager would apply it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.catalog.mig.errors import MigError
from components.catalog.mig.named_layouts import named_layout
from components.catalog.mig.placement import PlacedInstance, place
from components.catalog.mig.profiles import is_mig_capable, mig_gpu
from components.catalog.names import HELM_RELEASE_TYPE as HELM_RELEASE
from components.catalog.names import MIG_ALL_DISABLED as MIG_DISABLED
from components.catalog.names import PROJECT
from preview.diff.replacements import ResourceOptions
from preview.diff.urns import urns_from_parents
from preview.run.output_folder import REPORT_NAME
from preview.run.resource_options import OPTIONS_FILE

DEFAULT_MEMORY_SLICES = 8


@dataclass(frozen=True)
class Gpu:
    """One GPU of a pool's node: whole (MIG off), or its MIG instances where the plan puts them."""

    index: int
    mig: bool
    slices: tuple[PlacedInstance, ...] = ()  # the catalog placer's instances, by memory-slice start
    problem: str = ""  # a layout the placer refuses (the policy gate reports it too)

    def describe(self) -> str:
        """``whole GPU``, ``1g.10gb@0 ... 3g.40gb@4-7`` or ``MIG on, no instances``."""
        if self.problem:
            return f"unplaceable: {self.problem}"
        if not self.mig:
            return "whole GPU"
        return " ".join(s.describe() for s in self.slices) or "MIG on, no instances"


@dataclass(frozen=True)
class Pool:
    """A GPU pool as the outputs describe it, with each GPU of one of its nodes laid out."""

    name: str
    model: str
    source: str
    gpus_per_node: int
    max_nodes: int
    mig_config: str
    gpus: tuple[Gpu, ...]


@dataclass
class Snapshot:
    """What one preview of one stack wrote."""

    stack: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, str]] = field(default_factory=list)
    options: list[dict[str, Any]] = field(default_factory=list)  # ``options.json``, row by row; [] in older previews

    def urns(self) -> list[str]:
        """Each resource's engine URN, in ``resources`` order (reconstructed from parents where not recorded)."""
        if len(self.options) == len(self.resources) and all(row.get("urn") for row in self.options):
            return [str(row["urn"]) for row in self.options]
        return urns_from_parents(self.resources, self.stack, PROJECT)

    def aliases(self) -> list[tuple[str, ...]]:
        """Each resource's aliases (old URNs it answers to), in ``resources`` order; none where not recorded."""
        if len(self.options) != len(self.resources):
            return [() for _ in self.resources]
        return [tuple(str(a) for a in row.get("aliases") or ()) for row in self.options]

    def resource_options(self) -> list[ResourceOptions]:
        """Each resource's replacement options, in ``resources`` order (none where not recorded)."""
        if len(self.options) != len(self.resources):
            return [ResourceOptions() for _ in self.resources]
        return [ResourceOptions.from_json(row) for row in self.options]

    def mig_configs(self) -> dict[str, Any]:
        """``mig-configs`` of every mig-parted file the stack's Helm releases ship (config name -> entries)."""
        configs: dict[str, Any] = {}
        for resource in self.resources:
            if resource.get("type") != HELM_RELEASE:
                continue
            values = (resource.get("inputs") or {}).get("values") or {}
            data = (((values.get("migManager") or {}).get("config") or {}).get("data")) or {}
            text = data.get("config.yaml") if isinstance(data, dict) else None
            if isinstance(text, str):
                document = yaml.safe_load(text) or {}
                configs.update(document.get("mig-configs") or {})
        return configs

    def pools(self) -> list[Pool]:
        """Every pool of output ``gpuPools``, in name order, each GPU laid out."""
        pools_output = self.outputs.get("gpuPools")
        if not isinstance(pools_output, dict):
            return []
        configs = self.mig_configs()
        pools = []
        for name in sorted(pools_output):
            pool = pools_output[name] or {}
            model = str(pool.get("gpuModel") or "")
            count = int(pool.get("gpusPerNode") or 0)
            config = str(pool.get("migConfig") or MIG_DISABLED)
            pools.append(
                Pool(
                    name=name,
                    model=model,
                    source=str(pool.get("source") or ""),
                    gpus_per_node=count,
                    max_nodes=int(pool.get("maxNodes") or 0),
                    mig_config=config,
                    gpus=tuple(_gpus(model, count, config, configs)),
                )
            )
        return pools


def memory_slices(model: str) -> int:
    """How many memory slices a GPU of ``model`` has (8 on A100/H100-class GPUs); 8 for a GPU without MIG."""
    try:
        return mig_gpu(model).geometry.memory_slices if is_mig_capable(model) else DEFAULT_MEMORY_SLICES
    except MigError:
        return DEFAULT_MEMORY_SLICES


def _entry_for(entries: Any, index: int) -> dict[str, Any] | None:
    """The first mig-parted entry that selects GPU ``index`` (``devices: all`` or a list naming it)."""
    for entry in entries if isinstance(entries, list) else []:
        devices = entry.get("devices")
        if devices == "all" or (isinstance(devices, list) and index in devices):
            return dict(entry)
    return None


def _gpu(model: str, index: int, layout: dict[str, int] | None) -> Gpu:
    if layout is None:
        return Gpu(index=index, mig=False)
    try:
        placement = place(model, layout)
    except MigError as error:
        return Gpu(index=index, mig=True, problem=str(error))
    return Gpu(
        index=index,
        mig=True,
        slices=placement.instances,
    )


def _gpus(model: str, count: int, config: str, configs: dict[str, Any]) -> list[Gpu]:
    try:
        capable = is_mig_capable(model)
    except MigError as error:
        return [Gpu(index=i, mig=config != MIG_DISABLED, problem=str(error)) for i in range(count)]
    if config == MIG_DISABLED or not capable:
        return [Gpu(index=i, mig=False) for i in range(count)]
    if config in configs:
        gpus = []
        for index in range(count):
            entry = _entry_for(configs[config], index)
            enabled = bool(entry and entry.get("mig-enabled"))
            devices = (entry or {}).get("mig-devices") or {}
            gpus.append(_gpu(model, index, {str(k): int(v) for k, v in devices.items()} if enabled else None))
        return gpus
    try:
        named = named_layout(model, config)
    except MigError as error:
        return [Gpu(index=i, mig=True, problem=str(error)) for i in range(count)]
    return [_gpu(model, i, None if named is None else dict(named)) for i in range(count)]


def _read_json(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def load_snapshot(stack_dir: Path, stack: str | None = None) -> Snapshot:
    """Read ``<preview>/<stack>/``; ``FileNotFoundError`` when it holds no ``resources.json``."""
    resources_file = stack_dir / "resources.json"
    if not resources_file.exists():
        raise FileNotFoundError(f"{stack_dir} holds no preview (no resources.json)")
    return Snapshot(
        stack=stack or stack_dir.name,
        resources=json.loads(resources_file.read_text()),
        outputs=_read_json(stack_dir / "outputs.json", {}),
        findings=_read_json(stack_dir / REPORT_NAME, []),
        options=_read_json(stack_dir / OPTIONS_FILE, []),
    )
