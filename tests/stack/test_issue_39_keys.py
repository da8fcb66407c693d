"""Issue #39: errors name the key the user wrote (through ``nodeGroupDefaults`` and secret defaults too), the
platform's own names are refused where a user could collide with them, and the limits that are products of
several keys (a timeout times the upgrade waves, a disk size against an inherited disk type) hold."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.base.merge import spells_out
from tests.helpers import plan_raw, refusal, set_path, stack_raw


def _dev() -> dict[str, Any]:
    return stack_raw("dev", expand_defaults=False)


def _lines_name_written_keys(raw: dict[str, Any], lines: list[str]) -> None:
    for line in lines:
        assert spells_out(raw, line.split(": ", 1)[0]), f"{line} names a key the file does not have"


# --- Yandex disk steps where the disk type comes from nodeGroupDefaults --------------------------------------


@pytest.mark.parametrize("disk_type", ["network-ssd-nonreplicated", "network-ssd-io-m3"])
@pytest.mark.parametrize(("size", "valid"), [(93, True), (186, True), (372, True), (96, False), (100, False)])
def test_a_group_size_against_an_inherited_disk_type_gets_the_disk_types_step(
    disk_type: str, size: int, valid: bool
) -> None:
    raw = _dev()
    raw["nodeGroupDefaults"]["bootDisk"] = {"type": disk_type}
    for group in raw["nodeGroups"].values():
        group["bootDisk"] = {"size": size}
    if valid:
        plan_raw(raw)
        return
    lines = refusal(raw)
    assert lines == [
        f"nodeGroups.{name}.bootDisk.size: a {disk_type} disk is a multiple of 93 GB (Yandex Cloud disk types); "
        f"nearest: 93, 186 (with nodeGroupDefaults.bootDisk.type inherited: a group's map merges with the default's)"
        for name in ("a100", "v100")
    ]


def test_an_inherited_disk_type_with_the_default_size_is_named_at_the_type() -> None:
    raw = _dev()
    raw["nodeGroupDefaults"]["bootDisk"] = {"type": "network-ssd-nonreplicated"}
    for group in raw["nodeGroups"].values():
        del group["bootDisk"]
    (line,) = refusal(raw)
    assert line.startswith("nodeGroupDefaults.bootDisk.type: a network-ssd-nonreplicated disk is a multiple of 93 GB")
    assert "the default size is 96 GB: set bootDisk.size to a multiple (inherited by nodeGroups a100, v100)" in line


# --- a block a group writes, with keys nodeGroupDefaults fills in --------------------------------------------


@pytest.mark.parametrize(
    ("defaults", "group", "key", "inherited"),
    [
        ({"scale": {"fixed": {"size": 1}}}, {}, "scale", "nodeGroupDefaults.scale.fixed"),
        (
            {"mig": {"layout": "all-1g.10gb"}},
            {"mig": {"custom": {"1g.10gb": 7}}},
            "mig",
            "nodeGroupDefaults.mig.layout",
        ),
        (
            {"deploy": {"maxUnavailable": 0}},
            {"deploy": {"maxExpansion": 0}},
            "deploy",
            "nodeGroupDefaults.deploy.maxUnavailable",
        ),
    ],
)
def test_a_clash_with_an_inherited_key_names_both_the_block_and_the_default(
    defaults: dict[str, Any], group: dict[str, Any], key: str, inherited: str
) -> None:
    raw = _dev()
    raw["nodeGroupDefaults"].update(defaults)
    raw["nodeGroups"]["a100"].update(group)
    lines = refusal(raw)
    ours = [line for line in lines if line.startswith(f"nodeGroups.a100.{key}: ")]
    assert ours and all(f"(with {inherited} inherited" in line for line in ours), lines
    _lines_name_written_keys(raw, lines)


# --- secret keys that clash with another secret's default -------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda raw: (
                raw["cluster"].update(kubeconfigSecret="sshPrivateKey"),
                raw["bareMetal"]["ssh"].pop("privateKeySecret"),
            ),
            "cluster.kubeconfigSecret: 'sshPrivateKey' is already bareMetal.ssh.privateKeySecret (its default)",
        ),
        (
            lambda raw: (
                raw["cluster"].pop("kubeconfigSecret"),
                raw["bareMetal"]["ssh"].update(privateKeySecret="kubeconfig"),
            ),
            "bareMetal.ssh.privateKeySecret: 'kubeconfig' is already cluster.kubeconfigSecret (its default)",
        ),
        (
            lambda raw: (
                raw["kubeflow"]["dex"].pop("passwordHashSecret"),
                raw["cluster"].update(kubeconfigSecret="kubeflowDexPasswordHash"),
            ),
            "cluster.kubeconfigSecret: 'kubeflowDexPasswordHash' is already kubeflow.dex.passwordHashSecret (its default)",
        ),
        (
            lambda raw: raw["kubeflow"]["dex"].update(passwordHashSecret="sshPrivateKey"),
            "kubeflow.dex.passwordHashSecret: 'sshPrivateKey' is already bareMetal.ssh.privateKeySecret:",
        ),
    ],
)
def test_a_secret_key_clash_is_named_at_the_key_the_file_writes(edit: Any, expected: str) -> None:
    raw = copy.deepcopy(stack_raw("prod"))
    edit(raw)
    lines = refusal(raw)
    assert [line for line in lines if line.startswith(expected)], lines
    _lines_name_written_keys(raw, lines)


# --- the platform's own names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("gpu-operator", "the GPU Operator's namespace (gpuOperator.namespace)"),
        ("gpu-platform-system", "the node agent's namespace (nodeAgent.namespace)"),
        ("gpu-platform-proof", "the namespace of the driver steps' proof Jobs"),
        ("kyverno", "Kyverno's namespace (gpuOperator.kyverno.namespace)"),
    ],
)
def test_a_profile_may_not_take_a_namespace_of_the_platform(name: str, what: str) -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "kubeflow.profiles.0.name", name))
    assert line.startswith(f"kubeflow.profiles[0].name: {name!r} is {what}")
    assert "does not adopt a namespace that already exists" in line


def test_a_profile_may_not_take_the_namespace_the_stack_moved_the_operator_to() -> None:
    raw = set_path(stack_raw("prod"), "gpuOperator.namespace", "team-llm")
    (line,) = refusal(raw)
    assert line.startswith("kubeflow.profiles[1].name: 'team-llm' is the GPU Operator's namespace")


@pytest.mark.parametrize(
    "key", ["gpu-platform.io/node-agent.state", "gpu-platform.io/gpu-pool-v100", "gpu-platform.io/proof-run"]
)
def test_label_and_taint_keys_in_the_platforms_families_are_refused(key: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "nodeGroups.v100.labels", {key: "x"}))
    assert line.startswith(f"nodeGroups.v100.labels.{key}: key {key!r}: keys starting with")
    taints = ["nvidia.com/gpu=true:NoSchedule", f"{key}=x:NoSchedule"]
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.nodes.0.taints", taints))
    assert line.startswith(f"bareMetal.nodes[0].taints[1]: key {key!r}: keys starting with")


def test_a_users_own_key_under_the_platforms_domain_stays_legal() -> None:
    plan_raw(set_path(stack_raw("dev"), "nodeGroups.v100.labels", {"gpu-platform.io/role": "notebooks"}))


# --- a timeout times the upgrade waves ---------------------------------------------------------------------


def test_a_timeout_whose_product_with_the_waves_overflows_a_go_duration_is_refused() -> None:
    raw = set_path(stack_raw("dev"), "gpuOperator.timeoutSeconds", 2**31 - 1)
    raw = set_path(raw, "nodeGroups.v100.scale", {"fixed": {"size": 5000}})
    (line,) = refusal(raw)
    assert line.startswith("gpuOperator.timeoutSeconds: 2147483647 seconds per upgrade wave times 5000 waves")
    assert "at most 1844674 with these pools" in line
    plan_raw(set_path(raw, "gpuOperator.timeoutSeconds", 1844674))
