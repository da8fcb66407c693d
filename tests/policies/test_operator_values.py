"""GPU Operator values use only the value paths the pinned chart reads."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from policies.gpu_policies.operator_values import gpu_operator_values_contract as policy
from tests.policies.support import RELEASE_TYPE, operator_release, run_resource


def test_values_within_the_contract_pass_with_wire_format_numbers() -> None:
    values = {
        "driver": {"enabled": True, "version": "580.95.05", "upgradePolicy": {"maxParallelUpgrades": 1.0}},
        "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    }
    assert run_resource(policy, RELEASE_TYPE, operator_release(values)).messages == []


def test_keys_the_chart_ignores_are_refused_with_the_contracts_advice() -> None:
    values = {"driver": {"useOpenKernelModules": True}, "daemonsets": {"nodeSelector": {"gpu": "true"}}}
    outcome = run_resource(policy, RELEASE_TYPE, operator_release(values), name="gpu-operator-release")
    assert outcome.messages == [
        "GPU Operator release gpu-operator-release: `daemonsets.nodeSelector` is not a key of gpu-operator v26.7.0; "
        "`daemonsets` accepts: annotations, labels, priorityClassName, rollingUpdate, tolerations, updateStrategy "
        "(operands are placed by the operator's nvidia.com/gpu.deploy.<operand> node labels; restrict them with "
        "node-feature-discovery.worker.nodeSelector or the node label nvidia.com/gpu.deploy.operands=false)",
        "GPU Operator release gpu-operator-release: `driver.useOpenKernelModules` is ignored by gpu-operator "
        "v26.7.0: deprecated and made a no-op (values.yaml note); use driver.kernelModuleType",
    ]
    assert policy.enforcement_level is EnforcementLevel.MANDATORY


def test_a_wrong_value_type_is_refused() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, operator_release({"driver": {"enabled": "true"}}))
    assert "`driver.enabled` must be a boolean, got str 'true' (use True without quotes)" in outcome.text


def test_a_chart_version_without_a_contract_is_refused() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, operator_release({}, version="v25.3.0"), name="op")
    assert outcome.messages == [
        "GPU Operator release op: gpu-operator chart version 'v25.3.0' has no values contract; supported: v26.7.0"
    ]


def test_other_charts_are_not_checked() -> None:
    props = {"chart": "kyverno", "version": "3.3.0", "values": {"anything": True}}
    assert run_resource(policy, RELEASE_TYPE, props).messages == []
