"""Config models of MIG partitioning.

Per pool (``nodeGroups.<name>.mig`` on Yandex, ``bareMetal.nodes[i].mig`` on bare metal) exactly one of:
- ``layout``: a configuration NVIDIA names (``all-1g.10gb``, ``all-balanced``, ``all-disabled`` ...);
- ``custom``: profile -> count on every GPU of the node;
- ``perGpu``: a list of ``{devices: [0, 1], layout: {profile: count}}`` for nodes whose GPUs differ;
- ``fromDemand: true``: the program computes the pool's layouts from ``mig.demand`` (layouts from demand).

Stack-wide (``mig``): the strategy (``auto`` derives single/mixed), ``withReboot`` for clouds where
toggling MIG mode needs a reboot, an optional ``demand`` (in the explicit mode checked against the
layouts configured; in the layouts-from-demand mode, what the program partitions for), and
``fromDemand: true`` to plan every MIG-capable pool of a demanded model that sets no ``mig`` of its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from components.base.config_model import ConfigModel
from components.catalog.kubernetes import dns_subdomain_problem
from components.catalog.mig.parted import all_zero_counts_problem


def _counts_mig_parted_takes(layout: dict[str, int] | None) -> dict[str, int] | None:
    problem = all_zero_counts_problem(layout) if layout is not None else None
    if problem:
        raise ValueError(problem)
    return layout


class GpuLayout(ConfigModel):
    """The layout of some GPUs of a node, by index."""

    devices: list[int] = Field(min_length=1)
    layout: dict[str, int]

    _layout_counts = field_validator("layout")(_counts_mig_parted_takes)


class MigConfig(ConfigModel):
    """How the GPUs of one pool are partitioned."""

    layout: str | None = None
    custom: dict[str, int] | None = None
    per_gpu: list[GpuLayout] | None = None
    from_demand: Literal[True] | None = Field(
        default=None, description="true: the program computes this pool's layouts from mig.demand"
    )

    _custom_counts = field_validator("custom")(_counts_mig_parted_takes)

    @model_validator(mode="after")
    def _exactly_one(self) -> MigConfig:
        given = [
            key
            for key, value in (
                ("layout", self.layout),
                ("custom", self.custom),
                ("perGpu", self.per_gpu),
                ("fromDemand", self.from_demand),
            )
            if value is not None
        ]
        if len(given) != 1:
            raise ValueError(
                f"set exactly one of layout, custom, perGpu or fromDemand (got {', '.join(given) or 'none'})"
            )
        return self


class MigDemand(ConfigModel):
    """MIG slices the workloads need, checked by the planner against the fleet's GPUs of one model."""

    gpu_model: str
    profiles: dict[str, int] = Field(min_length=1)


class MigSettings(ConfigModel):
    """Stack-wide MIG settings."""

    strategy: Literal["auto", "single", "mixed"] = "auto"
    with_reboot: bool = Field(default=False, description="migManager.env WITH_REBOOT (needed on some clouds/VMs)")
    config_map_name: str = "gpu-platform-mig-config"

    @field_validator("config_map_name")
    @classmethod
    def _config_map_name_is_an_object_name(cls, value: str) -> str:
        problem = dns_subdomain_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    demand: list[MigDemand] = Field(default_factory=list)
    from_demand: bool = Field(
        default=False,
        description="plan every MIG-capable pool of a model in demand that sets no mig key from mig.demand",
    )

    @model_validator(mode="after")
    def _one_demand_per_model(self) -> MigSettings:
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.demand):
            if entry.gpu_model in seen:
                raise ValueError(
                    f"demand[{index}].gpuModel {entry.gpu_model!r} is already demand[{seen[entry.gpu_model]}]: "
                    "give each GPU model one entry with all its profiles"
                )
            seen[entry.gpu_model] = index
        return self
