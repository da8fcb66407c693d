"""The review on hand-made previews: URNs and aliases as the engine sees them, one real object moved,
per-pool drivers, replacement reasons from the program's options and the providers' tables, findings
that only moved, rendered objects, refused stacks and diff.json read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.catalog.names import NODE_GROUP_TYPE
from preview.diff.changes import CREATE, DELETE, UPDATE, StackDiff, diff_snapshots
from preview.diff.comment import comment_for
from preview.diff.diff_json import DiffJsonError, load_diff
from preview.diff.rendered_diff import rendered_changes
from preview.diff.replacements import ResourceOptions, replace_reasons
from preview.diff.report_html import html_report
from preview.diff.report_markdown import markdown_report
from preview.diff.snapshot import Snapshot
from preview.diff.summary import summary_lines
from preview.diff.urns import AliasSpec, UrnBook, make_urn, normalise, urns_from_parents
from preview.run.registration import SECRET_MASK, reveal_connection

DRIVERS = "gpu-platform:gpu:GpuDrivers"
NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
JOB = "kubernetes:batch/v1:Job"


# ----------------------------------------------------------------------------------------------
# URNs and aliases


def test_urns_are_the_engines_not_the_mocks() -> None:
    mock = "urn:pulumi:dev::gpu-platform::pulumi:pulumi:Stack$gpu-platform:gpu:GpuDrivers::gpu-drivers"
    assert normalise(mock) == "urn:pulumi:dev::gpu-platform::gpu-platform:gpu:GpuDrivers::gpu-drivers"
    parent = normalise(mock)
    child = make_urn("dev", "gpu-platform", parent, NVIDIA_DRIVER, "gpu-drivers-v100")
    assert child == f"urn:pulumi:dev::gpu-platform::{DRIVERS}${NVIDIA_DRIVER}::gpu-drivers-v100"
    grandchild = make_urn("dev", "gpu-platform", child, "x:y:Z", "z")
    assert f"::{DRIVERS}${NVIDIA_DRIVER}$x:y:Z::z" in grandchild, "the parent's whole qualified type, not its last"


def test_an_alias_spec_resolves_to_the_old_urn_and_children_inherit_it() -> None:
    book = UrnBook("dev", "gpu-platform")
    old_parent = "urn:pulumi:dev::gpu-platform::gpu-platform:gpu:GpuDrivers::gpu-drivers"
    component = book.register("m1", "", DRIVERS, "gpu-drivers-canary", [AliasSpec(name="gpu-drivers")])
    assert book.aliases_of(component) == (old_parent,)
    child = book.register("m2", "m1", NVIDIA_DRIVER, "v100", [AliasSpec(name="old-v100", parent_urn=old_parent)])
    # A URN names its parents' types, not their names: the parent's alias changes nothing for the child here.
    assert book.aliases_of(child) == (f"urn:pulumi:dev::gpu-platform::{DRIVERS}${NVIDIA_DRIVER}::old-v100",)
    book.register("m3", "", DRIVERS, "steps", [AliasSpec(type="gpu-platform:old:Drivers")])
    job = book.register("m4", "m3", JOB, "job", [])
    assert book.aliases_of(job) == (f"urn:pulumi:dev::gpu-platform::gpu-platform:old:Drivers${JOB}::job",)
    top = book.register("m5", "m1", JOB, "job", [AliasSpec(no_parent=True)])
    assert book.aliases_of(top)[0] == f"urn:pulumi:dev::gpu-platform::{JOB}::job"


def test_an_older_preview_gets_its_urns_from_the_parents_names() -> None:
    resources: list[dict[str, Any]] = [
        {"type": DRIVERS, "name": "gpu-drivers", "parent": None},
        {"type": NVIDIA_DRIVER, "name": "gpu-drivers-v100", "parent": "gpu-drivers"},
    ]
    assert urns_from_parents(resources, "dev", "gpu-platform")[1] == (
        f"urn:pulumi:dev::gpu-platform::{DRIVERS}${NVIDIA_DRIVER}::gpu-drivers-v100"
    )


# ----------------------------------------------------------------------------------------------
# One real object under a new URN


def _driver(step: str, name: str = "gpu-platform-v100") -> dict[str, Any]:
    inputs = {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name}, "spec": {}}
    return {"type": NVIDIA_DRIVER, "name": f"{step}-v100", "parent": step, "inputs": inputs}


def _component(step: str) -> dict[str, Any]:
    return {"type": DRIVERS, "name": step, "parent": None, "inputs": {}}


def _snapshot(resources: list[dict[str, Any]], aliases: dict[str, list[str]] | None = None) -> Snapshot:
    snapshot = Snapshot(stack="dev", resources=resources)
    urns = snapshot.urns()
    snapshot.options = [
        {"urn": urn, "aliases": (aliases or {}).get(r["name"], []), "type": r["type"], "name": r["name"]}
        for urn, r in zip(urns, resources, strict=True)
    ]
    return snapshot


def test_a_moved_object_without_an_alias_is_a_mandatory_finding() -> None:
    base = _snapshot([_component("gpu-drivers"), _driver("gpu-drivers")])
    head = _snapshot([_component("gpu-drivers-canary"), _driver("gpu-drivers-canary")])
    diff = diff_snapshots(base, head, "main", "head")
    assert [(c.action, c.name) for c in diff.resources if c.type == NVIDIA_DRIVER] == [
        (CREATE, "gpu-drivers-canary-v100"),
        (DELETE, "gpu-drivers-v100"),
    ]
    (move,) = diff.moves
    assert move.object == "NVIDIADriver nvidia.com gpu-platform-v100"
    assert "fails because it already exists" in move.describe() and move.old_urn in move.describe()
    assert any(line.startswith("review gate FAILED") for line in summary_lines(diff))
    assert "**The review refuses this change**" in markdown_report(diff)
    assert 'id="moves"' in html_report(diff)


def test_an_aliased_move_is_an_update_in_place() -> None:
    base = _snapshot([_component("gpu-drivers"), _driver("gpu-drivers")])
    old_urn = base.urns()[1]
    head = _snapshot(
        [_component("gpu-drivers-canary"), _driver("gpu-drivers-canary")], {"gpu-drivers-canary-v100": [old_urn]}
    )
    diff = diff_snapshots(base, head, "main", "head")
    assert diff.moves == []
    (moved,) = [c for c in diff.resources if c.type == NVIDIA_DRIVER]
    assert (moved.action, moved.moved_from) == (UPDATE, old_urn)
    assert any(
        "UPDATE gpu-drivers-canary-v100" in line and "paired by its alias" in line for line in summary_lines(diff)
    )


def test_a_renamed_object_is_no_move() -> None:
    base = _snapshot([_component("gpu-drivers"), _driver("gpu-drivers")])
    head = _snapshot([_component("gpu-drivers-canary"), _driver("gpu-drivers-canary", "gpu-platform-other")])
    assert diff_snapshots(base, head, "main", "head").moves == []


# ----------------------------------------------------------------------------------------------
# Drivers per pool, replacement reasons


def _pools_snapshot(v100: str, a100: str, tolerations: list[str]) -> Snapshot:
    pool = {"gpuModel": "V100-32GB", "gpusPerNode": 1, "maxNodes": 3, "migConfig": "all-disabled"}
    drivers = {
        "owner": "operator",
        "pools": {
            "a100": {"driverVersion": a100, "driverResource": "gpu-platform-a100"},
            "v100": {"driverVersion": v100, "driverResource": "gpu-platform-v100"},
        },
    }
    resources = [
        {
            "type": NVIDIA_DRIVER,
            "name": f"gpu-drivers-{pool_name}",
            "parent": None,
            "inputs": {"metadata": {"name": f"gpu-platform-{pool_name}"}, "spec": {"tolerations": tolerations}},
        }
        for pool_name in ("a100", "v100")
    ]
    return Snapshot(
        stack="dev",
        resources=resources,
        outputs={
            "gpuPools": {"a100": pool, "v100": pool},
            "drivers": drivers,
            "gpuOperator": {"driverVersion": "580.95.05", "driverOwner": "operator"},
        },
    )


def test_each_pool_shows_its_own_driver_and_a_rollout_of_its_driver_object() -> None:
    base = _pools_snapshot("580.82.07", "595.91.07", ["a"])
    head = _pools_snapshot("580.95.05", "595.91.07", ["a", "b"])
    diff = diff_snapshots(base, head, "main", "head")
    pools = {p.name: p for p in diff.pools}
    assert (pools["a100"].driver_before, pools["a100"].driver_after) == ("595.91.07 (operator)", "595.91.07 (operator)")
    assert diff.driver_groups() == [(("v100",), "580.82.07 (operator)", "580.95.05 (operator)")]
    assert "NVIDIADriver gpu-platform-a100 is updated (spec.tolerations)" in pools["a100"].driver_rollout
    assert pools["a100"].status == "changed"
    assert "DRIVER a100: NVIDIADriver gpu-platform-a100 is updated" in "\n".join(summary_lines(diff))


def test_the_programs_replace_on_changes_is_a_replacement_reason() -> None:
    old, new = {"spec": {"usePrecompiled": False}}, {"spec": {"usePrecompiled": True}}
    assert replace_reasons(NVIDIA_DRIVER, old, new) == []
    options = ResourceOptions(("spec.driverType", "spec.usePrecompiled"), delete_before_replace=True)
    assert replace_reasons(NVIDIA_DRIVER, old, new, options) == [
        "spec.usePrecompiled False -> True (the program's replace_on_changes)"
    ]


def test_yandex_node_group_reasons_follow_the_providers_force_new() -> None:
    def group(**changes: Any) -> dict[str, Any]:
        inputs: dict[str, Any] = {
            "name": "ml-dev-v100-1",
            "nodeTaints": ["a"],
            "scalePolicy": {"autoScale": {"min": 1}},
            "allocationPolicy": {"locations": [{"zone": "ru-central1-a"}]},
            "instanceTemplate": {"networkInterfaces": [{"nat": True, "subnetIds": ["s1"]}]},
        }
        inputs.update(changes)
        return inputs

    moved_zone = group(allocationPolicy={"locations": [{"zone": "ru-central1-b"}]}, name="ml-dev-v100-2")
    assert replace_reasons(NODE_GROUP_TYPE, group(), moved_zone) == [], "zone and name change in place"
    no_nat = group(instanceTemplate={"networkInterfaces": [{"nat": False, "subnetIds": ["s2"]}]})
    assert replace_reasons(NODE_GROUP_TYPE, group(), no_nat) == [], "network_interface changes in place"
    assert replace_reasons(NODE_GROUP_TYPE, group(), group(nodeTaints=["a", "b"])) == [
        "taints changed (forces a replacement)"
    ]
    fixed = group(scalePolicy={"fixedScale": {"size": 2}})
    assert replace_reasons(NODE_GROUP_TYPE, group(), fixed) == ["scaleKind 'auto' -> 'fixed'"]


def test_a_finding_that_only_moved_is_neither_new_nor_gone() -> None:
    def finding(resource: str, message: str) -> dict[str, str]:
        return {"policy": "p", "enforcement": "advisory", "resource": resource, "message": message, "origin": "x"}

    base = Snapshot(stack="dev", findings=[finding("old-urn", "same"), finding("r", "fixed")])
    head = Snapshot(stack="dev", findings=[finding("new-urn", "same"), finding("r", "new")])
    diff = diff_snapshots(base, head, "main", "head")
    assert [f.message for f in diff.appeared] == ["new"] and [f.message for f in diff.disappeared] == ["fixed"]


# ----------------------------------------------------------------------------------------------
# The SSH connection


def test_the_connection_shows_where_it_connects_and_masks_the_key() -> None:
    plain = {
        "connection": {
            "host": "192.0.2.22",
            "user": "cloud-user",
            "port": 22,
            "privateKey": "-----BEGIN OPENSSH PRIVATE KEY-----",
            "proxy": {"host": "bastion", "user": "jump", "privateKey": "key", "password": "pw"},
        },
        "create": "echo",
    }
    masked = {"connection": SECRET_MASK, "create": "echo"}
    shown = reveal_connection("command:remote:Command", plain, masked)
    assert shown["connection"]["host"] == "192.0.2.22" and shown["connection"]["port"] == 22
    assert shown["connection"]["privateKey"] == SECRET_MASK
    assert shown["connection"]["proxy"] == {
        "host": "bastion",
        "user": "jump",
        "privateKey": SECRET_MASK,
        "password": SECRET_MASK,
    }
    assert "BEGIN OPENSSH" not in json.dumps(shown)
    assert reveal_connection("kubernetes:core/v1:Secret", plain, masked) == masked


# ----------------------------------------------------------------------------------------------
# Rendered objects, refused stacks, diff.json


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def test_rendered_objects_are_diffed_and_a_new_pod_template_restarts_its_pods(tmp_path: Path) -> None:
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: kubeflow}\nspec:\n  template:\n    spec:\n      volumes: [{configMap: {name: ui-%s}}]\n"
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ui-%s, namespace: kubeflow}\ndata: {a: '%s'}\n"
    _write(
        tmp_path / "base" / "rendered" / "kubeflow-platform",
        {
            "deployment-kubeflow-web.yaml": deployment % "abc",
            "configmap-kubeflow-ui-abc.yaml": config_map % ("abc", "1"),
        },
    )
    _write(
        tmp_path / "head" / "rendered" / "kubeflow-platform",
        {
            "deployment-kubeflow-web.yaml": deployment % "def",
            "configmap-kubeflow-ui-def.yaml": config_map % ("def", "2"),
        },
    )
    changes = rendered_changes(tmp_path / "base", tmp_path / "head")
    assert [(c.action, c.kind, c.name) for c in changes] == [
        (DELETE, "ConfigMap", "kubeflow/ui-abc"),
        (CREATE, "ConfigMap", "kubeflow/ui-def"),
        (UPDATE, "Deployment", "kubeflow/web"),
    ]
    (web,) = [c for c in changes if c.rolls]
    assert web.changes[0].path == "spec.template.spec.volumes[0].configMap.name"
    diff = StackDiff(stack="prod", base="main", head="head", rendered=changes)
    assert any(line.startswith("  ROLLS Deployment kubeflow/web (kubeflow-platform)") for line in summary_lines(diff))
    assert (
        "| pods restarted (pod template changed) | `Deployment kubeflow/web` (kubeflow-platform) |"
        in markdown_report(diff)
    )


def test_a_refused_stack_reports_every_problem() -> None:
    diff = StackDiff(stack="prod", base="main (abc)", head="working tree", refused=["a: wrong", "b: also wrong"])
    assert summary_lines(diff)[1:] == ["  a: wrong", "  b: also wrong"]
    markdown = markdown_report(diff)
    assert markdown.splitlines()[1] == "### Stack `prod`: REFUSED, 2 problem(s)" and "- b: also wrong" in markdown
    assert "REFUSED" in html_report(diff) and "<li>a: wrong</li>" in html_report(diff)
    assert load_diff(diff.to_json()).refused == diff.refused


def test_diff_json_is_read_back_only_as_written(tmp_path: Path) -> None:
    diff = StackDiff(stack="dev", base="main", head="head", refused=["x"])
    document = json.loads(diff.to_json())
    document["resources"] = [{"action": "create", "type": "t", "name": "<img src=x>", "parent": None}]
    with pytest.raises(DiffJsonError, match="resources/0"):
        load_diff(json.dumps(document))
    report = tmp_path / "dev" / "diff.json"
    report.parent.mkdir()
    ok = StackDiff(stack="dev", base="main", head="<b>head</b> @someone", refused=["<script>"]).to_json()
    report.write_text(ok)
    comment = comment_for("dev", report, "a" * 40)
    assert "<script>" not in comment and "<b>" not in comment and "@someone" not in comment


def test_unchanged_pools_are_collapsed_in_the_html() -> None:
    base = _pools_snapshot("580.82.07", "595.91.07", ["a"])
    head = _pools_snapshot("580.95.05", "595.91.07", ["a"])
    html = html_report(diff_snapshots(base, head, "main", "head"))
    a100 = html[html.index('data-pool="a100"') : html.index('data-pool="v100"')]
    v100 = html[html.index('data-pool="v100"') :]
    assert 'data-status="unchanged"' in a100 and "<details><summary>GPUs (unchanged)</summary>" in a100
    assert "<details><summary>GPUs (unchanged)" not in v100.split("</section>")[0]


def test_the_cloud_names_digest_covers_every_force_new_field_the_config_sets() -> None:
    """The catalog's ForceNew table is the one source: naming.py digests the config-set fields it lists, no others."""
    from components.catalog.replacements import yandex_node_group_force_new_names
    from components.yandex.naming import digest_fields

    table = yandex_node_group_force_new_names()
    assert digest_fields() and set(digest_fields()) <= set(table)
    assert not {"location", "zone", "nat", "name"} & set(digest_fields()), "in-place fields rename nothing"


def test_the_mig_plan_that_must_be_committed_is_named(tmp_path: Path) -> None:
    from preview.diff.review import mig_plan_to_record

    preview = tmp_path / "build" / "preview" / "dev"
    preview.mkdir(parents=True)
    assert mig_plan_to_record(tmp_path, preview, "dev") == "", "nothing planned from demand"
    (preview / "mig-plan.yaml").write_text("version: 1\npools: {}\n")
    named = mig_plan_to_record(tmp_path, preview, "dev")
    assert named.startswith("mig-plans/dev.yaml must be committed with this change")
    assert named.endswith("cp build/preview/dev/mig-plan.yaml mig-plans/dev.yaml")
    (tmp_path / "mig-plans").mkdir()
    (tmp_path / "mig-plans" / "dev.yaml").write_text("version: 1\npools: {}\n")
    assert mig_plan_to_record(tmp_path, preview, "dev") == "", "the recorded plan is current"
    diff = StackDiff(stack="dev", base="main", head="head", mig_plan=named)
    assert f"  MIG PLAN {named}" in summary_lines(diff) and "| MIG plan to commit |" in markdown_report(diff)


def test_a_cut_comment_closes_every_block_it_opened() -> None:
    from preview.diff.changes import ResourceChange
    from preview.diff.report_markdown import MAX_CHARS

    body = "".join(f"line{i}: ```not a fence``` {'x' * 60}\n" for i in range(110))
    created = [ResourceChange(CREATE, JOB, f"job-{i}", None, body=body) for i in range(20)]
    text = markdown_report(StackDiff(stack="dev", base="main", head="head", resources=created))
    assert len(text) < MAX_CHARS + 300 and "*Cut at" in text
    assert text.count("<details>") == text.count("</details>")
    fences = [line for line in text.splitlines() if line.startswith("````")]
    assert len(fences) % 2 == 0, "the last code block is closed with its own fence"


def test_the_program_aliases_what_moves_when_a_pool_becomes_the_canary() -> None:
    """The real program under mocks: the canary's NVIDIADriver and smoke Job answer to their URNs of before."""
    from tests.helpers import run_raw, set_path, stack_raw

    run = run_raw("dev", set_path(stack_raw("dev"), "nodeGroups.v100.driver", {"canary": True}))
    driver = run.one(NVIDIA_DRIVER, "gpu-drivers-canary-v100")
    assert f"urn:pulumi:dev::gpu-platform::{DRIVERS}${NVIDIA_DRIVER}::gpu-drivers-v100" in driver.aliases
    assert driver.replace_on_changes == ("spec.driverType", "spec.usePrecompiled") and driver.delete_before_replace
    (job,) = [r for r in run.by_type(JOB) if r.name.startswith("gpu-smoke-test-canary-gpu-smoke-v100")]
    old_job = job.name.replace("gpu-smoke-test-canary-", "gpu-smoke-test-", 1)
    assert f"urn:pulumi:dev::gpu-platform::gpu-platform:gpu:GpuSmokeTest${JOB}::{old_job}" in job.aliases
    rest = run.one(NVIDIA_DRIVER, "gpu-drivers-a100")
    assert rest.aliases == (f"urn:pulumi:dev::gpu-platform::{DRIVERS}${NVIDIA_DRIVER}::gpu-drivers-canary-a100",)


def test_a_value_masked_on_one_side_is_not_a_change() -> None:
    """A base previewed by an older review masked the whole connection: its host is unknown, not changed."""
    from preview.diff.changes import value_changes

    old = {"connection": {"host": SECRET_MASK, "privateKey": SECRET_MASK}}
    new = {"connection": {"host": "192.0.2.11", "privateKey": SECRET_MASK}, "create": "x"}
    assert [c.path for c in value_changes(old, new)] == ["create"]
    assert [c.path for c in value_changes({}, {"token": SECRET_MASK})] == ["token"], "a new secret key shows"
