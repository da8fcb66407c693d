"""NVIDIA's named mig-parted configs (``all-1g.10gb``, ``all-balanced``, ...) as data, resolved per model.

The names are the values users put on the ``nvidia.com/mig.config`` node label. Source: NVIDIA/gpu-operator
tag v26.7.0, ``assets/state-mig-manager/0400_configmap.yaml`` (ConfigMap ``default-mig-parted-config``,
commit a22dbf671f2e == v26.7.0), every config in file order. Every entry there uses ``devices: all``, so
only the device filter and the ``mig-devices`` are kept. (Since v26.3.0 mig-manager generates a per-node
config with the same ``all-<profile>`` / ``all-balanced`` names from NVML; this static file is its fallback
on drivers that cannot report profiles, e.g. R535.)

A config is defined for a model the way mig-parted would apply it to that model's GPUs: for each GPU, the
first entry whose ``device-filter`` is absent or contains the GPU's PCI device id wins, and an unfiltered
entry only counts when the model offers every profile it names (mig-parted fails on unknown profile names).
So ``all-1g.10gb`` is 7 x 1g.10gb on H100-80GB but 4 x 1g.10gb (the 2-memory-slice profile) on A100-40GB.
A pool of a model may hold any of the model's device ids, so a config is offered for a model only when
every one of its ids gets the same entry: a config whose filter leaves one out would give those GPUs
nothing (``all-1g.35gb`` filters the H200 SXM id ``0x233510DE`` only, so H200 NVL nodes labelled with it
stay unpartitioned). ``named_layout`` refuses such a name and lists the names that do apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from components.catalog.mig.errors import UnknownMigConfig
from components.catalog.mig.profiles import MIG_GPUS, mig_gpu
from components.catalog.names import MIG_ALL_DISABLED


@dataclass(frozen=True)
class PartedEntry:
    """One entry of a named config: which GPUs it selects and what it puts on each."""

    device_filter: tuple[str, ...] | None  # None: applies to every GPU
    mig_devices: tuple[tuple[str, int], ...] | None  # None: "mig-enabled: false"


@dataclass(frozen=True)
class NamedConfig:
    """A ``mig-configs.<name>`` list from NVIDIA's default config."""

    name: str
    entries: tuple[PartedEntry, ...]


def _each(name: str, profile: str, count: int) -> NamedConfig:
    """An unfiltered single-profile config: ``all-<profile>: [{devices: all, mig-devices: {p: n}}]``."""
    return NamedConfig(name, (PartedEntry(None, ((profile, count),)),))


def _filtered(name: str, *entries: tuple[tuple[str, ...], dict[str, int]]) -> NamedConfig:
    return NamedConfig(name, tuple(PartedEntry(ids, tuple(devices.items())) for ids, devices in entries))


# Device filters exactly as the file writes them (A30's is a bare string there, normalised to a tuple).
_GB200_HGX = ("0x294110DE",)
_RTX_PRO_6000 = ("0x2BB510DE",)
_B200 = ("0x290110DE",)
_GH200_144G = ("0x234810DE",)
_H200 = ("0x233510DE", "0x233B10DE")  # H200 141GB, H200 NVL (catalog keys H200-141GB, H200-NVL-141GB)
_H200_141GB = ("0x233510DE",)  # all-1g.35gb filters H200 141GB (SXM) only, not H200 NVL
_H100_NVL = ("0x232110DE", "0x233A10DE")
_H100_A100_80GB = (  # H100-80GB, H800-80GB, A100-80GB, A800-80GB
    "0x233010DE",
    "0x233110DE",
    "0x232210DE",
    "0x20B210DE",
    "0x20B510DE",
    "0x20F310DE",
    "0x20F510DE",
    "0x232410DE",
)
_A100_40GB = ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE")  # A100-40GB, A800-40GB
_A30 = ("0x20B710DE",)
_H100_96GB = ("0x234210DE", "0x233D10DE", "0x20B610DE", "0x232910DE")  # H100-96GB, PG506-96GB, GH200, H20
_B300 = ("0x318210DE",)
_GB300 = ("0x31C210DE",)

DEFAULT_CONFIGS: tuple[NamedConfig, ...] = (
    NamedConfig(MIG_ALL_DISABLED, (PartedEntry(None, None),)),
    NamedConfig("all-enabled", (PartedEntry(None, ()),)),
    # A100-40GB, A800-40GB
    _each("all-1g.5gb", "1g.5gb", 7),
    _each("all-1g.5gb.me", "1g.5gb+me", 1),
    _each("all-2g.10gb", "2g.10gb", 3),
    _each("all-3g.20gb", "3g.20gb", 2),
    _each("all-4g.20gb", "4g.20gb", 1),
    _each("all-7g.40gb", "7g.40gb", 1),
    # RTX-PRO-6000-96GB
    _each("all-1g.24gb.gfx", "1g.24gb+gfx", 4),
    _each("all-1g.24gb.me.all", "1g.24gb+me.all", 1),
    _each("all-1g.24gb-me", "1g.24gb-me", 4),
    _each("all-2g.48gb", "2g.48gb", 2),
    _each("all-2g.48gb.gfx", "2g.48gb+gfx", 2),
    _each("all-2g.48gb.me.all", "2g.48gb+me.all", 1),
    _each("all-2g.48gb-me", "2g.48gb-me", 2),
    _each("all-4g.96gb", "4g.96gb", 1),
    _each("all-4g.96gb.gfx", "4g.96gb+gfx", 1),
    # H100-80GB, H800-80GB, A100-80GB, A800-80GB, A100-40GB, A800-40GB
    _filtered("all-1g.10gb", (_H100_A100_80GB, {"1g.10gb": 7}), (_A100_40GB, {"1g.10gb": 4})),
    # H100-80GB, H800-80GB, A100-80GB, A800-80GB
    _each("all-1g.10gb.me", "1g.10gb+me", 1),
    _each("all-1g.20gb", "1g.20gb", 4),
    # GB200, B200
    _each("all-1g.23gb", "1g.23gb", 7),
    _each("all-1g.23gb.me", "1g.23gb+me", 1),
    _each("all-1g.24gb.me", "1g.24gb+me", 1),
    _each("all-2g.20gb", "2g.20gb", 3),
    _each("all-3g.40gb", "3g.40gb", 2),
    _each("all-4g.40gb", "4g.40gb", 1),
    _each("all-7g.80gb", "7g.80gb", 1),
    # A30-24GB
    _each("all-1g.6gb", "1g.6gb", 4),
    _each("all-1g.6gb.me", "1g.6gb+me", 1),
    _each("all-2g.12gb", "2g.12gb", 2),
    _each("all-2g.12gb.me", "2g.12gb+me", 1),
    _each("all-4g.24gb", "4g.24gb", 1),
    # H100 NVL, H800 NVL, GH200
    _each("all-1g.12gb", "1g.12gb", 7),
    _each("all-1g.12gb.me", "1g.12gb+me", 1),
    _each("all-1g.24gb", "1g.24gb", 4),
    _each("all-1g.45gb", "1g.45gb", 4),
    _each("all-1g.47gb", "1g.47gb", 4),
    _each("all-2g.24gb", "2g.24gb", 3),
    _each("all-2g.45gb", "2g.45gb", 3),
    _each("all-2g.47gb", "2g.47gb", 3),
    # H100 NVL, H800 NVL
    _each("all-3g.47gb", "3g.47gb", 2),
    _each("all-4g.47gb", "4g.47gb", 1),
    _each("all-7g.94gb", "7g.94gb", 1),
    # H100-96GB, PG506-96GB, GH200
    _each("all-3g.48gb", "3g.48gb", 2),
    _each("all-3g.90gb", "3g.90gb", 2),
    _each("all-3g.93gb", "3g.93gb", 2),
    _each("all-3g.95gb", "3g.95gb", 2),
    _each("all-4g.48gb", "4g.48gb", 1),
    _each("all-4g.90gb", "4g.90gb", 1),
    _each("all-4g.93gb", "4g.93gb", 1),
    _each("all-4g.95gb", "4g.95gb", 1),
    _each("all-7g.96gb", "7g.96gb", 1),
    _each("all-7g.180gb", "7g.180gb", 1),
    _each("all-7g.186gb", "7g.186gb", 1),
    _each("all-7g.189gb", "7g.189gb", 1),
    _filtered(
        "all-balanced",
        (_GB200_HGX, {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}),
        (_RTX_PRO_6000, {"1g.24gb": 2, "2g.48gb": 1}),
        (_B200, {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
        (_GH200_144G, {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
        (_H200, {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
        (_H100_NVL, {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
        (_H100_A100_80GB, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        (_A100_40GB, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        (_A30, {"1g.6gb": 2, "2g.12gb": 1}),
        (_H100_96GB, {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
        (_B300, {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1}),
        (_GB300, {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1}),
    ),
    # H200-141GB, GH200 144G HBM3e
    _each("all-1g.18gb", "1g.18gb", 7),
    _each("all-1g.18gb.me", "1g.18gb+me", 1),
    _filtered("all-1g.35gb", (_H200_141GB, {"1g.35gb": 4}), (_GB300, {"1g.35gb": 7})),
    _each("all-2g.35gb", "2g.35gb", 3),
    _each("all-3g.71gb", "3g.71gb", 2),
    _each("all-4g.71gb", "4g.71gb", 1),
    _each("all-7g.141gb", "7g.141gb", 1),
    # GH200 144G HBM3e
    _each("all-1g.36gb", "1g.36gb", 4),
    _each("all-2g.36gb", "2g.36gb", 3),
    _each("all-3g.72gb", "3g.72gb", 2),
    _each("all-4g.72gb", "4g.72gb", 1),
    _each("all-7g.144gb", "7g.144gb", 1),
    # B300
    _each("all-1g.34gb", "1g.34gb", 7),
    _each("all-1g.34gb.me", "1g.34gb+me", 1),
    _each("all-1g.67gb", "1g.67gb", 4),
    _each("all-2g.67gb", "2g.67gb", 3),
    _each("all-3g.135gb", "3g.135gb", 2),
    _each("all-4g.135gb", "4g.135gb", 1),
    _each("all-7g.269gb", "7g.269gb", 1),
    # GB300
    _each("all-1g.35gb.me", "1g.35gb+me", 1),
    _each("all-1g.70gb", "1g.70gb", 4),
    _each("all-2g.70gb", "2g.70gb", 3),
    _each("all-3g.139gb", "3g.139gb", 2),
    _each("all-4g.139gb", "4g.139gb", 1),
    _each("all-7g.278gb", "7g.278gb", 1),
)


def _entry_for_device(config: NamedConfig, device_id: str, offered: set[str]) -> PartedEntry | None:
    """The entry mig-parted applies to one GPU with PCI id ``device_id``, or None: that GPU gets nothing."""
    for entry in config.entries:
        if entry.device_filter is not None and device_id not in entry.device_filter:
            continue
        if entry.mig_devices is not None and any(name not in offered for name, _ in entry.mig_devices):
            continue  # written for another GPU family: mig-parted would fail on the unknown profile
        return entry
    return None


def _entry_for(model: str, config: NamedConfig) -> PartedEntry | None:
    """The entry mig-parted would apply to every GPU of ``model``, or None if some GPU would not get it."""
    gpu = mig_gpu(model)
    offered = {p.name for p in gpu.profiles}
    entries = {_entry_for_device(config, device_id, offered) for device_id in gpu.pci_device_ids}
    return entries.pop() if len(entries) == 1 else None


def named_layout_names(model: str) -> tuple[str, ...]:
    """The NVIDIA config names usable on ``model``, in the order of NVIDIA's file."""
    return tuple(c.name for c in DEFAULT_CONFIGS if _entry_for(model, c) is not None)


def _models_of(device_ids: tuple[str, ...]) -> str:
    """``0x233510DE (H200-141GB), 0x31C210DE``: PCI ids with the catalog's model key where it has one."""
    keys = {device_id: gpu.model for gpu in MIG_GPUS.values() for device_id in gpu.pci_device_ids}
    return ", ".join(f"{d} ({keys[d]})" if d in keys else d for d in device_ids)


def _why_not(model: str, config: NamedConfig) -> str:
    """Why ``config`` is not offered for ``model``, for the refusal."""
    gpu = mig_gpu(model)
    filters = [entry.device_filter for entry in config.entries]
    if all(device_filter is not None for device_filter in filters):
        selected = tuple(dict.fromkeys(d for device_filter in filters if device_filter for d in device_filter))
        own = ", ".join(gpu.pci_device_ids)
        return (
            f"NVIDIA's default mig-parted config applies {config.name!r} only to the PCI devices "
            f"{_models_of(selected)}, so {model} GPUs ({own}) labelled with it would get nothing"
        )
    return f"NVIDIA's default mig-parted config has no {config.name!r} for it (its profiles are not {model}'s)"


def named_layout(model: str, name: str) -> Mapping[str, int] | None:
    """What config ``name`` puts on one GPU of ``model``: profile -> count; None for ``all-disabled``.

    ``all-enabled`` is ``{}`` (MIG on, no instances). A name that NVIDIA does not define for every
    device id of this model raises ``UnknownMigConfig`` saying why and listing the valid names.
    """
    valid = ", ".join(named_layout_names(model))
    for config in DEFAULT_CONFIGS:
        if config.name != name:
            continue
        entry = _entry_for(model, config)
        if entry is None:
            raise UnknownMigConfig(f"{model}: {_why_not(model, config)}; valid for {model}: {valid}")
        return None if entry.mig_devices is None else dict(entry.mig_devices)
    raise UnknownMigConfig(f"{model}: NVIDIA's default mig-parted config has no {name!r}; valid for {model}: {valid}")
