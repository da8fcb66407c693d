"""The whole program, as `pulumi preview` would run it, for every stack file in the repository."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import pytest
import yaml

from components.stack.garbage_collection import MIDDLE_COLLECTIONS_PER_FULL, collect_fully_rarely
from preview.run.files import preview_files
from preview.run.runner import ProgramRun, run_program
from preview.run.stack_file import OFFLINE_DUMMY_PREFIX, available_stacks
from tests.helpers import ROOT, preview_cli
from tests.preview.support import expected_exit

STACKS = available_stacks(ROOT)


def test_the_repository_has_the_dev_stack() -> None:
    assert "dev" in STACKS


@pytest.fixture(scope="module")
def runs() -> dict[str, ProgramRun]:
    """One run of each stack, for the tests that only read it."""
    return {stack: run_program(stack) for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_stack_previews_without_errors(stack: str, runs: dict[str, ProgramRun]) -> None:
    run = runs[stack]
    assert run.config_error is None, run.config_error
    assert run.outputs["contractVersion"] == "1"
    assert run.outputs["cluster"]["environment"] == stack or run.outputs["cluster"]["environment"]
    assert run.outputs["kubeconfig"] == "[secret]"
    assert "kubeconfig" in run.secret_output_names
    providers = run.by_type("pulumi:providers:kubernetes")
    assert len(providers) == 1, "exactly one explicit Kubernetes provider"
    for registration in run.registrations:
        if registration.type.startswith("kubernetes:"):
            assert registration.parent_name is not None, f"{registration.name} must belong to a component"


@pytest.mark.parametrize("stack", STACKS)
def test_preview_files_hold_no_plaintext_secret(stack: str, runs: dict[str, ProgramRun]) -> None:
    run = runs[stack]
    files = preview_files(run)
    text = "\n".join(files.values())
    assert OFFLINE_DUMMY_PREFIX not in text
    kubeconfig = run.plain_outputs["kubeconfig"]
    assert kubeconfig and kubeconfig not in text
    assert "certificate-authority-data" not in text


@pytest.mark.parametrize("stack", STACKS)
def test_preview_is_deterministic(stack: str, runs: dict[str, ProgramRun]) -> None:
    assert preview_files(run_program(stack)) == preview_files(runs[stack])


def test_dev_node_group_outputs_tell_how_to_schedule(runs: dict[str, ProgramRun]) -> None:
    group = runs["dev"].outputs["gpuNodeGroups"]["v100"]
    assert group["gpuModel"] == "V100-32GB" and group["gpusPerNode"] == 1
    assert group["gpuEnvironment"] == "runc"
    assert group["scheduling"]["nodeSelector"] == {"gpu-platform.io/node-group": "v100"}
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in group[
        "scheduling"
    ]["tolerations"]


def test_a_program_run_collects_fully_only_rarely() -> None:
    """``__main__.py`` sets its process's collector pace, under the engine as under the preview."""
    gc.set_threshold(700, 10, 10)  # CPython's default
    try:
        run = run_program("prod")
        assert run.config_error is None
        assert gc.get_threshold() == (700, 10, MIDDLE_COLLECTIONS_PER_FULL)
    finally:
        collect_fully_rarely()


def test_cli_writes_the_preview(tmp_path: Path) -> None:
    result = preview_cli("dev", "--out", str(tmp_path), "--verbose", "--no-base")
    assert result.returncode == expected_exit(tmp_path / "dev"), result.stderr  # the gate's verdict: tests/preview
    assert "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup  gpu-v100-group" in result.stdout
    resources = json.loads((tmp_path / "dev" / "resources.json").read_text())
    assert [r["type"] for r in resources][:2] == ["gpu-platform:cluster:ClusterAccess", "pulumi:providers:kubernetes"]
    assert all(set(r) == {"type", "name", "parent", "inputs"} for r in resources)
    assert json.loads((tmp_path / "dev" / "outputs.json").read_text())["kubeconfig"] == "[secret]"


def _project_copy(tmp_path: Path, stack_config: dict[str, object]) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "__main__.py", project / "__main__.py")
    shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": stack_config}))
    return project


def test_cli_refuses_an_invalid_config_without_traceback(tmp_path: Path) -> None:
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    config["gpu-platform:nodeGroups"]["v100"]["resources"]["gpus"] = 3
    config["gpu-platform:nodeGroupz"] = {}
    project = _project_copy(tmp_path, config)
    result = preview_cli("dev", "--root", str(project), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "nodeGroups.v100.resources.gpus: 3 is not offered on gpu-standard-v2; allowed: 1, 2, 4, 8" in result.stderr
    assert "nodeGroupz: unknown config key" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "out").exists(), "nothing is written for an invalid config"


def test_preview_announces_a_node_group_replacement_against_its_base_only(tmp_path: Path) -> None:
    """The replacement is found against an explicit base (here --base-dir), never against leftovers in --out."""
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    config["gpu-platform:nodeGroups"]["v100"]["gpuEnvironment"] = "runc_drivers_cuda"
    config["gpu-platform:nodeGroups"]["v100"]["hostDriverRemoval"] = True
    project = _project_copy(tmp_path, config)
    base = tmp_path / "base"
    assert preview_cli("dev", "--root", str(project), "--out", str(base)).returncode == expected_exit(base / "dev")
    config["gpu-platform:nodeGroups"]["v100"]["gpuEnvironment"] = "runc"
    del config["gpu-platform:nodeGroups"]["v100"]["hostDriverRemoval"]
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}))
    out = tmp_path / "out"
    result = preview_cli("dev", "--root", str(project), "--out", str(out), "--base-dir", str(base))
    assert result.returncode == expected_exit(out / "dev"), result.stderr
    line = next(line for line in result.stdout.splitlines() if "REPLACE gpu-v100-group" in line)
    assert "gpuEnvironment 'runc_drivers_cuda' -> 'runc'" in line and "create-before-delete" in line
    assert "DELETE node-agent-daemonset (kubernetes:apps/v1:DaemonSet)" in result.stdout
    # the old preview lying in --out is no baseline: a project folder that is no git checkout has none
    leftovers = preview_cli("dev", "--root", str(project), "--out", str(base))
    assert "REPLACE" not in leftovers.stdout and "no base preview to compare with" in leftovers.stdout


def test_the_summary_prints_each_policy_once_and_the_tree_only_when_verbose(tmp_path: Path) -> None:
    result = preview_cli("prod", "--out", str(tmp_path), "--no-base")
    assert result.returncode == expected_exit(tmp_path / "prod"), result.stderr
    digest_lines = [line for line in result.stdout.splitlines() if "container-image-digest-pinned" in line]
    assert len(digest_lines) == 1 and " resources, e.g. " in digest_lines[0], digest_lines
    assert "KubernetesNodeGroup  " not in result.stdout and "command:remote:Command  " not in result.stdout
    assert len(result.stdout.splitlines()) < 15, result.stdout


def test_two_previews_write_byte_identical_files(tmp_path: Path) -> None:
    """Deterministic output: no timestamps, no random names, policy report included."""
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        result = preview_cli("--quiet", "--out", str(out))
        assert result.returncode == max(expected_exit(out / stack) for stack in STACKS), result.stderr
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert {f"{stack}/policy-report.json" for stack in STACKS} <= {str(f) for f in files}
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


@pytest.mark.parametrize("stack", STACKS)
def test_policy_config_requires_the_stacks_cuda(stack: str) -> None:
    """The CLI's policy config repeats cuda.version as requiredCuda; the two must not drift."""
    config = json.loads((ROOT / "policies" / "config" / f"{stack}.json").read_text())
    assert config["driver-supports-cuda"]["requiredCuda"] == run_program(stack).outputs["cuda"]["version"]
