"""Facts and rules with one home in the catalog, and the places that still state them checked against it.

Each home here replaced copies in several modules (issue #38, "One home, for real"): the pulumi type tokens and
which of them are objects in the cluster, the taint list of a bare-metal node's annotation, a taint's object form,
the node agent's budget rule and where it works, the namespaces the program defaults to, and (in
``components.base.config_model``, above the catalog since it speaks in config key paths) the check of a config
section's taint list. Where a copy lives in a module this change could not edit, a test below holds it to the home
until that module imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.base.config_model import CheckedTaints, checked_taints
from components.catalog.kubernetes import (
    Taint,
    TaintFormatError,
    gpu_node_taint_problem,
    parse_taint,
    taint_key,
    taint_list_entries,
    taint_list_text,
)
from components.catalog.names import (
    GPU_OPERATOR_NAMESPACE,
    HELM_RELEASE_TYPES,
    KUSTOMIZE_DIRECTORY_TYPE,
    NODE_GROUP_TYPE,
    NODE_PATCH_TYPE,
    NVIDIA_DRIVER_TYPE,
    REMOTE_COMMAND_TYPE,
    is_cluster_object,
)
from components.catalog.node_agent import DEFAULT_AGENT_NAMESPACE, pool_budget, works_on_pool
from components.gpu_operator.config import GpuOperatorConfig
from components.node_agent.agent.settings import Settings
from components.node_agent.config import NodeAgentConfig
from tests.helpers import plan_raw, set_path, stack_raw


@pytest.mark.parametrize(
    ("resource_type", "object_in_the_cluster"),
    [
        (NODE_PATCH_TYPE, True),
        (NVIDIA_DRIVER_TYPE, True),
        ("kubernetes:apps/v1:DaemonSet", True),
        (KUSTOMIZE_DIRECTORY_TYPE, False),
        *((token, False) for token in HELM_RELEASE_TYPES),
        ("kubernetes:yaml/v2:ConfigGroup", False),
        ("pulumi:providers:kubernetes", False),
        (NODE_GROUP_TYPE, False),
        (REMOTE_COMMAND_TYPE, False),
    ],
)
def test_a_cluster_object_is_a_kubernetes_kind_the_program_declares_itself(
    resource_type: str, object_in_the_cluster: bool
) -> None:
    assert is_cluster_object(resource_type) is object_in_the_cluster


@pytest.mark.parametrize(
    "text", ["nvidia.com/gpu=true:NoSchedule", "nvidia.com/gpu:NoSchedule", "a=b=c:NoSchedule", "a:b:NoSchedule", "x"]
)
def test_the_key_of_a_taint_text_is_the_parsers_and_exists_for_text_that_does_not_parse(text: str) -> None:
    try:
        assert taint_key(text) == parse_taint(text).key
    except TaintFormatError:
        assert taint_key(text) == text.rpartition(":")[0].partition("=")[0]


def test_a_taint_list_annotation_reads_back_as_written() -> None:
    texts = ["nvidia.com/gpu=true:NoSchedule", "dedicated=:NoExecute"]
    assert taint_list_text(texts) == "nvidia.com/gpu=true:NoSchedule,dedicated=:NoExecute"
    assert taint_list_entries(taint_list_text(texts)) == texts
    assert taint_list_entries("") == []


def test_a_taint_object_is_read_as_its_text_is() -> None:
    assert Taint.from_object({"key": "nvidia.com/gpu", "effect": "NoSchedule"}) == parse_taint(
        "nvidia.com/gpu:NoSchedule"
    )
    assert Taint.from_object({"key": "a", "value": "b", "effect": "NoExecute", "timeAdded": "x"}) == Taint(
        "a", "b", "NoExecute"
    )
    assert Taint.from_object({"key": "a", "value": 3, "effect": "NoSchedule"}) == Taint("a", "", "NoSchedule")
    assert Taint.from_object({"key": "a"}) is None
    assert Taint.from_object({"effect": "NoSchedule"}) is None


@pytest.mark.parametrize("max_unavailable", [1, 2, 5, "1%", "10%", "34%", "50%", "100%"])
@pytest.mark.parametrize("nodes", [0, 1, 2, 3, 7, 10, 1000])
def test_the_agents_budget_rule_is_the_catalogs_in_the_config_and_in_the_controller(
    max_unavailable: int | str, nodes: int
) -> None:
    """``NodeAgentConfig.budget`` (the outputs, which also caps a number at the pool's size) and the controller's
    ``Settings.budget`` still state the rule themselves: they must give what ``pool_budget`` gives."""
    assert Settings(max_unavailable=str(max_unavailable)).budget(nodes) == pool_budget(max_unavailable, nodes)
    config = NodeAgentConfig(max_unavailable=max_unavailable)
    assert config.budget(nodes) == min(pool_budget(max_unavailable, nodes), max(nodes, 1))


def test_the_programs_namespace_defaults_are_the_catalogs() -> None:
    assert GpuOperatorConfig.model_fields["namespace"].default == GPU_OPERATOR_NAMESPACE
    assert NodeAgentConfig.model_fields["namespace"].default == DEFAULT_AGENT_NAMESPACE
    assert Settings().operator_namespace == GPU_OPERATOR_NAMESPACE


def test_a_config_taint_list_is_checked_once_with_each_problem_at_its_key() -> None:
    checked = checked_taints(
        [
            "nvidia.com/gpu=true:Sometimes",
            "a=b:NoSchedule",
            "a=c:NoSchedule",
            "gpu-platform.io/node-agent.x=1:NoExecute",
        ],
        "nodeGroups.a100.taints",
    )
    assert checked.taints == (
        Taint("a", "b", "NoSchedule"),
        Taint("a", "c", "NoSchedule"),
        parse_taint("gpu-platform.io/node-agent.x=1:NoExecute"),
    )
    assert [problem.path for problem in checked.problems] == [
        "nodeGroups.a100.taints[0]",
        "nodeGroups.a100.taints",
        "nodeGroups.a100.taints[3]",
    ]
    assert checked.untainted is None, "a taint that does not parse is the problem, not the missing NoSchedule one"
    assert checked_taints(["a=b:NoExecute"], "t").untainted == gpu_node_taint_problem([Taint("a", "b", "NoExecute")])
    assert checked_taints(["a=b:NoSchedule"], "t") == CheckedTaints((Taint("a", "b", "NoSchedule"),), (), None)


def _handed_over(raw: dict[str, Any]) -> dict[str, Any]:
    """dev with its V100 group on the preinstalled-driver image, opted in to the hand-over."""
    raw = set_path(raw, "nodeGroups.v100.gpuEnvironment", "runc_drivers_cuda")
    return set_path(raw, "nodeGroups.v100.hostDriverRemoval", True)


@pytest.mark.parametrize(
    ("stack", "edit"), [("dev", None), ("dev", _handed_over), ("prod", None)], ids=["dev", "dev-handover", "prod"]
)
@pytest.mark.parametrize("mig_layout", [False, True])
def test_the_plans_agent_pools_follow_the_catalogs_rule(
    stack: str, edit: Callable[[dict[str, Any]], dict[str, Any]] | None, mig_layout: bool
) -> None:
    """``components.stack.plan`` still decides the agent's pools itself: it must answer as ``works_on_pool``."""
    raw = set_path(stack_raw(stack), "nodeAgent.migLayout", mig_layout)
    plan = plan_raw(edit(raw) if edit else raw)
    expected = tuple(
        pool
        for pool in plan.pools
        if works_on_pool(
            host_driver_removal=pool.host_driver_removal, mig_pool=pool.name in plan.mig.pools, mig_layout=mig_layout
        )
    )
    assert plan.node_agent_pools == (expected if plan.operator else ())
