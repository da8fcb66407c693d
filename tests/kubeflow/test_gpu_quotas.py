"""Profile quotas on GPU resources are checked against what the stack's pools advertise (the MIG plan)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import plan_raw, refusal, set_path, stack_raw


def _with_quota(stack: str, quota: dict[str, str], index: int = 0, **section: Any) -> dict[str, Any]:
    raw = set_path(stack_raw(stack), f"kubeflow.profiles.{index}.resourceQuota", quota)
    for key, value in section.items():
        raw = set_path(raw, f"kubeflow.{key}", value)
    return raw


def test_dev_profile_caps_mig_slices_within_the_fleet() -> None:
    plan = plan_raw(stack_raw("dev"))
    assert plan.mig.strategy == "mixed"
    # a100: 7 x 1g.10gb per node, at most 2 nodes; v100: 1 GPU per node, at most 3 nodes.
    assert plan.kubeflow_gpus.capacity == {"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 14}
    assert plan.config.kubeflow is not None
    assert plan.config.kubeflow.profiles[0].resource_quota["requests.nvidia.com/mig-1g.10gb"] == "7"
    assert not [w for w in plan.warnings if "kubeflow" in w]


def test_prod_quotas_per_mig_resource_fit_the_nodes() -> None:
    plan = plan_raw(stack_raw("prod"))
    assert plan.kubeflow_gpus.capacity == {
        "nvidia.com/gpu": 4,
        "nvidia.com/mig-1g.10gb": 72,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 16,
    }


def test_a_quota_on_a_resource_no_pool_advertises_is_refused_with_what_the_fleet_offers() -> None:
    (line,) = refusal(_with_quota("dev", {"requests.nvidia.com/mig-3g.40gb": "1"}))
    assert line == (
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/mig-3g.40gb: no GPU pool of the stack advertises "
        "nvidia.com/mig-3g.40gb; the fleet offers: nvidia.com/gpu, nvidia.com/mig-1g.10gb"
    )


def test_under_the_single_strategy_a_mig_quota_is_refused_with_the_strategy_named() -> None:
    raw = set_path(stack_raw("dev"), "mig.strategy", "single")
    (line,) = refusal(raw)
    assert line == (
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/mig-1g.10gb: no GPU pool of the stack advertises "
        "nvidia.com/mig-1g.10gb (mig.strategy is single: MIG slices are advertised as nvidia.com/gpu; set "
        "mig.strategy: mixed); the fleet offers: nvidia.com/gpu"
    )


@pytest.mark.parametrize("key", ["limits.nvidia.com/gpu", "nvidia.com/gpu"])
def test_a_gpu_quota_that_kubernetes_never_counts_is_refused(key: str) -> None:
    (line,) = refusal(_with_quota("dev", {key: "1"}))
    assert line.startswith(f"kubeflow.profiles[0].resourceQuota.{key}: Kubernetes counts an extended resource"), line
    assert line.endswith("use requests.nvidia.com/gpu")


def test_a_gpu_quota_must_be_whole_devices() -> None:
    (line,) = refusal(_with_quota("dev", {"requests.nvidia.com/gpu": "500m"}))
    assert line == (
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/gpu: '500m': a quota of nvidia.com/gpu must be a "
        "whole number of devices, e.g. 2"
    )


def test_oversubscription_is_refused_by_default_with_each_share_and_each_pool() -> None:
    raw = _with_quota("prod", {"requests.nvidia.com/mig-3g.40gb": "10"}, index=0)
    (line,) = refusal(raw)
    assert line == (
        "kubeflow.profiles: requests.nvidia.com/mig-3g.40gb: the Profiles' quotas add up to 18 (team-vision 10, "
        "team-llm 8), the fleet provides 16 at its maximum size (bareMetal.nodes[1]: 8 per node x 1 node; "
        "bareMetal.nodes[2]: 8 per node x 1 node); lower the quotas, grow the pools, or set kubeflow.gpuQuotaCheck: "
        "warn to oversubscribe"
    )


def test_oversubscription_with_warn_plans_and_says_so() -> None:
    raw = _with_quota("dev", {"requests.nvidia.com/mig-1g.10gb": "20"}, gpuQuotaCheck="warn")
    plan = plan_raw(raw)
    (warning,) = [w for w in plan.warnings if w.startswith("kubeflow.")]
    assert warning == (
        "kubeflow.profiles: requests.nvidia.com/mig-1g.10gb: the Profiles' quotas add up to 20 (team-notebooks 20), "
        "the fleet provides 14 at its maximum size (nodeGroups.a100: 7 per node x 2 nodes); oversubscribed "
        "(kubeflow.gpuQuotaCheck: warn)"
    )


def test_a_resource_the_fleet_lacks_is_refused_even_with_warn() -> None:
    lines = refusal(_with_quota("dev", {"requests.nvidia.com/mig-2g.20gb": "1"}, gpuQuotaCheck="warn"))
    assert [line.split(":")[0] for line in lines] == [
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/mig-2g.20gb"
    ]


def test_quotas_add_up_across_profiles_and_a_bigger_pool_fits_them() -> None:
    raw = stack_raw("dev")
    second = {"name": "team-b", "owner": "b@example.com", "resourceQuota": {"requests.nvidia.com/mig-1g.10gb": "8"}}
    raw = set_path(raw, "kubeflow.profiles", [*raw["kubeflow"]["profiles"], second])
    (line,) = refusal(raw)
    assert "add up to 15 (team-notebooks 7, team-b 8), the fleet provides 14" in line
    plan_raw(set_path(raw, "nodeGroups.a100.scale.auto.max", 3))  # 21 slices: fits


def test_other_quotas_are_not_gpu_checked() -> None:
    plan_raw(_with_quota("dev", {"requests.cpu": "64", "requests.memory": "256Gi", "pods": "100"}))


def test_an_unknown_check_mode_is_refused_by_key() -> None:
    lines = refusal(set_path(stack_raw("dev"), "kubeflow.gpuQuotaCheck", "ignore"))
    assert any(line.startswith("kubeflow.gpuQuotaCheck: ") and "warn" in line and "refuse" in line for line in lines)


def test_an_invalid_mig_plan_is_reported_alone_without_a_quota_check() -> None:
    """Forcing single on prod's mixed layouts is the MIG section's problem; quotas are checked once it is valid."""
    (line,) = refusal(set_path(stack_raw("prod"), "mig.strategy", "single"))
    assert line.startswith("mig.strategy: single cannot serve GPUs with several profile types")
