"""The stack's GPU pools, built once from the config by its platform (``components.stack.platforms``).

Capabilities never see ``StackConfig``: they receive these pools (``components.catalog.pools``) and their own
section. This is also where each pool's MIG request and driver request are paired with the pool.
"""

from __future__ import annotations

from components.catalog.pools import GpuPool
from components.gpu_operator.drivers import PoolDriverRequest
from components.mig.decisions import MigRequest
from components.stack.config import StackConfig
from components.stack.platforms.registry import platform_of


def gpu_pools(stack: StackConfig) -> tuple[GpuPool, ...]:
    """Every GPU pool of the stack, in a stable order."""
    return platform_of(stack).pools(stack)


def mig_requests(stack: StackConfig) -> dict[str, MigRequest]:
    """Pool name -> what its config asks of MIG (the ``mig`` key, its path, whether the platform offers MIG)."""
    return platform_of(stack).mig_requests(stack)


def driver_requests(stack: StackConfig) -> dict[str, PoolDriverRequest]:
    """Pool name -> its own driver settings (its ``driver`` key)."""
    return platform_of(stack).driver_requests(stack)
