"""The diff engine on small, hand-made previews: each kind of change a reviewer must see."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from components.catalog.names import NODE_GROUP_TYPE
from preview.diff.changes import CREATE, DELETE, REPLACE, UPDATE, diff_snapshots, value_changes
from preview.diff.report_html import html_report
from preview.diff.report_markdown import MARKER, MAX_CHARS, markdown_report
from preview.diff.snapshot import HELM_RELEASE, Snapshot
from preview.diff.summary import summary_lines

JOB = "kubernetes:batch/v1:Job"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SECRET = "kubernetes:core/v1:Secret"


def _group(gpu_environment: str, cloud_name: str) -> dict[str, Any]:
    return {
        "type": NODE_GROUP_TYPE,
        "name": "gpu-v100-group",
        "parent": "gpu-v100",
        "inputs": {
            "name": cloud_name,
            "instanceTemplate": {"gpuSettings": {"gpuEnvironment": gpu_environment}},
            "nodeTaints": ["nvidia.com/gpu=true:NoSchedule"],
            "scalePolicy": {"autoScale": {"min": 1, "max": 3}},
        },
    }


def _release(configs: dict[str, Any]) -> dict[str, Any]:
    text = yaml.safe_dump({"version": "v1", "mig-configs": configs})
    values = {"migManager": {"config": {"data": {"config.yaml": text}}}}
    return {"type": HELM_RELEASE, "name": "gpu-operator-release", "parent": None, "inputs": {"values": values}}


def _pool(config: str, gpus: int = 2) -> dict[str, Any]:
    return {"gpuModel": "H100-80GB", "gpusPerNode": gpus, "maxNodes": 1, "migConfig": config, "source": "bare-metal"}


def _custom(layout: dict[str, int]) -> list[dict[str, Any]]:
    return [{"devices": "all", "mig-enabled": True, "mig-devices": layout}]


def _base() -> Snapshot:
    return Snapshot(
        stack="prod",
        resources=[
            _group("runc_drivers_cuda", "ml-dev-v100-5eedc30c"),
            {"type": "kubernetes:apps/v1:DaemonSet", "name": "node-agent-daemonset", "parent": None, "inputs": {}},
            {
                "type": JOB,
                "name": "smoke",
                "parent": None,
                "inputs": {"spec": {"template": {"spec": {"containers": [{"image": "cuda:12.5"}]}}}},
            },
            {"type": SECRET, "name": "dex-passwords", "parent": None, "inputs": {"data": "[secret]"}},
            {"type": CONFIG_MAP, "name": "rules", "parent": None, "inputs": {"metadata": {"labels": {"a": "1"}}}},
            _release({"node-2": _custom({"3g.40gb": 2})}),
        ],
        outputs={
            "gpuPools": {"gpu-node-2": _pool("node-2"), "gpu-node-1": _pool("all-1g.10gb")},
            "gpuOperator": {"driverVersion": "580.82.07", "driverOwner": "host"},
            "nodeAgent": None,
        },
        findings=[
            {"policy": "p", "enforcement": "advisory", "resource": "r1", "message": "old", "origin": "registered"},
            {"policy": "p", "enforcement": "advisory", "resource": "r2", "message": "kept", "origin": "registered"},
        ],
    )


def _head() -> Snapshot:
    head = copy.deepcopy(_base())
    head.resources = [
        _group("runc", "ml-dev-v100-a00784bc"),
        {
            "type": JOB,
            "name": "smoke",
            "parent": None,
            "inputs": {"spec": {"template": {"spec": {"containers": [{"image": "cuda:12.8"}]}}}},
        },
        {"type": SECRET, "name": "dex-passwords", "parent": None, "inputs": {"data": "[secret]"}},
        {"type": CONFIG_MAP, "name": "rules", "parent": None, "inputs": {"metadata": {"labels": {"a": "2"}}}},
        {"type": CONFIG_MAP, "name": "new-rules", "parent": None, "inputs": {}},
        _release({"node-2": _custom({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})}),
    ]
    head.outputs["gpuOperator"]["driverVersion"] = "580.95.05"
    head.findings = [
        {"policy": "p", "enforcement": "advisory", "resource": "r2", "message": "kept", "origin": "registered"},
        {"policy": "q", "enforcement": "mandatory", "resource": "r3", "message": "new", "origin": "registered"},
    ]
    return head


def test_every_action_is_found_with_its_resources() -> None:
    diff = diff_snapshots(_base(), _head(), "main (abc1234)", "working tree")
    assert {(c.action, c.name) for c in diff.resources} == {
        (REPLACE, "gpu-v100-group"),
        (REPLACE, "smoke"),
        (UPDATE, "rules"),
        (UPDATE, "gpu-operator-release"),  # its mig-parted config changed
        (CREATE, "new-rules"),
        (DELETE, "node-agent-daemonset"),
    }
    assert diff.counts() == {CREATE: 1, UPDATE: 2, REPLACE: 2, DELETE: 1}


def test_a_replacement_says_which_field_forces_it_and_how_it_happens() -> None:
    diff = diff_snapshots(_base(), _head(), "main", "working tree")
    group = next(c for c in diff.of(REPLACE) if c.name == "gpu-v100-group")
    assert group.reasons == ("gpuEnvironment 'runc_drivers_cuda' -> 'runc'",)
    assert "creates ml-dev-v100-a00784bc first and deletes ml-dev-v100-5eedc30c" in group.note
    job = next(c for c in diff.of(REPLACE) if c.name == "smoke")
    assert job.reasons == ("spec.template changed (forces a replacement)",)
    assert [(c.path, c.old, c.new) for c in job.changes] == [
        ("spec.template.spec.containers[0].image", '"cuda:12.5"', '"cuda:12.8"')
    ]


def test_an_update_lists_changed_paths_and_a_masked_secret_never_shows() -> None:
    diff = diff_snapshots(_base(), _head(), "main", "working tree")
    rules = next(c for c in diff.resources if c.name == "rules")
    assert [(c.path, c.old, c.new) for c in rules.changes] == [("metadata.labels.a", '"1"', '"2"')]
    assert all(c.name != "dex-passwords" for c in diff.resources), "both previews hold [secret]: no change"


def test_repartitioned_gpus_are_placed_and_the_drain_follows_the_node_agent() -> None:
    diff = diff_snapshots(_base(), _head(), "main", "working tree")
    (pool,) = diff.repartitioned
    assert pool.name == "gpu-node-2" and pool.repartitioned == (0, 1)
    assert pool.gpus[0].before == "3g.40gb@0-3 3g.40gb@4-7"
    assert pool.gpus[0].after == "2g.20gb@0-1 1g.10gb@2 1g.10gb@3 3g.40gb@4-7"
    assert not pool.drained_by_agent and "cordon and drain the node by hand" in pool.drain
    head = _head()
    head.outputs["nodeAgent"] = {"migLayout": True, "budgets": {"gpu-node-2": 1}, "dryRun": False}
    drained = diff_snapshots(_base(), head, "main", "working tree")
    assert [p.name for p in drained.drained] == ["gpu-node-2"]
    assert "drained by the node agent" in drained.drained[0].drain and "1 node(s)" in drained.drained[0].drain


def test_a_named_layout_is_resolved_from_the_catalog() -> None:
    diff = diff_snapshots(_base(), _head(), "main", "working tree")
    node1 = next(p for p in diff.pools if p.name == "gpu-node-1")
    assert node1.gpus[0].after == " ".join(f"1g.10gb@{i}" for i in range(7)) and not node1.repartitioned


def test_driver_changes_are_grouped_and_new_outputs_need_no_code() -> None:
    head = _head()
    head.outputs["drivers"] = {"gpu-node-2": {"version": "590.44.01", "owner": "operator"}}
    diff = diff_snapshots(_base(), head, "main", "working tree")
    assert diff.driver_groups() == [
        (("gpu-node-1",), "580.82.07 (host)", "580.95.05 (host)"),
        (("gpu-node-2",), "580.82.07 (host)", "590.44.01 (operator)"),
    ]
    paths = {c.path for c in diff.outputs}
    assert "gpuOperator.driverVersion" in paths
    assert "drivers" in paths, "an output the engine has never heard of is still diffed"


def test_policy_findings_that_appear_or_disappear() -> None:
    diff = diff_snapshots(_base(), _head(), "main", "working tree")
    assert [f.message for f in diff.appeared] == ["new"]
    assert [f.message for f in diff.disappeared] == ["old"]
    assert diff.verdict_after.describe() == "FAILED: 1 mandatory, 1 advisory violation(s)"


def test_the_console_summary_names_what_matters() -> None:
    text = "\n".join(summary_lines(diff_snapshots(_base(), _head(), "main (abc1234)", "working tree")))
    assert "1 to create, 2 to update, 2 to replace, 1 to delete" in text
    assert "REPLACE gpu-v100-group" in text and "gpuEnvironment 'runc_drivers_cuda' -> 'runc'" in text
    assert "DELETE node-agent-daemonset" in text
    assert "MIG gpu-node-2 (H100-80GB): GPUs 0-1 re-partitioned" in text
    assert "DRIVER gpu-node-1, gpu-node-2: 580.82.07 (host) -> 580.95.05 (host)" in text
    assert text.endswith(
        "policy gate FAILED: 1 mandatory, 1 advisory violation(s) (was passed: 0 mandatory, 2 advisory violation(s))"
    )


def test_reports_are_deterministic_and_the_comment_carries_its_marker() -> None:
    first = diff_snapshots(_base(), _head(), "main", "working tree")
    second = diff_snapshots(_base(), _head(), "main", "working tree")
    assert first.to_json() == second.to_json()
    assert markdown_report(first) == markdown_report(second)
    assert html_report(first) == html_report(second)
    text = markdown_report(first)
    assert text.splitlines()[0] == MARKER.format(stack="prod")
    assert "| deleted (1) | `node-agent-daemonset` |" in text
    assert json.loads(first.to_json())["counts"] == first.counts()


def test_a_huge_diff_is_cut_to_fit_a_comment() -> None:
    head = _head()
    head.resources += [
        {"type": CONFIG_MAP, "name": f"extra-{i}", "parent": None, "inputs": {"data": {"k": "x" * 100}}}
        for i in range(3000)
    ]
    base = _base()
    base.resources += [
        {"type": CONFIG_MAP, "name": f"extra-{i}", "parent": None, "inputs": {"data": {"k": "y" * 100}}}
        for i in range(3000)
    ]
    text = markdown_report(diff_snapshots(base, head, "main", "working tree"), full_report="build/diff/prod/diff.html")
    assert len(text) < MAX_CHARS + 200
    assert "The whole report: build/diff/prod/diff.html" in text
    assert text.count("```") % 2 == 0


def test_value_changes_quote_keys_that_are_not_plain_names() -> None:
    old = {"labels": {"nvidia.com/mig.config": "a"}, "list": [1, 2]}
    new = {"labels": {"nvidia.com/mig.config": "b"}, "list": [1, 2, 3]}
    assert [(c.path, c.old, c.new) for c in value_changes(old, new)] == [
        ('labels["nvidia.com/mig.config"]', '"a"', '"b"'),
        ("list", "[1, 2]", "[1, 2, 3]"),
    ]


def test_without_a_base_everything_is_created() -> None:
    diff = diff_snapshots(None, _head(), "nothing", "working tree")
    assert diff.counts()[CREATE] == len(_head().resources) and diff.verdict_before is None
    assert all(p.status == "added" and not p.repartitioned for p in diff.pools)


def _yandex_pool_snapshot(gpu_environment: str, cloud_name: str, zone: str) -> Snapshot:
    group = _group(gpu_environment, cloud_name)
    group["inputs"]["allocationPolicy"] = {"locations": [{"zone": zone}]}
    pool = {"gpuModel": "V100-32GB", "gpusPerNode": 1, "maxNodes": 3, "migConfig": "all-disabled", "source": "yandex"}
    return Snapshot(
        stack="dev",
        resources=[group],
        outputs={"gpuPools": {"v100": pool}, "gpuNodeGroups": {"v100": {"cloudName": cloud_name}}},
    )


def test_a_group_renamed_in_place_keeps_its_nodes_and_a_replaced_one_does_not() -> None:
    """terraform-provider-yandex v0.161.0 changes the zone and the name in place: the review says the group is
    updated and its nodes stay, even where its cloud name changed; only a ForceNew field replaces every node."""
    base = _yandex_pool_snapshot("runc", "ml-dev-v100-11111111", "ru-central1-a")
    moved = _yandex_pool_snapshot("runc", "ml-dev-v100-22222222", "ru-central1-b")
    diff = diff_snapshots(base, moved, "main", "working tree")
    (group,) = diff.resources
    assert (group.action, group.reasons) == (UPDATE, ())
    (pool,) = diff.pools
    assert pool.nodes_replaced == ""
    replaced = _yandex_pool_snapshot("runc_drivers_cuda", "ml-dev-v100-33333333", "ru-central1-a")
    (pool,) = diff_snapshots(base, replaced, "main", "working tree").pools
    assert (
        pool.nodes_replaced
        == "every node is replaced: the group ml-dev-v100-11111111 gives way to ml-dev-v100-33333333"
    )
