"""The MIG catalog owns the facts and pure rules of MIG: per GPU model (keyed by the GPU table,
``components/catalog/gpus.py``) its profiles and placements, NVIDIA's named configs, the mig-parted
config shape, and the planners that pack a demand onto GPUs (through the one solver call, ``milp.py``).

Pure Python (no Pulumi, no I/O at import): the config model, the components, the policies and the
command line (``tools/mig.py``) all ask these functions, so a layout that one accepts the others
accept too. Renderers of stack config and command lines live outside (``components/mig``, ``tools``).
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
from components.catalog.mig.milp import SOLVER
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
