"""Parsers for what nvidia-smi prints, checked against output captured from a real H200.

Pure functions over text, so the same code reads output that came back from a host over SSH, from a
pod log, or from a test fixture (``tests/fixtures/nvidia-smi/``, captured with driver 580.159.04).

Covered outputs:
- ``nvidia-smi --query-gpu=index,name,uuid,driver_version,pci.bus_id,memory.total,mig.mode.current,
  mig.mode.pending --format=csv`` (any column set; with or without header and units):
  ``parse_query_gpu_csv`` -> ``GpuRecord`` per GPU;
- ``nvidia-smi -q``: ``parse_smi_q`` -> driver and CUDA version, per-GPU product, MIG mode...
  (the whole indented tree is kept for the fields not typed here);
- ``nvidia-smi --version``: ``parse_smi_version``;
- ``nvidia-smi mig -lgip`` (GPU instance profiles) and ``nvidia-smi mig -lgipp`` (their
  placements). Both only read, and work with MIG mode disabled.

"Not available" markers (``N/A``, ``[N/A]``, ``[Not Supported]``...) become ``None``. For MIG modes,
``None`` means the GPU has no MIG (a V100 or T4 prints ``[N/A]``).

Product names map to the project's GPU model keys with ``gpu_model_key``, through the product-name
families the one GPU table states (``components/catalog/gpus.py``, ``smi_families``). An unknown product, or a memory size that fits none of the known variants, raises
``UnknownGpuProductError`` rather than returning ``None``: a wrong or missing model key would pick
the wrong MIG profiles, so the caller must decide what an unknown GPU means.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from components.catalog.gpus import GPU_MODELS

NOT_AVAILABLE = frozenset(
    {
        "N/A",
        "[N/A]",
        "Not Supported",
        "[Not Supported]",
        "Unknown Error",
        "[Unknown Error]",
        "Insufficient Permissions",
        "[Insufficient Permissions]",
        "Requested functionality has been deprecated",
    }
)


class NvidiaSmiError(RuntimeError):
    """nvidia-smi printed an error instead of the expected output (the message is its text)."""


class UnknownGpuProductError(ValueError):
    """A product name (or its memory size) that maps to none of the project's GPU model keys."""


class MigMode(StrEnum):
    """A GPU's MIG mode as nvidia-smi prints it."""

    ENABLED = "Enabled"
    DISABLED = "Disabled"


def _value(raw: str | None) -> str | None:
    """The text of a field, or None for nvidia-smi's 'not available' markers."""
    if raw is None:
        return None
    text = raw.strip()
    if not text or text in NOT_AVAILABLE:
        return None
    return text


def _mig_mode(raw: str | None) -> MigMode | None:
    text = _value(raw)
    if text is None:
        return None
    try:
        return MigMode(text)
    except ValueError:
        raise ValueError(f"unexpected MIG mode {text!r} (expected Enabled or Disabled)") from None


_MIB = re.compile(r"^(\d+)(?:\s*MiB)?$")


def _mib(raw: str | None) -> int | None:
    text = _value(raw)
    if text is None:
        return None
    match = _MIB.match(text)
    if not match:
        raise ValueError(f"unexpected memory size {text!r} (expected '<n> MiB')")
    return int(match.group(1))


def _looks_like_error(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in ("failed", "no devices were found", "not found", "error", "mismatch"))


# ---------------------------------------------------------------------------------------------
# GPU product name -> project model key
# ---------------------------------------------------------------------------------------------


def _families() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """(family pattern, candidate model keys), built from the one GPU table's ``smi_families``.

    The most specific family first ("H200 NVL" before "H200"; ``\\b`` keeps "GH200" from matching
    "H200"). A family with several keys is told apart by memory size; the key's "<n>GB" is what
    nvidia-smi reports as memory.total in GiB, rounded up (an H200 reports 143771 MiB = 140.4 GiB for
    "141GB").
    """
    keys: dict[str, list[str]] = {}
    for model in GPU_MODELS.values():
        for family in model.smi_families:
            keys.setdefault(family, []).append(model.key)
    order = sorted(keys, key=lambda family: (-len(family), family))
    return tuple((re.compile(rf"\b{re.escape(family)}\b"), tuple(keys[family])) for family in order)


_FAMILIES = _families()
_KEY_GB = re.compile(r"-(\d+)GB$")


def _nominal_gb(key: str) -> int:
    match = _KEY_GB.search(key)
    if match is None:  # pragma: no cover - the table above always has the suffix
        raise AssertionError(key)
    return int(match.group(1))


def gpu_model_key(product_name: str, memory_total_mib: int | None) -> str:
    """The project's model key (``"H200-141GB"``) for an nvidia-smi product name and memory size.

    Memory decides between variants of one family (A100 40/80GB, H100 80/94/96GB, GH200 96/144GB)
    and rejects variants the project does not know (a V100 16GB is not ``V100-32GB``). Raises
    UnknownGpuProductError when nothing fits; see the module docstring for why not ``None``.
    """
    for pattern, keys in _FAMILIES:
        if not pattern.search(product_name):
            continue
        if memory_total_mib is None:
            if len(keys) == 1:
                return keys[0]
            raise UnknownGpuProductError(
                f"{product_name!r} is one of {', '.join(keys)}; the memory size is needed to tell which"
            )
        gib = memory_total_mib / 1024
        best = min(keys, key=lambda key: abs(_nominal_gb(key) - gib))
        nominal = _nominal_gb(best)
        if abs(nominal - gib) <= max(2.0, 0.07 * nominal):
            return best
        raise UnknownGpuProductError(
            f"{product_name!r} with {memory_total_mib} MiB ({gib:.1f} GiB) matches no known variant ({', '.join(keys)})"
        )
    raise UnknownGpuProductError(f"unknown GPU product {product_name!r}: no project GPU model key for it")


# ---------------------------------------------------------------------------------------------
# --query-gpu=... --format=csv
# ---------------------------------------------------------------------------------------------

QUERY_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "pci.bus_id",
    "memory.total",
    "mig.mode.current",
    "mig.mode.pending",
)
"""The column set the project queries; ``query_gpu_command()`` builds the command line."""

_TYPED_FIELDS = frozenset(QUERY_GPU_FIELDS)


def query_gpu_command(fields: Sequence[str] = QUERY_GPU_FIELDS) -> list[str]:
    """argv of the query whose output ``parse_query_gpu_csv`` reads (with the header)."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv"]


@dataclass(frozen=True)
class GpuRecord:
    """One row of ``nvidia-smi --query-gpu=... --format=csv``; a column not queried is None."""

    index: int
    name: str
    uuid: str | None = None
    driver_version: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    mig_mode_current: MigMode | None = None
    mig_mode_pending: MigMode | None = None
    extra: Mapping[str, str | None] = field(default_factory=dict)
    """Queried columns this record does not type (``pci.device_id`` ...), by field name."""

    @property
    def mig_capable(self) -> bool:
        """False for GPUs without MIG (their MIG mode reads [N/A])."""
        return self.mig_mode_current is not None

    @property
    def mig_change_pending(self) -> bool:
        """A MIG mode change waits for a GPU reset or reboot."""
        return self.mig_mode_current != self.mig_mode_pending

    def model_key(self) -> str:
        """The project's GPU model key; raises UnknownGpuProductError."""
        return gpu_model_key(self.name, self.memory_total_mib)


_HEADER_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")


def _field_name(header: str) -> str:
    """``'memory.total [MiB]'`` -> ``'memory.total'``."""
    return _HEADER_UNIT.sub("", header).strip()


def parse_query_gpu_csv(text: str, fields: Sequence[str] | None = None) -> list[GpuRecord]:
    """Parse ``--query-gpu`` CSV output into one record per GPU, in output order.

    With ``fields=None`` the first line must be nvidia-smi's header (``--format=csv``); pass the
    queried fields for ``--format=csv,noheader``. ``name`` must be among the columns; ``index``
    defaults to the row number when it is not. Units (``143771 MiB``) are optional
    (``nounits``). Raises NvidiaSmiError when the text is an nvidia-smi error message.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiError("nvidia-smi printed nothing")
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    if fields is None:
        header = [_field_name(column) for column in rows[0]]
        if "name" not in header:
            raise NvidiaSmiError(lines[0].strip())
        columns, data = header, rows[1:]
    else:
        columns, data = list(fields), rows
    if "name" not in columns:
        raise ValueError(f"the query must include the 'name' field (columns: {', '.join(columns)})")
    records: list[GpuRecord] = []
    for number, row in enumerate(data):
        if len(row) != len(columns):
            line = ", ".join(row)
            if _looks_like_error(line):
                raise NvidiaSmiError(line)
            raise ValueError(f"row {number + 1} has {len(row)} values for {len(columns)} columns: {line!r}")
        values = dict(zip(columns, (value.strip() for value in row), strict=True))
        index = values.get("index")
        records.append(
            GpuRecord(
                index=int(index) if index is not None else number,
                name=values["name"],
                uuid=_value(values.get("uuid")),
                driver_version=_value(values.get("driver_version")),
                pci_bus_id=_value(values.get("pci.bus_id")),
                memory_total_mib=_mib(values.get("memory.total")),
                mig_mode_current=_mig_mode(values.get("mig.mode.current")),
                mig_mode_pending=_mig_mode(values.get("mig.mode.pending")),
                extra={k: _value(v) for k, v in values.items() if k not in _TYPED_FIELDS},
            )
        )
    return records


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmiNode:
    """One line of ``nvidia-smi -q``: ``key : value``, or a section heading with children.

    Keys can repeat under one parent (``Processes`` lists one block per process), so children
    stay a sequence rather than a dict.
    """

    key: str
    value: str | None = None
    children: tuple[SmiNode, ...] = ()

    def find(self, *path: str) -> SmiNode | None:
        """The first descendant along ``path`` (keys compared exactly), or None."""
        node: SmiNode | None = self
        for key in path:
            if node is None:
                return None
            node = next((child for child in node.children if child.key == key), None)
        return node

    def get(self, *path: str) -> str | None:
        """The value along ``path``, None when missing or not available (N/A...)."""
        node = self.find(*path)
        return None if node is None else _value(node.value)


# "Key    : value". The key must be followed by spaces before the colon, so a heading such as
# "GPU 00000000:00:06.0" (colons without a space before them) stays a heading.
_Q_KEY_VALUE = re.compile(r"^(?P<key>\S(?:.*?\S)?)\s+:(?:\s(?P<value>.*))?$")


@dataclass
class _Building:
    key: str
    value: str | None
    children: list[_Building] = field(default_factory=list)

    def freeze(self) -> SmiNode:
        return SmiNode(self.key, self.value, tuple(child.freeze() for child in self.children))


def parse_smi_q_tree(text: str) -> SmiNode:
    """``nvidia-smi -q`` as a tree (the root's key is empty), by indentation."""
    root = _Building("", None)
    stack: list[tuple[int, _Building]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("====="):
            continue
        indent = len(line) - len(stripped)
        match = _Q_KEY_VALUE.match(stripped)
        node = (
            _Building(match.group("key"), (match.group("value") or "").strip()) if match else _Building(stripped, None)
        )
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root.freeze()


@dataclass(frozen=True)
class SmiGpu:
    """The fields of one GPU in ``nvidia-smi -q`` that the platform uses."""

    pci_bus_id: str
    product_name: str
    product_architecture: str | None
    uuid: str | None
    vbios_version: str | None
    pci_device_id: str | None
    memory_total_mib: int | None
    mig_mode_current: MigMode | None
    mig_mode_pending: MigMode | None
    persistence_mode: str | None
    node: SmiNode
    """Everything nvidia-smi printed for this GPU, for fields not typed here."""

    def model_key(self) -> str:
        """The project's GPU model key; raises UnknownGpuProductError."""
        return gpu_model_key(self.product_name, self.memory_total_mib)


@dataclass(frozen=True)
class SmiReport:
    """``nvidia-smi -q``: the driver, the CUDA version it supports, and the GPUs."""

    driver_version: str
    cuda_version: str | None
    """The newest CUDA version this driver supports (the "CUDA Version" line), not an installed toolkit."""
    gpus: tuple[SmiGpu, ...]
    tree: SmiNode


_GPU_HEADING = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")


def parse_smi_q(text: str) -> SmiReport:
    """Parse ``nvidia-smi -q``. Raises NvidiaSmiError when the text is an error message, and
    ValueError when "Attached GPUs" disagrees with the GPU sections found (cut output)."""
    tree = parse_smi_q_tree(text)
    driver = tree.get("Driver Version")
    if driver is None:
        raise NvidiaSmiError(text.strip() or "nvidia-smi -q printed nothing")
    gpus = []
    for child in tree.children:
        heading = _GPU_HEADING.match(child.key)
        if heading is None:
            continue
        product = child.get("Product Name")
        if product is None:
            raise ValueError(f"GPU {heading.group(1)} has no 'Product Name'")
        gpus.append(
            SmiGpu(
                pci_bus_id=heading.group(1),
                product_name=product,
                product_architecture=child.get("Product Architecture"),
                uuid=child.get("GPU UUID"),
                vbios_version=child.get("VBIOS Version"),
                pci_device_id=child.get("PCI", "Device Id"),
                memory_total_mib=_mib(child.get("FB Memory Usage", "Total")),
                mig_mode_current=_mig_mode(child.get("MIG Mode", "Current")),
                mig_mode_pending=_mig_mode(child.get("MIG Mode", "Pending")),
                persistence_mode=child.get("Persistence Mode"),
                node=child,
            )
        )
    attached = tree.get("Attached GPUs")
    if attached is not None and int(attached) != len(gpus):
        raise ValueError(f"'Attached GPUs' says {attached} but the output has {len(gpus)} GPU sections")
    return SmiReport(driver_version=driver, cuda_version=tree.get("CUDA Version"), gpus=tuple(gpus), tree=tree)


@dataclass(frozen=True)
class SmiVersion:
    """``nvidia-smi --version``."""

    nvidia_smi: str | None
    nvml: str | None
    driver: str
    cuda: str | None


def parse_smi_version(text: str) -> SmiVersion:
    """Parse ``nvidia-smi --version`` (``DRIVER version : 580.159.04`` lines)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip().lower()] = value.strip()
    driver = values.get("driver version")
    if not driver:
        raise NvidiaSmiError(text.strip() or "nvidia-smi --version printed nothing")
    return SmiVersion(
        nvidia_smi=values.get("nvidia-smi version"),
        nvml=values.get("nvml version"),
        driver=driver,
        cuda=values.get("cuda version"),
    )


# ---------------------------------------------------------------------------------------------
# nvidia-smi mig -lgip / -lgipp
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One row pair of ``nvidia-smi mig -lgip``.

    ``memory_gib`` is the usable memory nvidia-smi reports, which is less than the profile name's
    "gb" (an H200 1g.18gb has 16.00 GiB). ``memory_slices`` and ``placements`` are filled in by
    ``with_placements`` from ``-lgipp``.
    """

    gpu_index: int
    name: str
    profile_id: int
    instances_free: int
    instances_total: int
    memory_gib: float
    p2p: bool | None
    sm_count: int
    decoders: int
    encoders: int
    copy_engines: int
    jpeg_decoders: int
    ofa_engines: int
    memory_slices: int | None = None
    placements: tuple[int, ...] | None = None
    """Start memory slices where an instance of this profile can be placed."""

    @property
    def compute_slices(self) -> int:
        """The "Ng" of the name: how many of the GPU's compute slices an instance takes."""
        return int(self.name.split("g.", 1)[0])

    @property
    def media_extensions(self) -> bool:
        """The "+me" profiles own the GPU's only JPEG/OFA engines (one instance at a time)."""
        return "+me" in self.name


_LGIP_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
    r"(?P<mem>\d+(?:\.\d+)?)\s+(?P<p2p>\S+)\s+(?P<sm>\d+)\s+(?P<dec>\d+)\s+(?P<enc>\d+)\s*\|$"
)
_LGIP_SECOND = re.compile(r"^\|\s+(?P<ce>\d+)\s+(?P<jpeg>\d+)\s+(?P<ofa>\d+)\s*\|$")
_NO_MIG = "No MIG-supported devices found"


def _p2p(text: str) -> bool | None:
    return {"Yes": True, "No": False}.get(text)


def parse_mig_lgip(text: str) -> list[GpuInstanceProfile]:
    """Parse ``nvidia-smi mig -lgip``; ``[]`` when the host has no MIG-capable GPU.

    Each profile takes two table rows (GPU, name, ID, free/total, GiB, P2P, SM, DEC, ENC, then
    CE, JPEG, OFA). Raises NvidiaSmiError for an error message, ValueError for a broken table.
    """
    if _NO_MIG in text:
        return []
    if "GPU instance profiles" not in text:
        raise NvidiaSmiError(text.strip() or "nvidia-smi mig -lgip printed nothing")
    profiles: list[GpuInstanceProfile] = []
    first: re.Match[str] | None = None
    for line in (raw.strip() for raw in text.splitlines()):
        row = _LGIP_ROW.match(line)
        if row:
            if first is not None:
                raise ValueError(f"profile {first.group('name')} has no second row")
            first = row
            continue
        second = _LGIP_SECOND.match(line)
        if second and first is not None:
            profiles.append(
                GpuInstanceProfile(
                    gpu_index=int(first.group("gpu")),
                    name=first.group("name"),
                    profile_id=int(first.group("id")),
                    instances_free=int(first.group("free")),
                    instances_total=int(first.group("total")),
                    memory_gib=float(first.group("mem")),
                    p2p=_p2p(first.group("p2p")),
                    sm_count=int(first.group("sm")),
                    decoders=int(first.group("dec")),
                    encoders=int(first.group("enc")),
                    copy_engines=int(second.group("ce")),
                    jpeg_decoders=int(second.group("jpeg")),
                    ofa_engines=int(second.group("ofa")),
                )
            )
            first = None
    if first is not None:
        raise ValueError(f"profile {first.group('name')} has no second row")
    if not profiles:
        raise ValueError("no profile rows in nvidia-smi mig -lgip output")
    return profiles


@dataclass(frozen=True)
class ProfilePlacements:
    """One line of ``nvidia-smi mig -lgipp``: ``GPU 0 Profile ID 15 Placements: {0,2,4,6}:2``.

    ``starts`` are the first memory slices an instance can occupy, ``memory_slices`` how many it
    takes from there.
    """

    gpu_index: int
    profile_id: int
    starts: tuple[int, ...]
    memory_slices: int


_LGIPP_ROW = re.compile(
    r"^GPU\s+(?P<gpu>\d+)\s+Profile ID\s+(?P<id>\d+)\s+Placements?\s*:\s*\{(?P<starts>[\d,\s]*)\}:(?P<size>\d+)$"
)


def parse_mig_lgipp(text: str) -> list[ProfilePlacements]:
    """Parse ``nvidia-smi mig -lgipp``; ``[]`` when the host has no MIG-capable GPU."""
    if _NO_MIG in text:
        return []
    placements: list[ProfilePlacements] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _LGIPP_ROW.match(line)
        if match is None:
            if _looks_like_error(line) or not placements:
                raise NvidiaSmiError(line)
            raise ValueError(f"unexpected line in nvidia-smi mig -lgipp output: {line!r}")
        starts = tuple(int(s) for s in match.group("starts").replace(" ", "").split(",") if s)
        placements.append(
            ProfilePlacements(
                gpu_index=int(match.group("gpu")),
                profile_id=int(match.group("id")),
                starts=starts,
                memory_slices=int(match.group("size")),
            )
        )
    if not placements:
        raise NvidiaSmiError("nvidia-smi mig -lgipp printed nothing")
    return placements


def with_placements(
    profiles: Iterable[GpuInstanceProfile], placements: Iterable[ProfilePlacements]
) -> list[GpuInstanceProfile]:
    """The profiles with ``memory_slices`` and ``placements`` from ``-lgipp`` filled in.

    Raises ValueError when a profile has no placement line (outputs from different GPUs or
    drivers mixed up).
    """
    by_key = {(p.gpu_index, p.profile_id): p for p in placements}
    joined = []
    for profile in profiles:
        placement = by_key.get((profile.gpu_index, profile.profile_id))
        if placement is None:
            raise ValueError(
                f"GPU {profile.gpu_index} profile {profile.name} (ID {profile.profile_id}) has no -lgipp placement"
            )
        joined.append(replace(profile, memory_slices=placement.memory_slices, placements=placement.starts))
    return joined


def profiles_by_name(profiles: Iterable[GpuInstanceProfile], gpu_index: int = 0) -> dict[str, GpuInstanceProfile]:
    """The profiles of one GPU by name (``"1g.18gb"``)."""
    return {p.name: p for p in profiles if p.gpu_index == gpu_index}
