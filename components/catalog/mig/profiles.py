"""MIG GPU-instance profiles per GPU model: the facts every other MIG module builds on.

A GPU instance (GI) takes ``compute_slices`` SM slices and a contiguous run of ``memory_slices``
memory slices that must start at one of the profile's allowed ``starts``. Whether a layout fits is
therefore a question of *positions*, not just of sums; ``placement.py`` answers it from these facts.

Sources (each table below names the one it comes from):
- NVIDIA MIG User Guide, "Supported MIG Profiles" (v580 edition)
  https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html
  (A30, A100 and H100 / H200 / B200 tables: names and "Number of Instances Available").
- NVIDIA MIG User Guide, "Getting Started", ``nvidia-smi mig -lgipp`` on A100-40GB: the start positions
  ``19 {0..6}:1 | 20 {0..6}:1 | 15 {0,2,4,6}:2 | 14 {0,2,4}:2 | 9 {0,4}:4 | 5 {0}:4 | 0 {0}:8``.
  Public ``-lgip`` output of an H100-80GB shows the same profile IDs (19, 20, 15, 14, 9, 5, 0).
- NVIDIA MIG User Guide, "Supported GPUs": at most 7 GPU instances on 7-slice products, 4 on A30.
- NVIDIA/gpu-operator v26.7.0 ``assets/state-mig-manager/0400_configmap.yaml``
  (default-mig-parted-config): PCI device-filter ids per product family, and the profile sets of the
  H100 NVL (94GB) / H100 96GB / GH200 144GB families, whose guide tables were not retrieved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from components.catalog.gpus import GPU_MODELS
from components.catalog.mig.errors import MigNotSupported, UnknownGpuModel, UnknownMigProfile


@dataclass(frozen=True)
class Geometry:
    """How a GPU is cut: slice totals and the most GPU instances it can hold at once."""

    name: str
    compute_slices: int
    memory_slices: int
    max_gpu_instances: int


# A100 / H100 / H200 / GH200 / B200: "A GPU memory slice is roughly one eighth of the total GPU memory...
# A GPU SM slice is roughly one seventh of the SMs" (MIG guide, Concepts); max 7 GIs (Supported GPUs).
SEVEN_SLICE = Geometry(name="7 compute / 8 memory slices", compute_slices=7, memory_slices=8, max_gpu_instances=7)
# A30: 4 SM slices, 4 memory slices, max 4 GIs (MIG guide A30 table: fractions are quarters).
FOUR_SLICE = Geometry(name="4 compute / 4 memory slices", compute_slices=4, memory_slices=4, max_gpu_instances=4)


@dataclass(frozen=True)
class Profile:
    """One GPU-instance profile as ``nvidia-smi mig -lgip`` / ``-lgipp`` show it."""

    name: str
    gi_profile_id: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    starts: tuple[int, ...]

    @property
    def media_extensions(self) -> bool:
        """``+me`` profiles own the GPU's single set of media engines, so only one fits per GPU."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class MigGpu:
    """The MIG facts of one GPU model key."""

    model: str
    geometry: Geometry
    profiles: tuple[Profile, ...]
    # PCI device ids in the form NVIDIA's mig-parted `device-filter` uses ("0xDDDDVVVV", vendor 10DE); the
    # boards they belong to are named in the GPU table (catalog.gpus, ``GpuModel.boards``).
    pci_device_ids: tuple[str, ...]
    source: str

    def profile(self, name: str) -> Profile:
        """The profile called ``name``; the error lists every profile this model offers."""
        for candidate in self.profiles:
            if candidate.name == name:
                return candidate
        allowed = ", ".join(p.name for p in self.profiles)
        raise UnknownMigProfile(f"{self.model}: unknown MIG profile {name!r}; allowed profiles: {allowed}")


# 7-slice start positions, from `nvidia-smi mig -lgipp` (MIG guide, Getting Started, A100-40GB; the same
# list is reported for H100-80GB and H100 NVL). Keyed by (compute slices, memory slices).
_SEVEN_SLICE_STARTS: Mapping[tuple[int, int], tuple[int, ...]] = MappingProxyType(
    {
        (1, 1): (0, 1, 2, 3, 4, 5, 6),  # IDs 19 and 20 (+me): memory slice 7 cannot start a 1-slice GI
        (1, 2): (0, 2, 4, 6),  # ID 15: the "1g with double memory" profile
        (2, 2): (0, 2, 4),  # ID 14
        (3, 4): (0, 4),  # ID 9
        (4, 4): (0,),  # ID 5: hence only one 4g per GPU
        (7, 8): (0,),  # ID 0: the whole GPU
    }
)


def _seven_slice_profiles(one: str, double: str, half: str, full: str, *, media: bool = True) -> tuple[Profile, ...]:
    """The seven profiles of a 7-slice GPU, named by their memory sizes.

    ``one`` is the 1/8-memory size, ``double`` the 2/8 size (used by both 1g.<double> and 2g.<double>),
    ``half`` the 4/8 size (3g and 4g) and ``full`` the whole GPU (7g), e.g. "10gb", "20gb", "40gb",
    "80gb" for H100-80GB. IDs and max counts are those of the A100/H100 tables; every 7-slice product
    in the MIG guide and in NVIDIA's default mig-parted config uses the same counts.
    """

    def make(name: str, gi_id: int, compute: int, memory: int, max_instances: int) -> Profile:
        return Profile(name, gi_id, compute, memory, max_instances, _SEVEN_SLICE_STARTS[(compute, memory)])

    profiles = [make(f"1g.{one}", 19, 1, 1, 7)]
    if media:
        profiles.append(make(f"1g.{one}+me", 20, 1, 1, 1))
    profiles += [
        make(f"1g.{double}", 15, 1, 2, 4),
        make(f"2g.{double}", 14, 2, 2, 3),
        make(f"3g.{half}", 9, 3, 4, 2),
        make(f"4g.{half}", 5, 4, 4, 1),
        make(f"7g.{full}", 0, 7, 8, 1),
    ]
    return tuple(profiles)


# A30-24GB. Names, max counts: MIG guide A30 table. Profile IDs and start positions are NOT in the
# research notes; they come from public `nvidia-smi mig -lgip` / `-lgipp` output of an A30 (driver 535):
# 14 {0,1,2,3}:1 | 21 {0,1,2,3}:1 | 5 {0,2}:2 | 6 {0,2}:2 | 0 {0}:4, and agree with the placement table
# of NVIDIA/go-nvml pkg/nvml/mock/internal/shared/gpus/a30.go (commit a8dbea43). They are also what the
# 7-slice rule gives when scaled to 4 slices (sizes aligned to their own size), which is how we checked.
_A30_PROFILES = (
    Profile("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3)),
    Profile("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3)),  # R470+ drivers
    Profile("2g.12gb", 5, 2, 2, 2, (0, 2)),
    Profile("2g.12gb+me", 6, 2, 2, 1, (0, 2)),  # R525+ drivers
    Profile("4g.24gb", 0, 4, 4, 1, (0,)),
)

_CATALOG: tuple[MigGpu, ...] = (
    MigGpu(
        "A30-24GB",
        FOUR_SLICE,
        _A30_PROFILES,
        ("0x20B710DE",),  # gpu-operator default config, all-balanced "A30-24GB" filter
        "MIG guide A30 table; A30 lgip/lgipp output; go-nvml a30.go mock",
    ),
    MigGpu(
        "A100-40GB",
        SEVEN_SLICE,
        # MIG guide Table "A100-SXM4-40GB". The guide prints "1/8" memory for 1g.10gb but -lgipp shows
        # profile 15 as {0,2,4,6}:2, i.e. two memory slices; placement uses the lgipp fact.
        _seven_slice_profiles("5gb", "10gb", "20gb", "40gb"),
        ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"),  # gpu-operator filter "A100-40GB, A800-40GB"
        "MIG guide A100-40GB table + lgipp example; gpu-operator default-mig-parted-config",
    ),
    MigGpu(
        "A100-80GB",
        SEVEN_SLICE,
        # MIG guide: for A100-SXM4-80GB "the profile names will change according to the memory proportion".
        _seven_slice_profiles("10gb", "20gb", "40gb", "80gb"),
        # go-nvml mock: 0x20B2 A100-SXM4-80GB, 0x20B5 A100-PCIE-80GB; 0x20F3 / 0x20F5 are the A800-80GB
        # ids of the gpu-operator filter "H100-80GB, H800-80GB, A100-80GB, A800-80GB".
        ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"),
        "MIG guide A100 note; gpu-operator default-mig-parted-config",
    ),
    MigGpu(
        "H100-80GB",
        SEVEN_SLICE,
        _seven_slice_profiles("10gb", "20gb", "40gb", "80gb"),  # MIG guide H100 table; H100 lgip output
        # gpu-operator filter "H100-80GB, H800-80GB, ...": 0x2330 H100 SXM5 80GB HBM3, 0x2331 H100 PCIe,
        # 0x2322 / 0x2324 H800.
        ("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"),
        "MIG guide H100 table; gpu-operator default-mig-parted-config",
    ),
    MigGpu(
        "H100-94GB",
        SEVEN_SLICE,
        # Profile set from gpu-operator default-mig-parted-config (all-1g.12gb ... all-7g.94gb, "H100 NVL");
        # the guide's H100 94GB table was not retrieved. IDs assumed equal to the 7-slice class.
        _seven_slice_profiles("12gb", "24gb", "47gb", "94gb"),
        ("0x232110DE", "0x233A10DE"),  # gpu-operator filter "H100 NVL, H800 NVL"
        "gpu-operator default-mig-parted-config (H100 NVL entries)",
    ),
    MigGpu(
        "H100-96GB",
        SEVEN_SLICE,
        # NVIDIA's default config calls this family "H100-96GB, PG506-96GB, GH200, H20" (all-3g.48gb,
        # all-4g.48gb, all-7g.96gb, all-balanced) and files all-1g.12gb / all-1g.12gb.me under
        # "H100 NVL, H800 NVL, GH200"; NVIDIA/mig-parted pkg/mig/builder tests list 1g.12gb+me for
        # "H100-96GB" too. So +me is included here (the shared profile table omitted it).
        _seven_slice_profiles("12gb", "24gb", "48gb", "96gb"),
        # The gpu-operator filter, in the order of the boards (gpus.py).
        ("0x234210DE", "0x233D10DE", "0x20B610DE", "0x232910DE"),
        "gpu-operator default-mig-parted-config (H100-96GB / GH200-96GB entries)",
    ),
    # The two H200 boards share one profile table but not one device id, and NVIDIA's default config
    # treats the ids differently: all-balanced filters ["0x233510DE", "0x233B10DE"] ("H200 141GB, H200
    # NVL", in that order), all-1g.35gb only ["0x233510DE"] ("H200-141GB"). A real H200 SXM reports
    # 0x233510DE (tests/fixtures/nvidia-smi); NVIDIA/gpu-admin-tools gpu/devid_names.py names both
    # 0x2335 and 0x233B "H200". One key per id, so a named config is offered only where it applies.
    MigGpu(
        "H200-141GB",
        SEVEN_SLICE,
        _seven_slice_profiles("18gb", "35gb", "71gb", "141gb"),  # MIG guide H200 table
        ("0x233510DE",),  # gpu-operator filters "H200 141GB" / "H200-141GB"
        "MIG guide H200 table; gpu-operator default-mig-parted-config",
    ),
    MigGpu(
        "H200-NVL-141GB",
        SEVEN_SLICE,
        # Same table: NVIDIA's all-balanced gives both ids 1g.18gb / 2g.35gb / 3g.71gb.
        _seven_slice_profiles("18gb", "35gb", "71gb", "141gb"),
        ("0x233B10DE",),  # gpu-operator filter "H200 141GB, H200 NVL", second id
        "MIG guide H200 table; gpu-operator default-mig-parted-config (all-balanced H200 NVL entry)",
    ),
    MigGpu(
        "GH200-144GB",
        SEVEN_SLICE,
        # gpu-operator default config: all-1g.18gb(.me) filed under "H200-141GB, GH200 144G HBM3e",
        # all-1g.36gb ... all-7g.144gb under "GH200 144G HBM3e".
        _seven_slice_profiles("18gb", "36gb", "72gb", "144gb"),
        ("0x234810DE",),  # gpu-operator all-balanced filter "GH200 144G HBM3e"
        "gpu-operator default-mig-parted-config (GH200 144G HBM3e entries)",
    ),
    MigGpu(
        "B200-180GB",
        SEVEN_SLICE,
        _seven_slice_profiles("23gb", "45gb", "90gb", "180gb"),  # MIG guide B200 table
        ("0x290110DE",),  # gpu-operator all-balanced filter "B200"
        "MIG guide B200 table; gpu-operator default-mig-parted-config",
    ),
)

MIG_GPUS: Mapping[str, MigGpu] = MappingProxyType({gpu.model: gpu for gpu in _CATALOG})

# The GPU table (catalog.gpus) says which models can do MIG; this table only adds their MIG facts, keyed
# by the same keys. A model here that the GPU table does not know, or a MIG-capable model without facts
# here, is a catalog bug: refuse to import rather than answer differently in two places.
_MIG_CAPABLE = tuple(key for key, model in GPU_MODELS.items() if model.mig_capable)
if tuple(MIG_GPUS) != _MIG_CAPABLE:
    raise AssertionError(
        f"MIG table keys {tuple(MIG_GPUS)} differ from the GPU table's MIG-capable models {_MIG_CAPABLE}"
    )


def mig_models() -> tuple[str, ...]:
    """Every MIG-capable model key, in catalog order."""
    return tuple(MIG_GPUS)


def is_mig_capable(model: str) -> bool:
    """Whether ``model`` can be partitioned with MIG.

    Raises ``UnknownGpuModel`` for a key the project does not know, rather than answering False:
    a typo must not quietly turn into "this GPU has no MIG".
    """
    if model in GPU_MODELS:
        return GPU_MODELS[model].mig_capable
    raise UnknownGpuModel(
        f"unknown GPU model {model!r}; known models: {', '.join(GPU_MODELS)}; MIG-capable: {', '.join(MIG_GPUS)}"
    )


def mig_gpu(model: str) -> MigGpu:
    """The MIG facts of ``model``; refuses unknown and non-MIG models with the allowed list."""
    if not is_mig_capable(model):
        raise MigNotSupported(
            f"{model} cannot do MIG (MIG needs an Ampere-or-newer data-center GPU); "
            f"MIG-capable models: {', '.join(MIG_GPUS)}"
        )
    return MIG_GPUS[model]


def mig_profiles(model: str) -> tuple[Profile, ...]:
    """The GPU-instance profiles of ``model``, smallest first, as the MIG guide tables list them."""
    return mig_gpu(model).profiles


def mig_profile(model: str, name: str) -> Profile:
    """One profile of ``model`` by name (``UnknownMigProfile`` lists the allowed names)."""
    return mig_gpu(model).profile(name)
