"""The third platform, ``existing``: a cluster whose GPU nodes someone else provisions (``Pulumi.existing.yaml``).

Previewed with the real program under mocks: it creates no node and prepares no host, and everything above the
nodes (the operator, the hand-over of a preinstalled driver, MIG through the node agent, the proof, the smoke
Jobs, observability) is there as on the other platforms. Its bad input is refused at its keys; a section only
another platform reads is refused; and the review refuses a switch of platform that would destroy what the old
platform created.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog.names import (
    GPU_NODE_GROUP_TYPE,
    GPU_NODE_LABEL,
    HOST_DRIVER_REMOVAL_LABEL,
    HOST_PREPARATION_TYPE,
    MIG_CONFIG_LABEL,
    NODE_GROUP_LABEL,
    NODE_LABELS_TYPE,
    NODE_PATCH_TYPE,
)
from components.catalog.node_agent import MIG_DESIRED_LABEL
from components.stack.platforms.registry import PLATFORMS
from preview.diff.changes import DELETE, diff_snapshots
from preview.diff.snapshot import Snapshot
from preview.diff.summary import summary_lines
from preview.run.runner import ProgramRun, run_program
from tests.helpers import plan_raw, preview_cli, refusal, set_path, stack_raw

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_AGENT = "gpu-platform:gpu:NodeAgent"
PROOF_JOB = "kubernetes:batch/v1:Job"


@pytest.fixture(scope="module")
def existing() -> ProgramRun:
    run = run_program("existing")
    assert run.config_error is None, run.config_error
    return run


def test_it_creates_no_node_and_prepares_no_host(existing: ProgramRun) -> None:
    types = {r.type for r in existing.registrations}
    created_elsewhere = {t for platform in PLATFORMS.values() for t in platform.creates}
    assert created_elsewhere == {GPU_NODE_GROUP_TYPE, HOST_PREPARATION_TYPE, NODE_LABELS_TYPE}
    assert not types & created_elsewhere
    assert not {t for t in types if t.startswith(("yandex:", "command:"))}
    assert NODE_PATCH_TYPE not in types, "the program cannot know which nodes a selector picks"
    assert existing.plain_outputs["gpuNodeGroups"] == {}
    assert existing.plain_outputs["cluster"]["kind"] == "existing"


def test_everything_above_the_nodes_is_there(existing: ProgramRun) -> None:
    types = {r.type for r in existing.registrations}
    assert RELEASE in types, "the GPU Operator"
    assert NODE_AGENT in types, "the hand-over of train's preinstalled driver and infer's MIG layout"
    assert any(r.name.startswith("gpu-proof-") for r in existing.by_type(PROOF_JOB)), "the proof of the driver step"
    assert any(r.name.startswith("gpu-smoke-test") for r in existing.by_type(PROOF_JOB)), "the smoke Jobs"
    assert existing.plain_outputs["observability"] is not None
    pools = existing.plain_outputs["gpuPools"]
    assert set(pools) == {"infer", "train"}
    assert {pool["source"] for pool in pools.values()} == {"existing-nodes"}
    assert pools["infer"]["scheduling"]["nodeSelector"] == {NODE_GROUP_LABEL: "infer"}
    assert set(pools["infer"]["resourcesPerNode"]) == {"nvidia.com/mig-1g.10gb"}, "MIG from the pool's layout"


def test_the_node_agent_labels_the_nodes_each_selector_picks() -> None:
    plan = plan_raw(stack_raw("existing"))
    memberships = plan.node_agent_memberships
    assert memberships["train"]["selector"] == {"node.example.com/pool": "train"}
    train = memberships["train"]["labels"]
    assert train[GPU_NODE_LABEL] == "true" and train[NODE_GROUP_LABEL] == "train"
    assert train[HOST_DRIVER_REMOVAL_LABEL], "train's nodes are handed over from their preinstalled driver"
    infer = memberships["infer"]["labels"]
    assert infer[MIG_DESIRED_LABEL] == "all-1g.10gb", "MIG through the node agent: its desired-config label"
    assert MIG_CONFIG_LABEL not in infer and HOST_DRIVER_REMOVAL_LABEL not in infer
    assert {pool.name for pool in plan.node_agent_pools} == {"infer", "train"}


def test_the_pool_labeller_runs_on_an_existing_cluster_only(existing: ProgramRun) -> None:
    """The memberships reach the labeller's ConfigMap; dev and prod label their nodes themselves: no labeller."""
    (memberships,) = [r for r in existing.by_type("kubernetes:core/v1:ConfigMap") if r.name.endswith("-memberships")]
    data = json.loads(next(iter(memberships.inputs["data"].values())))
    assert data["infer"]["selector"] == {"node.example.com/pool": "infer"}
    assert data["infer"]["labels"][NODE_GROUP_LABEL] == "infer"
    assert existing.one("kubernetes:apps/v1:Deployment", "node-agent-labeller")
    for stack in ("dev", "prod"):
        run = run_program(stack)
        assert not [r.name for r in run.registrations if "labeller" in r.name], stack


def test_the_existing_stack_passes_the_policy_gate(tmp_path: Any) -> None:
    result = preview_cli("existing", "--no-base", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "policy gate passed: 0 mandatory" in result.stdout


def _pool(raw: dict[str, Any], name: str, key: str, value: Any) -> dict[str, Any]:
    return set_path(raw, ("existing", "pools", name, key), value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda raw: _pool(raw, "train", "nodeSelector", {}),
            "existing.pools.train.nodeSelector: must name at least one label",
        ),
        (
            lambda raw: _pool(raw, "infer", "nodeSelector", {"node.example.com/pool": "train"}),
            "existing.pools.infer.nodeSelector: picks the same nodes as existing.pools.train",
        ),
        (
            lambda raw: _pool(raw, "infer", "hostDriverRemoval", True),
            "existing.pools.infer.hostDriverRemoval: true is only for nodes with a preinstalled driver",
        ),
        (lambda raw: _pool(raw, "infer", "gpuModel", "H800"), "existing.pools.infer.gpuModel: 'H800' is not a known"),
        (lambda raw: _pool(raw, "infer", "taints", []), "existing.pools.infer.taints: a GPU node"),
        (
            lambda raw: _pool(raw, "infer", "nodeSelector", {"bad key!": "x"}),
            "existing.pools.infer.nodeSelector.bad key!:",
        ),
        (lambda raw: {k: v for k, v in raw.items() if k != "existing"}, "existing: is required when cluster.kind is"),
        (
            lambda raw: _pool(raw, "infer", "labels", {"node.example.com/pool": "x"}),
            "existing.pools.infer.labels.node.example.com/pool: is a key of the pool's nodeSelector",
        ),
    ],
    ids=[
        "empty selector",
        "same selector",
        "hand-over without a driver",
        "unknown model",
        "untainted",
        "bad key",
        "no section",
        "label of the selector",
    ],
)
def test_bad_input_is_refused_at_its_key(change: Any, expected: str) -> None:
    lines = refusal(change(stack_raw("existing")))
    assert any(line.startswith(expected) for line in lines), lines


def test_a_section_only_another_platform_reads_is_refused() -> None:
    with_groups = set_path(stack_raw("existing"), "nodeGroups", stack_raw("dev")["nodeGroups"])
    assert any(
        line.startswith("nodeGroups: is read only when cluster.kind is yandex (Yandex node groups)")
        for line in refusal(with_groups)
    )
    bare_metal = set_path(stack_raw("dev"), "existing", stack_raw("existing")["existing"])
    assert any(
        line.startswith("existing: is read only when cluster.kind is existing") and "cluster.kind is yandex" in line
        for line in refusal(bare_metal)
    )


def _snapshot(run: ProgramRun) -> Snapshot:
    resources: list[dict[str, Any]] = [
        {"type": r.type, "name": r.name, "parent": r.parent_name, "inputs": {}} for r in run.registrations
    ]
    return Snapshot(stack="dev", resources=resources, outputs=run.plain_outputs)


def test_the_review_refuses_a_switch_that_would_destroy_the_old_platforms_nodes(existing: ProgramRun) -> None:
    dev = run_program("dev")
    assert dev.config_error is None
    diff = diff_snapshots(_snapshot(dev), _snapshot(existing), "main", "head")
    deleted_groups = [r.name for r in diff.of(DELETE) if r.type == GPU_NODE_GROUP_TYPE]
    assert deleted_groups, "the switch deletes the Yandex node groups"
    (refusal_line,) = diff.platform_switch
    assert refusal_line.startswith("cluster.kind changes from yandex to existing: pulumi up would delete")
    assert all(name in refusal_line for name in deleted_groups)
    assert "pulumi state delete" in refusal_line
    assert refusal_line in diff.mandatory_findings
    assert summary_lines(diff)[-1].startswith("review gate FAILED")


def test_the_same_platform_is_no_switch(existing: ProgramRun) -> None:
    diff = diff_snapshots(_snapshot(existing), _snapshot(existing), "main", "head")
    assert diff.platform_switch == [] and diff.mandatory_findings == []
