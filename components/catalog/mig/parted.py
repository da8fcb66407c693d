"""Render a mig-parted ``version: v1`` config, and say what the device plugin will advertise from it.

File format: NVIDIA/mig-parted ``api/spec/v1/spec.go`` (``version: v1``; ``mig-configs.<name>`` is a list of
``{device-filter?, devices: all | [indexes], mig-enabled, mig-devices}``). The output is a plain dict with a
fixed key order (``version``, then ``mig-configs`` with ``all-disabled`` first and the rest sorted by name;
entry keys in the order NVIDIA's own file uses), so ``yaml.safe_dump(..., sort_keys=False)`` is stable
and diffs of the rendered ConfigMap only show real changes.

Device filters: every entry we render carries ``device-filter`` with its model's PCI ids, even when a
config names a single model. A profile name does not identify a GPU: ``1g.10gb`` is one memory slice on
H100-80GB but two on A100-40GB, so an unfiltered entry labelled onto the wrong node would silently build a
different geometry. With the filter, a label on the wrong hardware selects no GPU instead. (NVIDIA's own
file only filters where one name means different counts per product; ours is stricter on purpose.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from components.catalog.gpu_operator_chart import GPU_RESOURCE, mig_resource_name
from components.catalog.mig.errors import MigPartedError
from components.catalog.mig.placement import place
from components.catalog.mig.profiles import mig_gpu
from components.catalog.names import MIG_ALL_DISABLED

MigStrategy = Literal["single", "mixed"]

ALL_DISABLED = MIG_ALL_DISABLED
# The config name is the value of the node label nvidia.com/mig.config, so it must be a label value.
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$")


@dataclass(frozen=True)
class DeviceLayout:
    """What one entry of a named config puts on some GPUs of one model.

    ``devices`` is ``"all"`` or GPU indexes on the node; ``layout`` is profile -> count, ``{}`` for MIG
    enabled without instances, or None for MIG disabled. The layout is checked with ``place`` on creation,
    so an invalid one fails where it is written, not when mig-manager applies it on the node.
    """

    model: str
    devices: Literal["all"] | Sequence[int]
    layout: Mapping[str, int] | None

    def __post_init__(self) -> None:
        if self.devices != "all":
            indexes = tuple(self.devices)
            if not indexes:
                raise MigPartedError(f"{self.model}: devices must be 'all' or a non-empty list of GPU indexes")
            for index in indexes:
                if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                    raise MigPartedError(f"{self.model}: GPU index must be an integer >= 0, got {index!r}")
            if len(set(indexes)) != len(indexes):
                raise MigPartedError(f"{self.model}: GPU indexes repeat in {list(indexes)}")
            object.__setattr__(self, "devices", tuple(sorted(indexes)))
        if self.layout is not None:
            # place() validates the model, the profile names and the geometry; keep its canonical order.
            object.__setattr__(self, "layout", MappingProxyType(dict(place(self.model, self.layout).layout)))
        else:
            mig_gpu(self.model)

    def render(self) -> dict[str, Any]:
        """The mig-parted entry for this layout."""
        entry: dict[str, Any] = {
            "device-filter": list(mig_gpu(self.model).pci_device_ids),
            "devices": "all" if self.devices == "all" else list(self.devices),
            "mig-enabled": self.layout is not None,
        }
        if self.layout is not None:
            entry["mig-devices"] = dict(self.layout)
        return entry


#: mig-parted v0.15.0 ``pkg/types/mig_config.go`` ``MigConfig.AssertValidFormat``, which ``api/spec/v1/spec.go``
#: ``MigConfigSpec.UnmarshalJSON`` runs on every ``mig-devices`` map: an empty map is valid (MIG on, no instances,
#: NVIDIA's ``all-enabled``), a map whose counts are all 0 is refused ("all counts for all MigProfiles are 0").
ALL_ZERO_COUNTS_RULE = "mig-parted MigConfig.AssertValidFormat: all counts for all MigProfiles are 0"


def all_zero_counts_problem(layout: Mapping[str, int]) -> str | None:
    """Why mig-parted refuses ``layout`` as a ``mig-devices`` map: profiles listed, every count 0; else None."""
    counts = list(layout.values())
    if not counts or any(isinstance(count, bool) or not isinstance(count, int) or count != 0 for count in counts):
        return None
    return (
        f"every count is 0 ({ALL_ZERO_COUNTS_RULE}): the GPUs would have MIG on and no instance, so nothing could "
        "use them; give a profile a count, or write layout: all-enabled if that is what you mean "
        "(or all-disabled for whole GPUs)"
    )


def _check_no_overlap(name: str, entries: Sequence[DeviceLayout]) -> None:
    """Two entries of one config must not both claim a GPU of the same model."""
    claimed: dict[str, set[int] | Literal["all"]] = {}
    for entry in entries:
        previous = claimed.get(entry.model)
        if previous is None:
            claimed[entry.model] = "all" if entry.devices == "all" else set(entry.devices)
            continue
        if previous == "all" or entry.devices == "all":
            raise MigPartedError(f"config {name!r}: two entries for {entry.model} both claim all its GPUs")
        overlap = previous & set(entry.devices)
        if overlap:
            raise MigPartedError(f"config {name!r}: {entry.model} GPU indexes {sorted(overlap)} are claimed twice")
        previous |= set(entry.devices)


def render_parted_config(configs: Mapping[str, Sequence[DeviceLayout]]) -> dict[str, Any]:
    """A complete mig-parted config: ``all-disabled`` plus ``configs``, deterministically ordered.

    ``all-disabled`` is always present: the operator labels new MIG-capable nodes with it
    (``migManager.config.default``), and a custom config without it leaves those nodes failing.
    A caller-supplied ``all-disabled`` is accepted only if it disables MIG everywhere.
    """
    rendered: dict[str, list[dict[str, Any]]] = {ALL_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for name in sorted(configs):
        entries = configs[name]
        if not isinstance(name, str) or len(name) > 63 or not _LABEL_VALUE.match(name):
            raise MigPartedError(
                f"config name {name!r} is not a valid value for the nvidia.com/mig.config label "
                "(<= 63 characters: letters, digits, '-', '_', '.'; alphanumeric at both ends)"
            )
        if not entries:
            raise MigPartedError(f"config {name!r} has no entries")
        if name == ALL_DISABLED:
            if any(entry.layout is not None for entry in entries):
                raise MigPartedError(f"config {ALL_DISABLED!r} is reserved: it must disable MIG on every GPU")
            continue
        _check_no_overlap(name, entries)
        rendered[name] = [entry.render() for entry in entries]
    return {"version": "v1", "mig-configs": rendered}


def _normalised(layout: Mapping[str, int] | None) -> frozenset[tuple[str, int]] | None:
    return None if layout is None else frozenset((p, n) for p, n in layout.items() if n > 0)


def mig_strategy(layouts: Iterable[Mapping[str, int] | None]) -> MigStrategy:
    """The ``mig.strategy`` one node needs, given the layout of each of its GPUs (None: MIG disabled).

    ``single`` only when every GPU has the same layout with at most one profile type. Otherwise
    ``mixed``: k8s-device-plugin's single strategy refuses a node with "more than one MIG device type"
    and one whose GPUs differ in migEnabled (``internal/rm/device_map.go``
    ``buildDeviceMapFromConfigResources``); we also call same-profile-different-count nodes mixed, so
    every GPU of a "single" node offers the same thing.
    """
    distinct = {_normalised(layout) for layout in layouts}
    if len(distinct) > 1:
        return "mixed"
    if any(layout is not None and len(layout) > 1 for layout in distinct):
        return "mixed"
    return "single"


def advertised_resources(
    model: str, layout: Mapping[str, int] | None, strategy: MigStrategy, gpus_per_node: int
) -> dict[str, int]:
    """Allocatable GPU resources of a node whose ``gpus_per_node`` GPUs all carry ``layout``.

    - MIG disabled (None): ``nvidia.com/gpu`` = one per GPU, whatever the strategy.
    - ``mixed``: one ``nvidia.com/mig-<profile>`` resource per profile (see ``mig_resource_name``).
    - ``single``: every MIG device is advertised as ``nvidia.com/gpu`` (device plugin
      ``AddMIGResource("*", "gpu")``); a layout with two profile types cannot use it.
    - MIG enabled with no instances: nothing is advertised.
    """
    if strategy not in ("single", "mixed"):
        raise MigPartedError(f"MIG strategy must be 'single' or 'mixed', got {strategy!r}")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise MigPartedError(f"gpus_per_node must be an integer >= 1, got {gpus_per_node!r}")
    if layout is None:
        mig_gpu(model)
        return {GPU_RESOURCE: gpus_per_node}
    counts = place(model, layout).layout
    if strategy == "mixed":
        return {mig_resource_name(profile): n * gpus_per_node for profile, n in counts.items()}
    if len(counts) > 1:
        raise MigPartedError(
            f"{model}: the single MIG strategy needs one profile type per node; this layout has "
            f"{len(counts)} ({', '.join(counts)}); use mixed"
        )
    instances = sum(counts.values())  # one profile type (or none: nothing advertised)
    return {GPU_RESOURCE: instances * gpus_per_node} if instances else {}
