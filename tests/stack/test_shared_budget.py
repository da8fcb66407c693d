"""One pool, two maintainers, one budget: the GPU Operator's upgrade limit may not exceed the node agent's.

The node agent (hand-over pools, MIG pools with ``nodeAgent.migLayout``) and the operator's upgrade controller
each count every cordoned and NotReady node of the pool, the other's included, and each stops only at its own
limit (k8s-operator-libs ``GetUpgradesAvailable``: ``maxUnavailable`` scaled over the nodes of the driver's
budget, percentages rounded up; the agent: ``NodeAgentConfig.budget`` of the pool). A config where the
operator's limit lets more of an agent pool's nodes go than ``nodeAgent.maxUnavailable`` does is refused at the
operator's key, before anything is created.
"""

from __future__ import annotations

from typing import Any

import pytest

from preview.run.runner import run_program
from tests.helpers import as_overrides, delete_path, one_driver, plan_raw, refusal, set_path, stack_raw

STACK_LIMIT = "gpuOperator.driver.upgradePolicy.maxUnavailable"


def _dev_handover(max_nodes: int = 3) -> dict[str, Any]:
    """dev with the v100 group handed over to the operator's driver by the node agent (its own NVIDIADriver:
    a100 runs another driver), at most ``max_nodes`` nodes."""
    raw = set_path(stack_raw("dev"), "nodeGroups.v100.gpuEnvironment", "runc_drivers_cuda")
    raw = set_path(raw, "nodeGroups.v100.hostDriverRemoval", True)
    return set_path(raw, "nodeGroups.v100.scale.auto.max", max_nodes)


def _driverless_prod() -> dict[str, Any]:
    """prod on driverless hosts (the operator installs the driver) with MIG layouts through the node agent."""
    raw = delete_path(stack_raw("prod"), "gpuOperator.hostDriver")
    raw = set_path(raw, "gpuOperator.driver", {"owner": "operator", "version": "580.95.05"})
    raw = set_path(raw, "bareMetal.hostPreparation.configureContainerd", False)
    return set_path(raw, "nodeAgent.migLayout", True)


def test_an_operator_limit_above_the_agents_budget_is_refused_at_its_key_with_both_numbers_and_the_pool() -> None:
    # 25% of the 8 nodes of v100's NVIDIADriver is 2 (rounded up from 2.0); nodeAgent.maxUnavailable 1 is 1.
    (line,) = refusal(_dev_handover(max_nodes=8))
    assert line == (
        f"{STACK_LIMIT}: '25%' lets the GPU Operator's upgrade controller have 2 of the 8 nodes of NVIDIADriver "
        "gpu-platform-v100 (pools v100) unavailable at once, but pool v100 is also maintained by the node agent "
        "(nodeGroups.v100.hostDriverRemoval: true), whose nodeAgent.maxUnavailable 1 allows 1 of its 8 nodes: the "
        "operator counts the agent's nodes but stops only at its own limit, so pool v100 could lose 2 nodes at once "
        f"while nodeAgent.maxUnavailable allows 1; set {STACK_LIMIT} to at most 1 (or 12% of those 8), or raise "
        "nodeAgent.maxUnavailable to 2"
    )


def test_the_refused_config_creates_nothing_and_the_fixed_one_builds_the_agent() -> None:
    refused = run_program("dev", overrides=as_overrides(_dev_handover(max_nodes=8)))
    assert refused.config_error is not None
    assert [p.path for p in refused.config_error.problems] == [STACK_LIMIT]
    assert refused.registrations == []
    fixed = run_program("dev", overrides=as_overrides(set_path(_dev_handover(max_nodes=8), STACK_LIMIT, 1)))
    assert fixed.config_error is None, fixed.config_error
    assert fixed.plain_outputs["nodeAgent"]["budgets"] == {"v100": 1}
    assert fixed.by_type("kubernetes:apps/v1:Deployment")


@pytest.mark.parametrize(
    ("operator", "agent", "nodes"),
    [(2, 2, 2), ("25%", 2, 2), ("25%", "25%", 2), (1, 1, 1), ("12%", 1, 1)],
    ids=["counts", "percent-vs-count", "percents", "ones", "12-percent-of-8-is-1"],
)
def test_equal_limits_are_accepted(operator: object, agent: object, nodes: int) -> None:
    raw = set_path(set_path(_dev_handover(max_nodes=8), STACK_LIMIT, operator), "nodeAgent.maxUnavailable", agent)
    assert plan_raw(raw).node_agent_budgets == {"v100": nodes}
    (line,) = refusal(set_path(raw, STACK_LIMIT, nodes + 1))  # one node more than the agent allows
    assert f"could lose {nodes + 1} nodes at once while nodeAgent.maxUnavailable allows {nodes};" in line


def test_one_node_more_than_the_agent_allows_is_refused() -> None:
    raw = set_path(set_path(_dev_handover(max_nodes=8), STACK_LIMIT, 3), "nodeAgent.maxUnavailable", 2)
    (line,) = refusal(raw)
    assert line.startswith(f"{STACK_LIMIT}: 3 lets the GPU Operator's upgrade controller have 3 of the 8 nodes")
    assert "so pool v100 could lose 3 nodes at once while nodeAgent.maxUnavailable allows 2" in line


def test_the_operators_percentage_is_of_every_node_of_its_driver_not_of_the_pool() -> None:
    # One ClusterPolicy driver over v100 (3) and a100 (2): 25% of 5 nodes rounds up to 2, though 25% of the
    # 3 v100 nodes would be 1. The agent's budget is of the pool alone: 1 of its 3 nodes.
    (line,) = refusal(one_driver(_dev_handover()))
    assert line.startswith(
        f"{STACK_LIMIT}: '25%' lets the GPU Operator's upgrade controller have 2 of the 5 nodes of the ClusterPolicy's "
        "driver (pools a100, v100) unavailable at once"
    )
    assert "nodeAgent.maxUnavailable 1 allows 1 of its 3 nodes" in line
    assert "could lose 2 nodes at once" in line
    assert f"set {STACK_LIMIT} to at most 1 (or 20% of those 5)" in line


def test_the_agents_percentage_rounds_up_as_the_agent_rounds_it() -> None:
    # 34% of the 3 v100 nodes is 1.02: the agent rounds it up to 2, as much as the operator's 2 of 5.
    raw = set_path(one_driver(_dev_handover()), "nodeAgent.maxUnavailable", "34%")
    assert plan_raw(raw).node_agent_budgets == {"v100": 2}
    raw = set_path(one_driver(_dev_handover()), "nodeAgent.maxUnavailable", "33%")  # 0.99: 1 node
    (line,) = refusal(raw)
    assert "nodeAgent.maxUnavailable '33%' allows 1 of its 3 nodes" in line


def test_an_operator_limit_beyond_the_pool_is_accepted_where_the_agent_may_take_the_whole_pool() -> None:
    # 4 of the ClusterPolicy's 5 nodes, but the v100 pool has 3 and the agent may take all 3 of them.
    raw = set_path(one_driver(_dev_handover()), STACK_LIMIT, 4)
    assert plan_raw(set_path(raw, "nodeAgent.maxUnavailable", 3)).node_agent_budgets == {"v100": 3}
    # With 2 of 3 for the agent the operator could still take all 3 (not 4: the pool has no more).
    (line,) = refusal(set_path(raw, "nodeAgent.maxUnavailable", 2))
    assert "so pool v100 could lose 3 nodes at once while nodeAgent.maxUnavailable allows 2" in line


def test_a_pool_the_agent_does_not_maintain_is_not_checked() -> None:
    # a100 lets its own NVIDIADriver take both of its nodes, but neither hand-over nor MIG through the agent
    # touches it; v100, which the agent maintains, stays at 1 of 3 nodes.
    raw = set_path(_dev_handover(), "nodeGroups.a100.driver.upgradePolicy", {"maxUnavailable": 2})
    assert plan_raw(raw).node_agent_budgets == {"v100": 1}
    # The same a100 policy with MIG layouts going through the agent: now a100 is the agent's, and refused.
    (line,) = refusal(set_path(raw, "nodeAgent.migLayout", True))
    assert line.startswith(
        "nodeGroups.a100.driver.upgradePolicy.maxUnavailable: 2 lets the GPU Operator's upgrade controller have 2 of "
        "the 2 nodes of NVIDIADriver gpu-platform-a100 (pools a100)"
    )
    assert (
        "pool a100 is also maintained by the node agent (nodeAgent.migLayout: true re-partitions nodeGroups.a100)"
        in line
    )


def test_a_pool_policy_that_does_not_set_the_limit_is_refused_at_the_stack_key_it_inherits() -> None:
    raw = set_path(
        _dev_handover(max_nodes=8), "nodeGroups.v100.driver", {"upgradePolicy": {"drain": {"enable": False}}}
    )
    (line,) = refusal(raw)
    assert line.startswith(f"{STACK_LIMIT}: '25%' lets")
    (line,) = refusal(set_path(raw, "nodeGroups.v100.driver.upgradePolicy.maxUnavailable", "50%"))
    assert line.startswith("nodeGroups.v100.driver.upgradePolicy.maxUnavailable: '50%' lets")
    assert "have 4 of the 8 nodes" in line


def test_an_unwritten_limit_is_named_as_the_default() -> None:
    raw = delete_path(_dev_handover(max_nodes=8), STACK_LIMIT)
    (line,) = refusal(raw)
    assert line.startswith(f"{STACK_LIMIT}: '25%' (the default) lets")


def test_the_upgrade_controller_off_for_the_clusterpolicy_driver_is_not_checked() -> None:
    raw = one_driver(_dev_handover(max_nodes=8))
    refusal(raw)
    assert plan_raw(set_path(raw, "gpuOperator.driver.upgradePolicy.autoUpgrade", False)).node_agent_budgets == {
        "v100": 1
    }


def test_bare_metal_nodes_of_one_pool_share_the_agents_budget() -> None:
    # 50% of the ClusterPolicy driver's 3 nodes is 2; the agent gives pool h100 (all three nodes) 1.
    raw = set_path(_driverless_prod(), STACK_LIMIT, "50%")
    (line,) = refusal(raw)
    assert line.startswith(f"{STACK_LIMIT}: '50%' lets the GPU Operator's upgrade controller have 2 of the 3 nodes")
    assert "pool h100 is also maintained by the node agent (nodeAgent.migLayout: true re-partitions " in line
    assert "allows 1 of its 3 nodes" in line
    assert plan_raw(_driverless_prod()).node_agent_budgets == {"h100": 1}  # the default 25% of 3: 1


def test_hosts_that_own_the_driver_are_not_checked() -> None:
    # prod as committed: driver on the host (driver.enabled=false), so no upgrade controller touches the nodes.
    raw = set_path(set_path(stack_raw("prod"), "nodeAgent.migLayout", True), STACK_LIMIT, "100%")
    plan = plan_raw(raw)
    assert plan.operator is not None and plan.operator.driver.owner == "host"
    assert plan.node_agent_budgets == {"h100": 1}
    # The same limit with the operator installing the driver on driverless hosts is refused.
    (line,) = refusal(set_path(_driverless_prod(), STACK_LIMIT, "100%"))
    assert "have 3 of the 3 nodes" in line and "pool h100" in line
