"""One budget per pool: the node agent's and the GPU Operator's upgrade controller's limits, checked together.

Why its own rule: both controllers count every cordoned and NotReady node of a pool (the agent: its own, the
operator's and people's, ``docs/node-agent.md`` "The maintenance budget"; the operator: k8s-operator-libs
``GetCurrentUnavailableNodes`` / ``GetUpgradesAvailable``), and each admits a node only while that total is below
its own limit. Together they take a pool as far down as the larger limit, so the operator's must not exceed the
agent's on a pool the agent maintains. A refusal here names the operator's key the user wrote (or inherits).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from components.base.problems import Problem, join_path
from components.catalog.nvidia_driver import max_unavailable_nodes, resource_name
from components.catalog.pools import GpuPool
from components.gpu_operator.drivers import DriverPlan, PoolDriverRequest
from components.node_agent.desired import pool_budgets
from components.stack.config import StackConfig
from components.stack.platforms.registry import platform_of


def shared_budget_problems(
    stack: StackConfig,
    agent_pools: tuple[GpuPool, ...],
    driver: DriverPlan,
    requests: Mapping[str, PoolDriverRequest],
) -> Iterator[Problem]:
    """A pool the node agent maintains must not be one the operator's upgrade controller may take further down.

    Both controllers count every cordoned and NotReady node of the pool, the other's included, and each admits a
    node only while the total is below its own limit (the agent: ``nodeAgent.maxUnavailable`` of the pool; the
    operator: k8s-operator-libs ``GetUpgradesAvailable`` with its ``maxUnavailable`` scaled over the nodes of its
    budget, percentages rounded up). Together they go as far as the larger limit, so the operator's, resolved
    for its budget, must not let more of the pool's nodes go than the agent's budget does. Nothing to check where
    the hosts own the driver (no driver groups: ``driver.enabled=false``) or the group's upgrade controller is off.
    """
    keys = platform_of(stack).budget_keys(stack)
    members: dict[str, list[GpuPool]] = {}
    for pool in agent_pools:
        members.setdefault(keys.get(pool.name, pool.name), []).append(pool)
    budgets = pool_budgets(stack.node_agent, agent_pools, keys)
    agent_value = stack.node_agent.max_unavailable
    per_pool = driver.per_pool
    for name, pools in members.items():
        size, allowed = sum(pool.max_nodes for pool in pools), budgets[name]
        reason = _agent_reason(pools)
        for group in driver.groups:
            policy = group.driver.upgrade_policy
            mine = [p for p in group.pools if any(pool.name == p.pool for pool in pools)]
            if not mine or not policy.auto_upgrade:
                continue
            limit = max_unavailable_nodes(policy.max_unavailable, group.nodes)
            held = sum(pool.max_nodes for pool in pools if any(pool.name == p.pool for p in mine))
            lose = min(limit, held)
            if lose <= allowed:
                continue
            budget = f"NVIDIADriver {resource_name(group.name)}" if per_pool else "the ClusterPolicy's driver"
            percent = math.floor(100 * allowed / group.nodes)
            spelled = f" (or {percent}% of those {group.nodes})" if 1 <= percent < 100 else ""
            stack_written = "max_unavailable" in stack.gpu_operator.driver.upgrade_policy.model_fields_set
            for key in dict.fromkeys(_operator_limit_key(p.pool, requests) for p in mine):
                default = "" if key != _STACK_LIMIT_KEY or stack_written else " (the default)"
                yield Problem(
                    key,
                    f"{policy.max_unavailable!r}{default} lets the GPU Operator's upgrade controller have {limit} of "
                    f"the {group.nodes} nodes of {budget} (pools {', '.join(p.pool for p in group.pools)}) "
                    f"unavailable at once, but pool {name} is also maintained by the node agent ({reason}), whose "
                    f"nodeAgent.maxUnavailable {agent_value!r} allows {allowed} of its {size} nodes: the operator "
                    "counts the agent's nodes but stops only at its own limit, so pool "
                    f"{name} could lose {lose} nodes at once while nodeAgent.maxUnavailable allows {allowed}; set "
                    f"{key} to at most {allowed}{spelled}, or raise nodeAgent.maxUnavailable to {lose}",
                )


_STACK_LIMIT_KEY = join_path("gpuOperator", "driver", "upgradePolicy", "maxUnavailable")


def _operator_limit_key(pool: str, requests: Mapping[str, PoolDriverRequest]) -> str:
    """The key that set ``pool``'s upgrade ``maxUnavailable``: the pool's own policy's when it writes one, else
    the stack-wide one it inherits (a pool policy that sets other keys only still inherits this one)."""
    request = requests.get(pool)
    own = request.config.upgrade_policy if request is not None and request.config is not None else None
    if request is not None and own is not None and "max_unavailable" in own.model_fields_set:
        return join_path(request.path, "upgradePolicy", "maxUnavailable")
    return _STACK_LIMIT_KEY


def _agent_reason(pools: list[GpuPool]) -> str:
    """Why the node agent acts on ``pools`` (one agent pool): the hand-over, and MIG layouts through the agent."""
    handed_over = [join_path(pool.config_path, "hostDriverRemoval") for pool in pools if pool.host_driver_removal]
    mig = [pool.config_path for pool in pools if not pool.host_driver_removal]
    reasons = [f"{', '.join(handed_over)}: true"] if handed_over else []
    if mig:
        reasons.append(f"nodeAgent.migLayout: true re-partitions {', '.join(mig)}")
    return "; ".join(reasons)
