"""Exceptions of the MIG catalog.

All of them are ``ValueError`` subclasses: every one means "the caller asked for something the
hardware or NVIDIA's tooling cannot do", never an internal failure, so config validation (pydantic)
and the CLI can turn any of them into a one-line message without a traceback.
"""

from __future__ import annotations

from components.catalog.gpus import UnknownGpuModelError


class MigError(ValueError):
    """Base class: a MIG request that cannot be honoured. The message says why."""


class UnknownGpuModel(MigError, UnknownGpuModelError):
    """A GPU model key that the project does not know at all (a typo, usually).

    Also an ``UnknownGpuModelError`` so code that already catches the GPU catalog's error keeps working.
    """


class MigNotSupported(MigError):
    """A known GPU model that cannot do MIG (V100, T4: MIG needs compute capability >= 8.0)."""


class MigLayoutError(MigError):
    """A per-GPU layout (profile -> count) that no placement of GPU instances can realise."""


class UnknownMigProfile(MigLayoutError):
    """A profile name that this GPU model does not offer (e.g. ``1g.5gb`` on an H100-80GB)."""


class UnknownMigConfig(MigError):
    """A mig-parted config name that NVIDIA's default config does not define for this GPU model."""


class MigPartedError(MigError):
    """A mig-parted config or MIG strategy that cannot be rendered as asked."""


class MigPlanError(MigError):
    """A demand that cannot be planned: bad input, or more GPUs needed than the fleet has."""
