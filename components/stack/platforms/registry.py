"""The platforms by name: the one place that knows which platforms exist.

``cluster.kind`` names the stack's platform; everything in the stack package reaches the platform through
``platform_of``. Adding a platform is a module in this package and one entry here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.stack.platforms.bare_metal import BareMetalPlatform
from components.stack.platforms.base import GpuPlatform
from components.stack.platforms.existing import ExistingPlatform
from components.stack.platforms.yandex import YandexPlatform

if TYPE_CHECKING:
    from components.stack.config import StackConfig

PLATFORMS: dict[str, GpuPlatform] = {
    platform.kind: platform for platform in (YandexPlatform(), BareMetalPlatform(), ExistingPlatform())
}


def platform_of(stack: StackConfig) -> GpuPlatform:
    """The platform ``cluster.kind`` names (the cluster model accepts only the kinds registered here)."""
    return PLATFORMS[stack.cluster.kind]


def section_owners() -> dict[str, GpuPlatform]:
    """Each platform-specific config key (camelCase) -> the platform that reads it."""
    return {section: platform for platform in PLATFORMS.values() for section in platform.sections}
