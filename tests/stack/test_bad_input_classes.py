"""Issue #28: each class of wrong value is refused where it enters (or accepted with a reason), at the key written.

One test per class of the issue: values the receiving system refuses (Kubernetes, Yandex Cloud, the host),
combinations that break a real cluster, problems of inherited values named at ``nodeGroupDefaults``, and
legal values that must pass.
"""

from __future__ import annotations

import pytest

from components.catalog.kubernetes import GO_DURATION_MAX_SECONDS, INT32_MAX
from tests.helpers import plan_raw, refusal, set_path, stack_raw

V100 = "nodeGroups.v100"
UPGRADE = "gpuOperator.driver.upgradePolicy"


# --- values that reach an object unchecked --------------------------------------------------------------


@pytest.mark.parametrize("selector", ["a=b=c!!", "app in (x", "app in (a b)", "a,", "team in (ml) x"])
@pytest.mark.parametrize("key", ["drain", "waitForCompletion"])
def test_a_pod_selector_the_api_server_cannot_parse_is_refused(key: str, selector: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), f"{UPGRADE}.{key}.podSelector", selector))
    assert line.startswith(f"{UPGRADE}.{key}.podSelector: {selector!r} is not a Kubernetes label selector")


# ``app notin ()`` and ``a==`` select the empty value: labels.Parse accepts them (components.catalog.label_selector).
@pytest.mark.parametrize(
    "selector", ["", "app=trainer", "team in (ml,cv), !preemptible", "tier!=batch,a==b", "app notin ()", "a=="]
)
def test_a_valid_pod_selector_is_accepted_and_reaches_the_upgrade_policy(selector: str) -> None:
    plan = plan_raw(set_path(stack_raw("dev"), f"{UPGRADE}.drain.podSelector", selector))
    assert plan.config.gpu_operator.driver.upgrade_policy.drain.pod_selector == selector


def test_a_pools_own_pod_selector_is_checked_at_the_pools_key() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver.upgradePolicy", {"drain": {"podSelector": "a=b=c"}})
    (line,) = refusal(raw)
    assert line.startswith("nodeGroups.a100.driver.upgradePolicy.drain.podSelector: 'a=b=c' is not")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nodeAgent.leaseTtlSeconds", 1e12),
        ("smokeTest.ttlSecondsAfterFinished", 2**31),
        ("gpuOperator.timeoutSeconds", 10**15),
        (f"{UPGRADE}.drain.timeoutSeconds", 2**40),
    ],
)
def test_a_number_past_the_int32_field_it_is_written_to_is_refused(key: str, value: float) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), key, value))
    assert (
        line
        == f"{key}: {int(value)} does not fit an int32, the type of the Kubernetes field it is written to; at most {INT32_MAX}"
    )


@pytest.mark.parametrize("key", ["maxExpansion", "maxUnavailable"])
def test_a_deploy_policy_past_what_yandex_accepts_is_refused(key: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.deploy.{key}", 101))
    assert (
        line
        == f"{V100}.deploy.{key}: 101 is out of range; Yandex Cloud accepts 0 to 100 nodes (NodeGroup deploy policy)"
    )
    assert plan_raw(set_path(stack_raw("dev"), f"{V100}.deploy.{key}", 100))


def test_a_deploy_policy_that_could_never_progress_is_refused_at_the_block_naming_both_keys() -> None:
    # maxUnavailable is 0 in dev: maxExpansion 0 beside it would let no node be added or taken away.
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.deploy.maxExpansion", 0))
    assert line == (f"{V100}.deploy: maxExpansion and maxUnavailable cannot both be 0: an update could never progress")
    beside_one = set_path(
        set_path(stack_raw("dev"), f"{V100}.deploy.maxExpansion", 0), f"{V100}.deploy.maxUnavailable", 1
    )
    assert plan_raw(beside_one)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cluster.clusterId", "My Cluster!"),
        (f"{V100}.location.subnetId", "e9b subnet"),
        (f"{V100}.securityGroupIds", [""]),
        (f"{V100}.securityGroupIds", ["enp OK"]),
    ],
)
def test_a_yandex_id_that_is_not_one_is_refused(key: str, value: object) -> None:
    lines = refusal(set_path(stack_raw("dev"), key, value))
    written = f"{key}[0]" if isinstance(value, list) else key
    assert len(lines) == 1 and lines[0].startswith(f"{written}: ")
    assert "is not a Yandex Cloud id" in lines[0] or "at least 1 character" in lines[0]


def test_real_yandex_ids_are_accepted() -> None:
    raw = set_path(stack_raw("dev"), f"{V100}.securityGroupIds", ["enpexamplesecgroup01"])
    assert plan_raw(raw).config.node_groups["v100"].security_group_ids == ["enpexamplesecgroup01"]


def test_a_nonreplicated_disk_that_is_not_a_multiple_of_93_gb_is_refused() -> None:
    raw = set_path(stack_raw("dev"), f"{V100}.bootDisk", {"type": "network-ssd-nonreplicated", "size": 96})
    (line,) = refusal(raw)
    assert line.startswith(f"{V100}.bootDisk.size: a network-ssd-nonreplicated disk is a multiple of 93 GB")
    assert "nearest: 93, 186" in line
    assert plan_raw(set_path(raw, f"{V100}.bootDisk.size", 186))


@pytest.mark.parametrize("name", ["x" * 64, "Dev", "dev stage"])
def test_an_environment_name_that_cannot_be_a_yandex_label_value_is_refused(name: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "environment.name", name))
    assert line.startswith(f"environment.name: {name!r} cannot be a Yandex Cloud label value")
    assert line.endswith("it labels every node group")


def test_the_environment_name_is_not_a_yandex_label_on_bare_metal() -> None:
    assert plan_raw(set_path(stack_raw("prod"), "environment.name", "Prod EU")).config.environment.name == "Prod EU"


# --- combinations that break a real cluster -------------------------------------------------------------


def test_every_pool_a_canary_is_refused_one_canary_is_accepted() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.v100.driver", {"canary": True})
    assert plan_raw(raw).config.node_groups["v100"].driver.canary  # type: ignore[union-attr]
    raw = set_path(raw, "nodeGroups.a100.driver.canary", True)
    lines = refusal(raw)
    assert [line.split(":")[0] for line in lines] == ["nodeGroups.a100.driver.canary", "nodeGroups.v100.driver.canary"]
    assert all("every GPU pool is a canary, so no pool waits for one" in line for line in lines)


def test_precompiled_drivers_with_a_full_version_are_refused_where_they_are_switched_on() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "gpuOperator.driver.usePrecompiled", True))
    assert line.startswith("gpuOperator.driver.usePrecompiled: true with driver version 580.95.05: precompiled")
    assert "<branch>-<kernel>-<os>" in line
    (line,) = refusal(set_path(stack_raw("dev"), "nodeGroups.a100.driver.usePrecompiled", True))
    assert line.startswith("nodeGroups.a100.driver.usePrecompiled: true with driver version 595.91.07")


def test_a_skip_driver_label_on_a_driverless_group_is_refused() -> None:
    label = "nvidia.com/gpu.deploy.driver"
    (line,) = refusal(set_path(stack_raw("dev"), f"{V100}.labels", {label: "false"}))
    assert line.startswith(f"{V100}.labels.{label}: 'false' on a runc (driverless) group")


def test_a_taint_repeated_on_a_bare_metal_node_is_refused() -> None:
    taints = ["nvidia.com/gpu=true:NoSchedule", "nvidia.com/gpu=true:NoSchedule"]
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.nodes.0.taints", taints))
    assert line == (
        "bareMetal.nodes[0].taints: taint nvidia.com/gpu=true:NoSchedule repeats key 'nvidia.com/gpu' with effect "
        "NoSchedule; keep one"
    )


@pytest.mark.parametrize("argument", ["nouveau.modeset=1", "nouveau.modeset"])
def test_kernel_arguments_that_let_nouveau_take_the_gpu_are_refused(argument: str) -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.hostPreparation.kernelArgs", [argument]))
    assert line.startswith(f"bareMetal.hostPreparation.kernelArgs[0]: {argument!r} lets nouveau take the GPU")
    assert plan_raw(set_path(stack_raw("prod"), "bareMetal.hostPreparation.kernelArgs", ["nouveau.modeset=0"]))


def test_the_ssh_keys_secret_given_as_the_kubeconfig_secret_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "cluster.kubeconfigSecret", "sshPrivateKey"))
    assert line.startswith("bareMetal.ssh.privateKeySecret: 'sshPrivateKey' is already cluster.kubeconfigSecret")


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease"])
def test_the_operator_in_a_system_namespace_is_refused(namespace: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "gpuOperator.namespace", namespace))
    assert line.startswith(f"gpuOperator.namespace: {namespace!r} is a namespace Kubernetes keeps for itself")


@pytest.mark.parametrize(
    ("values", "key", "instead"),
    [
        ({"driver": {"nvidiaDriverCRD": {"deployDefaultCR": True}}}, "driver.nvidiaDriverCRD", "a pool's own driver"),
        ({"driver": {"usePrecompiled": True}}, "driver.usePrecompiled", "gpuOperator.driver.usePrecompiled"),
        ({"mig": {"strategy": "single"}}, "mig.strategy", "mig.strategy"),
    ],
)
def test_extra_values_the_program_owns_are_refused_with_the_key_to_use(values: dict, key: str, instead: str) -> None:
    lines = refusal(set_path(stack_raw("dev"), "gpuOperator.extraValues", values))
    owned = [line for line in lines if line.startswith(f"gpuOperator.extraValues.{key}: is set by gpu-platform")]
    assert len(owned) == 1 and f"set {instead}" in owned[0], lines


# --- named at the key the user wrote ------------------------------------------------------------------


def test_an_inherited_default_is_refused_at_node_group_defaults_naming_the_groups() -> None:
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroupDefaults.taints", [])
    (line,) = refusal(raw)
    assert line.startswith("nodeGroupDefaults.taints: a GPU node group has no NoSchedule taint")
    assert line.endswith("(inherited by nodeGroups a100)")  # v100 writes its own taints


def test_one_inherited_problem_of_several_groups_is_reported_once() -> None:
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroupDefaults.location.subnetId", "bad subnet")
    (line,) = refusal(raw)
    assert line.startswith("nodeGroupDefaults.location.subnetId: 'bad subnet' is not a Yandex Cloud id")
    assert line.endswith("(inherited by nodeGroups a100, v100)")


def test_a_groups_own_value_is_still_named_at_the_group() -> None:
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroups.v100.taints", ["a=b:PreferNoSchedule"])
    (line,) = refusal(raw)
    assert line.startswith("nodeGroups.v100.taints: a GPU node group has no NoSchedule taint")


def test_an_inherited_canary_on_every_group_is_named_at_the_default() -> None:
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroupDefaults.driver", {"canary": True})
    raw = set_path(raw, "nodeGroups.a100.driver", {"version": "595.91.07", "cuda": "13.2"})
    (line,) = refusal(raw)
    assert line.startswith("nodeGroupDefaults.driver.canary: every GPU pool is a canary")


# --- legal values that must pass ----------------------------------------------------------------------


def test_a_taint_without_a_value_is_accepted_on_yandex_and_bare_metal() -> None:
    dev = plan_raw(set_path(stack_raw("dev"), f"{V100}.taints", ["nvidia.com/gpu:NoSchedule"]))
    assert dev.config.node_groups["v100"].taints == ["nvidia.com/gpu=:NoSchedule"]  # the form Yandex's API takes
    prod = plan_raw(set_path(stack_raw("prod"), "bareMetal.nodes.0.taints", ["nvidia.com/gpu:NoSchedule"]))
    assert {str(taint) for taint in prod.pool("gpu-node-1").taints} == {"nvidia.com/gpu=:NoSchedule"}


def test_a_timeout_past_a_go_duration_is_refused_in_every_section() -> None:
    """kubeflow.awaitTimeoutSeconds becomes a Go time.Duration in the provider: 1e12 s is past it (and the int32)."""
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.awaitTimeoutSeconds", 1e12))
    assert line.startswith("kubeflow.awaitTimeoutSeconds: 1000000000000 does not fit an int32")
    assert GO_DURATION_MAX_SECONDS > INT32_MAX  # so the int32 bound keeps every timeout inside a Go duration
