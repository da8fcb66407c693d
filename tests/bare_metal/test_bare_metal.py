"""The bare-metal (prod) stack: host preparation over SSH, node labels, host-driver operator values."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
from pathlib import Path

import pytest

from components.bare_metal.host_preparation import remote_command
from preview.run.files import preview_files
from preview.run.runner import ProgramRun, run_program
from tests.helpers import plan_raw, refusal, set_path, stack_raw

COMMAND = "command:remote:Command"


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    run = run_program("prod")
    assert run.config_error is None, run.config_error
    return run


def test_every_node_gets_every_step_in_order(prod: ProgramRun) -> None:
    commands = prod.by_type(COMMAND)
    assert len(commands) == 15
    node1 = [c for c in commands if c.name.startswith("host-preparation-gpu-node-1-")]
    assert [c.name.rsplit("gpu-node-1-", 1)[1] for c in node1] == [
        "nouveau",
        "sysctl",
        "driver-check",
        "nvidia-services",
        "container-toolkit",
    ]
    for before, after in itertools.pairwise(node1):
        assert before.urn in after.dependencies, f"{after.name} runs after {before.name}"


def test_driver_check_gets_the_cuda_minimum_and_the_declared_version(prod: ProgramRun) -> None:
    check = prod.one(COMMAND, "host-preparation-gpu-node-2-driver-check").inputs["create"]
    assert "export REQUIRED_MIN_DRIVER=570.26\n" in check, "CUDA 12.8 (strict) needs 570.26"
    assert "export EXPECTED_DRIVER_VERSION=580.95.05\n" in check


def test_commands_rerun_when_their_text_changes(prod: ProgramRun) -> None:
    for registration in prod.by_type(COMMAND):
        create = registration.inputs["create"]
        assert registration.inputs["triggers"] == [hashlib.sha256(create.encode()).hexdigest()]
        assert create.startswith("sudo -n bash -s <<'__GPU_PLATFORM_STEP__'\n#!"), "cloud-user is not root"
        assert create.endswith("\n__GPU_PLATFORM_STEP__\n")


def test_ssh_keys_stay_secret(prod: ProgramRun) -> None:
    command = prod.one(COMMAND, "host-preparation-gpu-node-1-sysctl")
    connection = command.masked_inputs["connection"]
    assert connection["privateKey"] == "[secret]"
    assert connection["proxy"]["privateKey"] == "[secret]"
    assert command.inputs["connection"]["proxy"]["host"] == "bastion.prod.example.com"
    plain = command.inputs["connection"]
    assert plain["host"] == "192.0.2.11" and plain["user"] == "cloud-user"
    assert command.inputs["connection"]["privateKey"] not in "\n".join(preview_files(prod).values())


def test_node_labels_through_one_patch_per_node_and_one_field_manager(prod: ProgramRun) -> None:
    patches = prod.by_type("kubernetes:core/v1:NodePatch")
    assert sorted(p.inputs["metadata"]["name"] for p in patches) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    patch = prod.one("kubernetes:core/v1:NodePatch", "gpu-nodes-gpu-node-3").inputs["metadata"]
    assert patch["name"] == "gpu-node-3"
    assert patch["labels"]["gpu-platform.io/gpu-model"] == "H100-80GB"
    assert patch["labels"]["gpu-platform.io/gpu"] == "true"
    assert patch["labels"]["nvidia.com/mig.config"].startswith("gpu-platform-gpu-node-3-")
    assert patch["annotations"]["pulumi.com/patchFieldManager"] == "gpu-platform"
    assert patch["annotations"]["pulumi.com/patchForce"] == "true", "the operator may own nvidia.com/mig.config"


def test_a_patch_without_a_contested_label_is_not_forced() -> None:
    """Only the operator's label is forced over: for any other label a conflict is news, not something to win."""
    from components.bare_metal.node_labels import patch_annotations

    plain = patch_annotations({"gpu-platform.io/gpu": "true"}, {"gpu-platform.io/declared-taints": ""})
    assert plain == {"gpu-platform.io/declared-taints": "", "pulumi.com/patchFieldManager": "gpu-platform"}
    forced = patch_annotations({"gpu-platform.io/gpu": "true", "nvidia.com/mig.config": "all-disabled"}, {})
    assert forced == {"pulumi.com/patchFieldManager": "gpu-platform", "pulumi.com/patchForce": "true"}


def test_operator_runs_in_host_driver_mode_without_its_toolkit(prod: ProgramRun) -> None:
    values = prod.one("kubernetes:helm.sh/v3:Release", "gpu-operator-release").inputs["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}, "host preparation configures containerd"
    assert values["validator"]["driver"]["env"] == [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]
    release = prod.one("kubernetes:helm.sh/v3:Release", "gpu-operator-release")
    assert prod.one(COMMAND, "host-preparation-gpu-node-3-container-toolkit").urn in release.dependencies


def test_unsigned_modules_need_explicit_permission() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.hostPreparation.kernelArgs", ["module.sig_enforce=0"])
    (line,) = refusal(raw)
    assert line.startswith(
        "bareMetal.hostPreparation.kernelArgs[0]: module.sig_enforce=0 lets the kernel load unsigned modules"
    )
    assert plan_raw(set_path(raw, "bareMetal.hostPreparation.allowUnsignedModules", True))


def test_operator_toolkit_and_host_containerd_config_cannot_both_run() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "gpuOperator.toolkit", True))
    assert line.startswith("gpuOperator.toolkit: true would make the operator's container toolkit and host preparation")


def test_host_driver_below_the_cuda_minimum_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "gpuOperator.hostDriver.version", "565.57.01"))
    assert line.startswith("gpuOperator.hostDriver.version: driver 565.57.01 is too old for CUDA 12.8 workloads")


def test_node_refusals() -> None:
    raw = stack_raw("prod")
    nodes = raw["bareMetal"]["nodes"]
    lines = refusal(set_path(raw, "bareMetal.nodes", [*nodes, {**nodes[0], "gpuModel": "H100"}]))
    assert "bareMetal.nodes[3].name: node 'gpu-node-1' is listed twice" in lines
    assert any(
        line.startswith("bareMetal.nodes[3].gpuModel: 'H100' is not a known GPU model; allowed:") for line in lines
    )


def test_bare_metal_cluster_needs_its_nodes() -> None:
    raw = stack_raw("prod")
    del raw["bareMetal"]
    assert "bareMetal: is required when cluster.kind is bare-metal (the nodes and how to reach them)" in refusal(raw)


def test_root_runs_the_scripts_directly() -> None:
    raw = stack_raw("prod")
    raw["bareMetal"]["ssh"]["user"] = "root"
    run = run_program("prod", overrides={"gpu-platform:bareMetal": raw["bareMetal"]})
    assert run.one(COMMAND, "host-preparation-gpu-node-1-sysctl").inputs["create"].startswith("#!")


def test_sudo_wrapper_runs_the_whole_script(tmp_path: Path) -> None:
    """The heredoc reaches bash intact: quotes, $variables and the last line all survive."""
    fake_sudo = tmp_path / "sudo"
    fake_sudo.write_text('#!/bin/sh\n[ "$1" = "-n" ] || exit 9\nshift\nexec "$@"\n')
    fake_sudo.chmod(0o755)
    script = "#!/usr/bin/env bash\nset -euo pipefail\nname='a \"b\"'\necho \"hello $name\"\necho 'changed: nothing'\n"
    result = subprocess.run(
        ["bash", "-c", remote_command(script, become_root=True)],
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == 'hello a "b"\nchanged: nothing\n'
