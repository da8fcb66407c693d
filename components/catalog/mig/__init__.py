"""MIG catalog: profiles per GPU model, placement, NVIDIA's named configs, mig-parted rendering, planning.

Pure Python (no Pulumi): the config model, the components, the policies and the CLI
(``python -m components.catalog.mig``) all ask these functions, so a layout that one accepts the
others accept too.
"""

from components.catalog.mig.errors import (
    MigError,
    MigLayoutError,
    MigNotSupported,
    MigPartedError,
    MigPlanError,
    UnknownGpuModel,
    UnknownMigConfig,
    UnknownMigProfile,
)
from components.catalog.mig.named_layouts import DEFAULT_CONFIGS, named_layout, named_layout_names
from components.catalog.mig.parted import (
    DeviceLayout,
    MigStrategy,
    advertised_resources,
    mig_resource_name,
    mig_strategy,
    render_parted_config,
)
from components.catalog.mig.placement import PlacedInstance, Placement, is_placeable, place, valid_layouts
from components.catalog.mig.planner import (
    SOLVER,
    CurrentGpu,
    MigPlan,
    count_text,
    lower_bound,
    maximal_layouts,
    plan,
    plan_fleet,
)
from components.catalog.mig.pool_planner import PoolLayouts, PoolShape, PoolsPlan, plan_pools
from components.catalog.mig.profiles import (
    FOUR_SLICE,
    MIG_GPUS,
    SEVEN_SLICE,
    Geometry,
    MigGpu,
    Profile,
    is_mig_capable,
    mig_gpu,
    mig_models,
    mig_profile,
    mig_profiles,
)

__all__ = [
    "DEFAULT_CONFIGS",
    "FOUR_SLICE",
    "MIG_GPUS",
    "SEVEN_SLICE",
    "SOLVER",
    "CurrentGpu",
    "DeviceLayout",
    "Geometry",
    "MigError",
    "MigGpu",
    "MigLayoutError",
    "MigNotSupported",
    "MigPartedError",
    "MigPlan",
    "MigPlanError",
    "MigStrategy",
    "PlacedInstance",
    "Placement",
    "PoolLayouts",
    "PoolShape",
    "PoolsPlan",
    "Profile",
    "UnknownGpuModel",
    "UnknownMigConfig",
    "UnknownMigProfile",
    "advertised_resources",
    "count_text",
    "is_mig_capable",
    "is_placeable",
    "lower_bound",
    "maximal_layouts",
    "mig_gpu",
    "mig_models",
    "mig_profile",
    "mig_profiles",
    "mig_resource_name",
    "mig_strategy",
    "named_layout",
    "named_layout_names",
    "place",
    "plan",
    "plan_fleet",
    "plan_pools",
    "render_parted_config",
    "valid_layouts",
]
