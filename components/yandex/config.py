"""Config model of one Yandex GPU node group (``nodeGroups.<name>`` in the stack file).

Field names follow the Yandex node-group resource, in camelCase. Every check here needs no cloud:
the platform's allowed shapes and zones come from the catalog, taints are ``key=value:Effect`` or
``key:Effect`` (sent to Yandex as ``key=:Effect``, the only form its API takes) and a GPU group must carry a NoSchedule taint so that non-GPU pods
cannot take the expensive nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import Field, create_model, field_validator, model_validator

from components.base.config_model import ConfigModel, checked_taints, label_problems
from components.base.merge import deep_merge
from components.base.problems import Problem, join_path
from components.catalog.drivers import PREINSTALLED_ENVIRONMENT
from components.catalog.gpus import GPU_MODELS, GpuModel, gpu_model, gpu_model_problem
from components.catalog.kubernetes import (
    MAX_CLUSTER_NODES,
    Taint,
    canonical_taint_text,
    parse_taint,
)
from components.catalog.node_agent import GPU_DEPLOY_DRIVER_LABEL
from components.catalog.yandex import (
    NODE_GROUP_MAX_MINOR_SKEW,
    YANDEX_GPU_PLATFORMS,
    YandexGpuPlatform,
    deploy_policy_problem,
    disk_size_problem,
    yandex_id_problem,
)
from components.gpu_operator.pool_config import PoolDriverConfig
from components.mig.config import MigConfig

GpuEnvironment = Literal["runc", "runc_drivers_cuda"]
DiskType = Literal["network-hdd", "network-ssd", "network-ssd-nonreplicated", "network-ssd-io-m3"]
WeekDay = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d\Z")
_DURATION = re.compile(r"(\d+h(\d+m)?|\d+m)\Z")
#: Yandex's node-group maintenance window duration: 1h to 24h (Managed Service for Kubernetes API,
#: MaintenanceWindow.duration).
MIN_WINDOW_MINUTES, MAX_WINDOW_MINUTES = 60, 24 * 60
_NAME = re.compile(r"[a-z]([-a-z0-9]{0,30}[a-z0-9])?\Z")


class Resources(ConfigModel):
    """VM shape: GPUs, vCPU cores, memory in GB and the guaranteed vCPU share."""

    gpus: int = Field(ge=0)
    cores: int = Field(gt=0)
    memory: int = Field(gt=0, description="GB")
    core_fraction: Literal[5, 20, 50, 100] = 100


class BootDisk(ConfigModel):
    """Node boot disk; GPU images are large, so at least 64 GB."""

    type: DiskType = "network-ssd"
    size: int = Field(default=96, ge=64, le=4096, description="GB")


class AutoScale(ConfigModel):
    """Cluster-autoscaler bounds; an autoscaled Yandex group lives in exactly one zone."""

    min: int = Field(ge=0)
    max: int = Field(gt=0, le=MAX_CLUSTER_NODES, description="at most 5,000 (the largest cluster Kubernetes supports)")
    initial: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> AutoScale:
        if not self.min <= self.initial <= self.max:
            raise ValueError(f"need min <= initial <= max; got min={self.min}, initial={self.initial}, max={self.max}")
        return self


class FixedScale(ConfigModel):
    """A fixed number of nodes."""

    size: int = Field(gt=0, le=MAX_CLUSTER_NODES)


class Scale(ConfigModel):
    """Exactly one of ``auto`` or ``fixed``."""

    auto: AutoScale | None = None
    fixed: FixedScale | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Scale:
        if (self.auto is None) == (self.fixed is None):
            raise ValueError("set exactly one of auto (min/max/initial) or fixed (size)")
        return self

    @property
    def max_nodes(self) -> int:
        """The most nodes the group can have (quota is counted against this)."""
        return self.auto.max if self.auto else self.fixed.size if self.fixed else 0


class Location(ConfigModel):
    """The one zone and subnet of the group."""

    zone: str
    subnet_id: str = Field(min_length=1)


class MaintenanceWindow(ConfigModel):
    """A weekly (or daily, without ``day``) maintenance window."""

    day: WeekDay | None = None
    start_time: str
    duration: str

    @field_validator("start_time")
    @classmethod
    def _start_time(cls, value: str) -> str:
        if not _TIME.match(value):
            raise ValueError(f"startTime {value!r} must be HH:MM (UTC)")
        return value

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not _DURATION.match(value):
            raise ValueError(f"duration {value!r} must look like 3h, 90m or 1h30m")
        if not MIN_WINDOW_MINUTES <= _minutes(value) <= MAX_WINDOW_MINUTES:
            raise ValueError(f"duration {value!r} must be from 1h to 24h (Yandex maintenance windows)")
        return value

    @property
    def minutes(self) -> int:
        """The duration in minutes."""
        return _minutes(self.duration)


def _minutes(duration: str) -> int:
    """``3h`` -> 180, ``90m`` -> 90, ``1h30m`` -> 90 (a duration ``_DURATION`` matched)."""
    hours, _, rest = duration.partition("h")
    if not rest and not duration.endswith("h"):
        return int(hours.removesuffix("m"))
    return int(hours) * 60 + int(rest.removesuffix("m") or 0)


class Maintenance(ConfigModel):
    """Node maintenance.

    GPU groups default to ``autoUpgrade: false``: an upgrade brings a new node image (and, with
    ``runc_drivers_cuda``, a new driver) on the cloud's schedule instead of ours.
    """

    auto_upgrade: bool = False
    auto_repair: bool = True
    windows: list[MaintenanceWindow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_window_a_day(self) -> Maintenance:
        days = [window.day or "daily" for window in self.windows]
        if "daily" in days and len(days) > 1:
            raise ValueError("a daily window (no day) cannot be combined with other windows")
        repeated = sorted({day for day in days if days.count(day) > 1})
        if repeated:
            raise ValueError(f"one window per day; {', '.join(repeated)} has more than one")
        return self


class DeployPolicy(ConfigModel):
    """How many nodes may be added or taken away at once during an update."""

    max_expansion: int = Field(default=1, ge=0)
    max_unavailable: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _progress(self) -> DeployPolicy:
        if self.max_expansion == 0 and self.max_unavailable == 0:
            raise ValueError("maxExpansion and maxUnavailable cannot both be 0: an update could never progress")
        return self


class NodeGroupConfig(ConfigModel):
    """One Yandex Managed Kubernetes GPU node group."""

    platform: str
    gpu_model: str | None = Field(
        default=None,
        description="GPU model key; required only on platforms whose chip Yandex does not name",
    )
    resources: Resources
    boot_disk: BootDisk = BootDisk()
    gpu_environment: GpuEnvironment
    preemptible: bool = False
    scale: Scale
    location: Location
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[str] = Field(default_factory=list)
    maintenance: Maintenance = Maintenance()
    deploy: DeployPolicy = DeployPolicy()
    kubernetes_version: str | None = Field(
        default=None, description="MAJOR.MINOR; at most 2 minors behind cluster.kubernetesVersion (Yandex), never ahead"
    )
    security_group_ids: list[str] = Field(default_factory=list)
    nat: bool = False
    mig: MigConfig | None = None
    driver: PoolDriverConfig | None = Field(
        default=None, description="this group's own driver; unset keys come from gpuOperator.driver"
    )
    host_driver_removal: bool = Field(
        default=False,
        description="hand nodes with a preinstalled driver over to the GPU Operator (runc_drivers_cuda only)",
    )

    @field_validator("taints")
    @classmethod
    def _taints_in_the_form_yandex_takes(cls, taints: list[str]) -> list[str]:
        """``key:Effect`` (kubectl's form) is kept as ``key=:Effect``: Yandex's API takes only that form."""
        return [canonical_taint_text(text) for text in taints]

    @property
    def platform_facts(self) -> YandexGpuPlatform:
        """The catalog entry of the platform (only valid after ``problems`` found none)."""
        return YANDEX_GPU_PLATFORMS[self.platform]

    @property
    def model(self) -> GpuModel:
        """The GPU model the group's nodes carry."""
        return gpu_model(self.gpu_model or self.platform_facts.gpu_model or "")

    @property
    def parsed_taints(self) -> list[Taint]:
        """Taints as objects (only valid after ``problems`` found none)."""
        return [parse_taint(text) for text in self.taints]

    def problems(self, path: str) -> Iterator[Problem]:
        """Everything wrong with this group that the catalog can tell without a cloud."""
        platform = YANDEX_GPU_PLATFORMS.get(self.platform)
        if platform is None:
            allowed = ", ".join(YANDEX_GPU_PLATFORMS)
            message = f"{self.platform!r} is not a Yandex GPU platform; allowed: {allowed}"
            yield Problem(join_path(path, "platform"), message)
        else:
            yield from self._shape_problems(path, platform)
            yield from self._model_problems(path, platform)
            if self.location.zone not in platform.zones:
                yield Problem(
                    join_path(path, "location", "zone"),
                    f"{self.location.zone} has no {self.platform} capacity; allowed: {', '.join(platform.zones)}",
                )
        if self.kubernetes_version is not None and not re.match(r"^1\.\d+$", self.kubernetes_version):
            yield Problem(
                join_path(path, "kubernetesVersion"), f"{self.kubernetes_version!r} must be MAJOR.MINOR, e.g. 1.30"
            )
        yield from self._taint_problems(path)
        yield from label_problems(self.labels, join_path(path, "labels"))
        yield from self._cloud_value_problems(path)
        if self.gpu_environment == "runc" and self.labels.get(GPU_DEPLOY_DRIVER_LABEL) == "false":
            yield Problem(
                join_path(path, "labels", GPU_DEPLOY_DRIVER_LABEL),
                "'false' on a runc (driverless) group makes the GPU Operator skip its driver there, and the image "
                "has none: the nodes would have no driver at all; remove the label",
            )
        if self.driver is not None:
            yield from self.driver.problems(join_path(path, "driver"))
        if self.host_driver_removal and self.gpu_environment == "runc":
            yield Problem(
                join_path(path, "hostDriverRemoval"),
                "true is only for runc_drivers_cuda groups; a runc group has no preinstalled driver to remove",
            )
        if self.maintenance.auto_upgrade and self.gpu_environment == PREINSTALLED_ENVIRONMENT:
            yield Problem(
                join_path(path, "maintenance", "autoUpgrade"),
                "true would let the cloud replace the preinstalled driver on its own schedule; "
                "set false and upgrade by changing the stack",
            )

    def _cloud_value_problems(self, path: str) -> Iterator[Problem]:
        """Ids, deploy policy and disk size by the Yandex API's rules (``components.catalog.yandex``)."""
        found = [
            (join_path(path, "location", "subnetId"), yandex_id_problem(self.location.subnet_id)),
            *(
                (join_path(path, "securityGroupIds", index), yandex_id_problem(group_id))
                for index, group_id in enumerate(self.security_group_ids)
            ),
            (join_path(path, "deploy", "maxExpansion"), deploy_policy_problem(self.deploy.max_expansion)),
            (join_path(path, "deploy", "maxUnavailable"), deploy_policy_problem(self.deploy.max_unavailable)),
        ]
        disk = disk_size_problem(self.boot_disk.type, self.boot_disk.size)
        if disk and "size" not in self.boot_disk.model_fields_set:  # the model's default size: the type is written
            disk = f"{disk}; the default size is {self.boot_disk.size} GB: set bootDisk.size to a multiple"
            found.append((join_path(path, "bootDisk", "type"), disk))
        else:
            found.append((join_path(path, "bootDisk", "size"), disk))
        yield from (Problem(key, problem) for key, problem in found if problem)

    def version_skew_problems(self, cluster_version: str, path: str) -> Iterator[Problem]:
        """The group's nodes may lag the cluster by ``NODE_GROUP_MAX_MINOR_SKEW`` minors and never run ahead.

        Yandex's own limit (two minors, ``catalog.yandex``), not upstream Kubernetes' three: the managed
        service refuses a wider skew, hours into a ``pulumi up``. ``path`` is the ``kubernetesVersion`` key.
        """
        if self.kubernetes_version is None:
            return
        group_minor, cluster_minor = _minor(self.kubernetes_version), _minor(cluster_version)
        if group_minor is None or cluster_minor is None:
            return  # a malformed version is reported by the section's own check
        if group_minor > cluster_minor:
            yield Problem(
                path, f"{self.kubernetes_version} is newer than the cluster's {cluster_version}; nodes never run ahead"
            )
        elif cluster_minor - group_minor > NODE_GROUP_MAX_MINOR_SKEW:
            oldest = f"1.{cluster_minor - NODE_GROUP_MAX_MINOR_SKEW}"
            yield Problem(
                path,
                f"{self.kubernetes_version} is more than {NODE_GROUP_MAX_MINOR_SKEW} minor versions behind the "
                f"cluster's {cluster_version}; allowed: {oldest} to {cluster_version} "
                "(Yandex Managed Kubernetes: a node group lags its cluster by at most two minor versions)",
            )

    def _shape_problems(self, path: str, platform: YandexGpuPlatform) -> Iterator[Problem]:
        res = self.resources
        if res.gpus not in platform.allowed_gpus:
            allowed = ", ".join(str(g) for g in platform.allowed_gpus)
            message = f"{res.gpus} is not offered on {self.platform}; allowed: {allowed}"
            yield Problem(join_path(path, "resources", "gpus"), message)
            return
        shapes = platform.shapes_for(res.gpus)
        if not any(s.cores == res.cores and s.memory_gb == res.memory for s in shapes):
            allowed = "; ".join(f"cores {s.cores}, memory {s.memory_gb}" for s in shapes)
            yield Problem(
                join_path(path, "resources"),
                f"cores {res.cores}, memory {res.memory} is not a {self.platform} shape with {res.gpus} GPU(s); "
                f"allowed: {allowed}",
            )
        if res.core_fraction != 100:
            yield Problem(join_path(path, "resources", "coreFraction"), "GPU platforms only offer 100")

    def _model_problems(self, path: str, platform: YandexGpuPlatform) -> Iterator[Problem]:
        key = join_path(path, "gpuModel")
        if self.gpu_model is None:
            if platform.gpu_model is None:
                yield Problem(
                    key,
                    f"is required on {self.platform}: Yandex does not name its chip ({platform.description}); "
                    f"allowed: {', '.join(GPU_MODELS)}",
                )
        elif unknown := gpu_model_problem(self.gpu_model):
            yield Problem(key, unknown)
        elif platform.gpu_model is not None and self.gpu_model != platform.gpu_model:
            yield Problem(key, f"{self.platform} carries {platform.gpu_model}, not {self.gpu_model}")

    def _taint_problems(self, path: str) -> Iterator[Problem]:
        checked = checked_taints(self.taints, join_path(path, "taints"))
        yield from checked.problems
        if self.resources.gpus > 0 and checked.untainted:
            yield Problem(join_path(path, "taints"), f"a GPU node group {checked.untainted}")


def node_group_name_problem(name: str) -> str | None:
    """Group names become parts of cloud and Kubernetes names: short lowercase DNS labels."""
    if not _NAME.match(name):
        return f"node group name {name!r} must be 1-32 lowercase letters, digits or '-', starting with a letter"
    return None


def _defaults_model() -> type[ConfigModel]:
    """Every key of a node group, all optional: what ``nodeGroupDefaults`` accepts (derived, never restated)."""
    fields: dict[str, Any] = {
        name: (Optional[field.annotation], Field(default=None, description=field.description))  # noqa: UP045
        for name, field in NodeGroupConfig.model_fields.items()
    }
    return create_model(
        "NodeGroupDefaults",
        __base__=ConfigModel,
        __doc__="Keys every node group inherits; a group's own value wins (maps merge key by key, lists replace).",
        **fields,
    )


if TYPE_CHECKING:
    NodeGroupDefaults = ConfigModel
else:
    NodeGroupDefaults = _defaults_model()


def with_defaults(defaults: Mapping[str, Any], groups: Mapping[str, Any]) -> dict[str, Any]:
    """Raw ``nodeGroups`` with ``nodeGroupDefaults`` laid under each group (before validation)."""
    return {
        name: deep_merge(defaults, group) if isinstance(group, Mapping) else group for name, group in groups.items()
    }


def _minor(version: str) -> int | None:
    major, _, minor = version.partition(".")
    return int(minor) if major == "1" and minor.isdigit() else None
