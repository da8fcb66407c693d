"""Bare-metal config that is legal YAML but wrong is refused by key, or accepted with a warning."""

from __future__ import annotations

from preview.run.runner import run_program
from tests.helpers import plan_raw, refusal, set_path, stack_raw


def test_two_nodes_with_one_address_are_refused() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.1.address", "192.0.2.11")
    assert refusal(raw) == [
        "bareMetal.nodes[1].address: 192.0.2.11 is also the address of bareMetal.nodes[0]: "
        "host preparation would run twice on one host"
    ]


def test_a_pool_name_must_be_a_label_value() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.nodes.0.pool", "h100 pool"))
    assert line.startswith("bareMetal.nodes[0].pool: value 'h100 pool' must be") and "node label value" in line


def test_a_dangerous_kernel_argument_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.hostPreparation.kernelArgs", ["init=/bin/sh"]))
    assert line.startswith("bareMetal.hostPreparation.kernelArgs[0]: 'init=/bin/sh' would change what the host boots")


def test_an_unknown_kernel_argument_needs_its_name_listed() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.hostPreparation.kernelArgs", ["quiet"])
    (line,) = refusal(raw)
    assert "hostPreparation.extraKernelArgNames" in line
    assert plan_raw(set_path(raw, "bareMetal.hostPreparation.extraKernelArgNames", ["quiet"]))


def test_an_ssh_user_with_shell_metacharacters_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.ssh.user", "root;reboot"))
    assert line.startswith("bareMetal.ssh.user: 'root;reboot' must be a login name")
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.ssh.bastion.user", "$(id)"))
    assert line.startswith("bareMetal.ssh.bastion.user: ")


def test_a_gpu_node_without_a_noschedule_taint_is_refused_unless_accepted_with_a_warning() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.0.taints", [])
    (line,) = refusal(raw)
    assert line.startswith("bareMetal.nodes[0].taints: a GPU node has no NoSchedule taint (taints: none)")
    accepted = set_path(raw, "bareMetal.nodes.0.allowUntainted", True)
    assert plan_raw(accepted).warnings == (
        "bareMetal.nodes[0].allowUntainted: gpu-node-1 has no NoSchedule taint, so any pod may take its GPUs",
    )
    run = run_program("prod", overrides={"gpu-platform:bareMetal": accepted["bareMetal"]})
    assert run.config_error is None
    assert "warning: bareMetal.nodes[0].allowUntainted: gpu-node-1 has no NoSchedule taint" in "\n".join(run.notices)


def test_a_long_cluster_name_keeps_the_replacement_digest() -> None:
    from components.yandex.naming import cloud_name, replacement_key

    long_group = "g" * 32
    raw = set_path(stack_raw("dev"), "cluster.name", "a" * 40)
    raw["nodeGroups"] = {long_group: raw["nodeGroups"]["v100"]}
    raw["kubeflow"]["profiles"][0]["resourceQuota"] = {}  # its MIG quota named the a100 group's slices
    stack = plan_raw(raw).config
    group = stack.node_groups[long_group]
    name = cloud_name(stack.cluster.name, long_group, group)
    assert len(name) == 63 and name.endswith(f"-{long_group}-{replacement_key(group)}")
    changed = group.model_copy(update={"gpu_environment": "runc_drivers_cuda"})
    assert cloud_name(stack.cluster.name, long_group, changed) != name, "a replacement gets a new name"
    (line,) = refusal(set_path(stack_raw("dev"), "cluster.name", "ML_Dev"))
    assert line.startswith("cluster.name: 'ML_Dev' must be 1-40 lowercase letters")
