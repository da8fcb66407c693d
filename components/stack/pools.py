"""The stack's GPU pools, built once from the config: Yandex GPU node groups and bare-metal nodes.

Capabilities never see ``StackConfig``: they receive these pools (``components.catalog.pools``)
and their own section. This is also where each pool's MIG request is paired with the pool.
"""

from __future__ import annotations

from components.base.problems import join_path
from components.catalog.drivers import PREINSTALLED_ENVIRONMENT
from components.catalog.gpus import gpu_model
from components.catalog.kubernetes import parse_taint
from components.catalog.pools import GpuPool
from components.gpu_operator.drivers import PoolDriverRequest, driverless_hosts
from components.mig.decisions import MigRequest
from components.stack.config import StackConfig
from components.yandex.naming import replacement_key


def gpu_pools(stack: StackConfig) -> tuple[GpuPool, ...]:
    """Every GPU pool of the stack, in a stable order (node groups by name, then bare-metal nodes)."""
    pools = [
        GpuPool(
            name=name,
            config_path=join_path("nodeGroups", name),
            model=group.model,
            gpus_per_node=group.resources.gpus,
            max_nodes=group.scale.max_nodes,
            taints=tuple(group.parsed_taints),
            preinstalled_driver=group.gpu_environment == PREINSTALLED_ENVIRONMENT,
            host_driver_removal=group.host_driver_removal,
            labels=dict(group.labels),
            revision=replacement_key(group),
        )
        for name, group in sorted(stack.gpu_node_groups.items())
    ]
    if stack.bare_metal is not None:
        driverless = driverless_hosts(stack.gpu_operator, bare_metal=True)
        pools.extend(
            GpuPool(
                name=node.name,
                config_path=join_path("bareMetal", "nodes", index),
                model=gpu_model(node.gpu_model),
                gpus_per_node=node.gpus,
                max_nodes=1,
                taints=tuple(parse_taint(text) for text in node.taints),
                preinstalled_driver=not driverless,
                labels=dict(node.labels),
                bare_metal=True,
            )
            for index, node in enumerate(stack.bare_metal.nodes)
        )
    return tuple(pools)


def mig_requests(stack: StackConfig) -> dict[str, MigRequest]:
    """Pool name -> what its config asks of MIG (the ``mig`` key, its path, whether the platform offers MIG)."""
    requests: dict[str, MigRequest] = {}
    for name, group in stack.node_groups.items():
        requests[name] = MigRequest(join_path("nodeGroups", name, "mig"), group.mig, group.platform_facts.mig_supported)
    if stack.bare_metal is not None:
        for index, node in enumerate(stack.bare_metal.nodes):
            requests[node.name] = MigRequest(join_path("bareMetal", "nodes", index, "mig"), node.mig, True)
    return requests


def driver_requests(stack: StackConfig) -> dict[str, PoolDriverRequest]:
    """Pool name -> its own driver settings (the ``driver`` key of a node group, after nodeGroupDefaults,
    or of a bare-metal node)."""
    requests = {
        name: PoolDriverRequest(join_path("nodeGroups", name, "driver"), group.driver)
        for name, group in stack.gpu_node_groups.items()
    }
    if stack.bare_metal is not None:
        for index, node in enumerate(stack.bare_metal.nodes):
            requests[node.name] = PoolDriverRequest(join_path("bareMetal", "nodes", index, "driver"), node.driver)
    return requests
