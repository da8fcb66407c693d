"""Done-when of the "review that tells the truth about pulumi up" issue: each change a platform engineer
would make, as a real stack-file edit reviewed end to end (``python -m preview.diff --base main``, the real
program under mocks on both revisions), and what the report must say ``pulumi up`` does with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from preview.diff.changes import CREATE, DELETE, REPLACE, UPDATE
from preview.diff.diff_json import load_diff
from preview.diff.moves import real_object
from preview.diff.report_markdown import MARKER
from tests.preview.diff.truth_scenario import Reviewed, review

Review = Callable[[str], Reviewed]


@pytest.fixture(scope="session")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Review:
    """Each change reviewed once per session; the base of each stack is previewed once for all (one cache)."""
    work = tmp_path_factory.mktemp("truth")
    done: dict[str, Reviewed] = {}

    def get(change: str) -> Reviewed:
        if change not in done:
            done[change] = review(change, work / "repos", work / "cache")
        return done[change]

    return get


def _no_unflagged_move(result: Reviewed) -> None:
    """Every deleted and created resource of one real object carries the mandatory finding."""
    diff = result.diff()
    base, head = result.inputs("base"), result.inputs("head")
    gone = {real_object(r["type"], base[(r["type"], r["name"])]) for r in diff["resources"] if r["action"] == DELETE}
    new = {real_object(r["type"], head[(r["type"], r["name"])]) for r in diff["resources"] if r["action"] == CREATE}
    assert (gone & new) - {None} == {m["object"] for m in diff["moves"]}


def _line(result: Reviewed, start: str) -> str:
    return next(line for line in result.stdout.splitlines() if line.strip().startswith(start))


def test_canary_on_moves_the_driver_and_the_smoke_job_as_updates(reviewed: Review) -> None:
    result = reviewed("canary_on")
    assert result.returncode == 0, result.stderr[-3000:]
    moved = {r["name"]: r for r in result.resources(UPDATE) if r["moved_from"]}
    assert set(moved) == {"gpu-drivers-canary-v100", "gpu-smoke-test-canary-gpu-smoke-v100-gpu-860f3a2a"}
    assert moved["gpu-drivers-canary-v100"]["moved_from"].endswith("NVIDIADriver::gpu-drivers-v100")
    assert result.resources(DELETE) == [] and result.diff()["moves"] == []
    assert "(moved, paired by its alias)" in _line(result, "UPDATE gpu-drivers-canary-v100")
    _no_unflagged_move(result)


def test_canary_off_moves_them_back_as_updates(reviewed: Review) -> None:
    result = reviewed("canary_off")
    assert result.returncode == 0, result.stderr[-3000:]
    moved = {r["name"]: r["moved_from"] for r in result.resources(UPDATE) if r["moved_from"]}
    assert moved["gpu-drivers-v100"].endswith("NVIDIADriver::gpu-drivers-canary-v100")
    assert moved["gpu-smoke-test-gpu-smoke-v100-gpu-860f3a2a"].endswith(
        "Job::gpu-smoke-test-canary-gpu-smoke-v100-gpu-860f3a2a"
    )
    assert result.diff()["moves"] == []
    _no_unflagged_move(result)


def test_without_the_alias_the_canary_move_fails_the_review(reviewed: Review) -> None:
    """The same change with the program's aliases taken out: the review names both collisions and exits 3."""
    result = reviewed("canary_on_without_aliases")
    assert result.returncode == 3, result.stderr[-3000:]
    objects = sorted(m["object"] for m in result.diff()["moves"])
    assert objects == [
        "Job batch gpu-operator/gpu-smoke-v100-gpu-860f3a2a",
        "NVIDIADriver nvidia.com gpu-platform-v100",
    ]
    assert "review gate FAILED: 2 refusal(s)" in result.stdout
    _no_unflagged_move(result)
    assert "**The review refuses this change**" in result.report("diff.md")


def test_a_driver_bump_is_named_on_its_own_pool_only(reviewed: Review) -> None:
    result = reviewed("driver_bump")
    assert result.returncode == 0, result.stderr[-3000:]
    _no_unflagged_move(result)
    assert "DRIVER v100: 580.82.07 (operator) -> 580.95.05 (operator)" in result.stdout
    pools = {p["name"]: p for p in result.diff()["pools"]}
    assert pools["a100"]["driver_after"] == "595.91.07 (operator)", "a100 runs its own driver, not the stack's"
    assert pools["a100"]["status"] == "unchanged"
    assert "`v100`: `580.82.07 (operator)` -> `580.95.05 (operator)`" in result.report("diff.md")


def test_runc_drivers_cuda_to_runc_replaces_the_group_create_first(reviewed: Review) -> None:
    result = reviewed("to_runc")
    assert result.returncode == 0, result.stderr[-3000:]
    line = _line(result, "REPLACE gpu-v100-group")
    assert "gpuEnvironment 'runc_drivers_cuda' -> 'runc'" in line and "create-before-delete" in line
    assert "DELETE node-agent-daemonset (kubernetes:apps/v1:DaemonSet)" in result.stdout, "the hand-over goes"
    _no_unflagged_move(result)


def test_a_taint_change_replaces_the_group_and_restarts_driver_pods_on_both_pools(reviewed: Review) -> None:
    result = reviewed("taint_change")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "taints changed (forces a replacement)" in _line(result, "REPLACE gpu-v100-group")
    for pool in ("a100", "v100"):
        line = _line(result, f"DRIVER {pool}: NVIDIADriver gpu-platform-{pool} is updated (spec.tolerations)")
        assert "rolls its driver pods" in line
    assert "ROLLS DaemonSet gpu-operator/gpu-operator-node-feature-discovery-worker" in result.stdout
    html = result.report("diff.html")
    assert html.count('data-driver-rollout="true"') == 2
    _no_unflagged_move(result)


def test_a_mig_layout_change_shows_the_spawner_and_the_deployment_that_restarts(reviewed: Review) -> None:
    result = reviewed("mig_layout")
    assert result.returncode == 0, result.stderr[-3000:]
    _no_unflagged_move(result)
    assert "MIG gpu-node-2 (H100-80GB): GPUs 0-7 re-partitioned" in result.stdout
    rendered = result.diff()["rendered"]
    spawner = [r for r in rendered if r["kind"] == "ConfigMap" and "jupyter-web-app" in r["name"]]
    assert {r["action"] for r in spawner} >= {CREATE, DELETE} or any(r["action"] == UPDATE for r in spawner)
    assert "ROLLS Deployment kubeflow/jupyter-web-app-deployment" in result.stdout
    assert "| pods restarted (pod template changed) |" in result.report("diff.md")


def test_a_new_node_shows_its_root_steps_and_labels_with_their_inputs(reviewed: Review) -> None:
    result = reviewed("new_node")
    assert result.returncode == 0, result.stderr[-3000:]
    created = {r["name"]: r for r in result.resources(CREATE)}
    steps = [r for name, r in created.items() if name.startswith("host-preparation-gpu-node-4-")]
    assert len(steps) >= 5
    for step in steps:
        assert "host: 192.0.2.14" in step["body"] and "privateKey: '[secret]'" in step["body"]
        assert "sudo -n bash -s" in step["body"], "the root script itself is reviewable"
    patches = [r for r in result.resources(CREATE) if r["type"] == "kubernetes:core/v1:NodePatch"]
    assert patches and all("name: gpu-node-4" in r["body"] for r in patches)
    markdown = result.report("diff.md")
    assert "<summary>inputs (" in markdown and "BEGIN OPENSSH" not in markdown
    _no_unflagged_move(result)


def test_a_removed_node_names_everything_that_goes(reviewed: Review) -> None:
    result = reviewed("removed_node")
    assert result.returncode == 0, result.stderr[-3000:]
    deleted = {r["name"] for r in result.resources(DELETE)}
    assert len([name for name in deleted if name.startswith("host-preparation-gpu-node-4-")]) >= 5
    assert "gpu-nodes-gpu-node-4" in deleted, "its labels go with it"
    for name in deleted:
        assert f"DELETE {name} (" in result.stdout
    _no_unflagged_move(result)


def test_a_new_address_shows_the_new_host_and_keeps_the_key_masked(reviewed: Review) -> None:
    result = reviewed("new_address")
    assert result.returncode == 0, result.stderr[-3000:]
    _no_unflagged_move(result)
    changed = [r for r in result.resources(UPDATE) + result.resources(REPLACE) if r["name"].startswith("host-")]
    assert changed, "moving the root scripts to another machine is a change"
    for resource in changed:
        paths = {c["path"]: c for c in resource["changes"]}
        assert paths["connection.host"]["old"] == '"192.0.2.12"' and paths["connection.host"]["new"] == '"192.0.2.22"'
        assert "connection.privateKey" not in paths
    line = _line(result, f"UPDATE {changed[0]['name']}")
    assert "connection.host" in line and "runs its create command again on 192.0.2.22" in line
    text = "".join((result.repo / "build" / "diff" / "prod" / n).read_text() for n in ("diff.md", "diff.json"))
    assert "offline-preview-dummy" not in text, "the key never shows"


def test_a_quota_change_names_the_profiles_new_quota(reviewed: Review) -> None:
    result = reviewed("quota_change")
    assert result.returncode == 0, result.stderr[-3000:]
    _no_unflagged_move(result)
    paths = [c for r in result.diff()["resources"] for c in r["changes"]] + [
        c for r in result.diff()["rendered"] for c in r["changes"]
    ]
    assert any('"16"' in c["old"] and '"24"' in c["new"] for c in paths), "the quota 16 -> 24 is shown"


def test_an_impossible_layout_is_reported_as_refused(reviewed: Review) -> None:
    result = reviewed("impossible_layout")
    assert result.returncode == 2
    diff = load_diff(result.report("diff.json"))
    assert diff.refused and any("bareMetal.nodes[0].mig" in p and "7g.80gb" in p for p in diff.refused)
    markdown = result.report("diff.md")
    assert markdown.splitlines()[0] == MARKER.format(stack="prod") and "REFUSED" in markdown.splitlines()[1]
    assert "REFUSED" in result.stdout


@pytest.mark.parametrize("change", ["canary_on", "taint_change", "new_node", "new_address"])
def test_every_report_reads_back_through_the_schema(reviewed: Review, change: str) -> None:
    result = reviewed(change)
    text = result.report("diff.json")
    assert load_diff(text).to_json() == text
    assert Path(result.repo / "build" / "diff" / result.stack / "diff.html").read_text().startswith("<!DOCTYPE html>")
