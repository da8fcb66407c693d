"""The GPU Operator's pods tolerate every GPU node taint (what the chart will really render)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi_policy import EnforcementLevel

from components.catalog.kubernetes import TAINT_EFFECTS, parse_taint
from policies.gpu_policies.names import NODE_PATCH_TYPE
from policies.gpu_policies.scheduling import gpu_operator_tolerates_gpu_taints as policy
from tests.policies.support import RELEASE_TYPE, node_group, operator_release, run_stack, stack, urn
from tests.properties import examples

WORKLOAD_TAINT = "gpu-platform.io/workload=notebooks:NoSchedule"
GPU_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
WORKLOAD = {"key": "gpu-platform.io/workload", "operator": "Equal", "value": "notebooks", "effect": "NoSchedule"}


def _values(daemonsets: list | None, nfd: list | None = None) -> dict:
    values: dict = {"driver": {"enabled": True}}
    if daemonsets is not None:
        values["daemonsets"] = {"tolerations": daemonsets}
    if nfd is not None:
        values["node-feature-discovery"] = {"worker": {"tolerations": nfd}}
    return values


def test_tolerations_covering_every_taint_pass() -> None:
    group = node_group(taints=["nvidia.com/gpu=true:NoSchedule", WORKLOAD_TAINT])
    release = operator_release(_values([GPU_EXISTS, WORKLOAD], [GPU_EXISTS, WORKLOAD]))
    assert run_stack(policy, stack(group, release=release)).messages == []


def test_the_chart_default_tolerates_only_the_nvidia_taint() -> None:
    group = node_group(taints=["nvidia.com/gpu=true:NoSchedule", WORKLOAD_TAINT])
    outcome = run_stack(policy, stack(group, release=operator_release(_values(None))))
    assert outcome.messages == [
        "GPU Operator release gpu-operator-release: daemonsets.tolerations does not tolerate "
        "gpu-platform.io/workload=notebooks:NoSchedule (on node group g0), so the operator's pods never start on "
        "those GPU nodes and they advertise no GPUs; add {key: gpu-platform.io/workload, operator: Equal, "
        "value: notebooks, effect: NoSchedule}",
        "GPU Operator release gpu-operator-release: node-feature-discovery.worker.tolerations does not tolerate "
        "gpu-platform.io/workload=notebooks:NoSchedule (on node group g0), so the operator's pods never start on "
        "those GPU nodes and they advertise no GPUs; add {key: gpu-platform.io/workload, operator: Equal, "
        "value: notebooks, effect: NoSchedule}",
    ]
    assert outcome.urns == [urn(RELEASE_TYPE, "gpu-operator-release")] * 2
    assert policy.enforcement_level is EnforcementLevel.MANDATORY


def test_setting_tolerations_drops_the_chart_default_for_the_nvidia_taint() -> None:
    group = node_group(taints=["nvidia.com/gpu=true:NoSchedule"])
    outcome = run_stack(policy, stack(group, release=operator_release(_values([WORKLOAD], [GPU_EXISTS]))))
    assert len(outcome.messages) == 1
    assert "daemonsets.tolerations does not tolerate nvidia.com/gpu=true:NoSchedule" in outcome.text


def test_a_disabled_nfd_subchart_is_not_checked() -> None:
    group = node_group(taints=[WORKLOAD_TAINT])
    values = {**_values([WORKLOAD], []), "nfd": {"enabled": False}}
    assert run_stack(policy, stack(group, release=operator_release(values))).messages == []


def test_taints_of_bare_metal_node_patches_count_too() -> None:
    patch = {
        "metadata": {"name": "node-1"},
        "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}]},
    }
    resources = [(NODE_PATCH_TYPE, "gpu-nodes-node-1", patch), *stack(release=operator_release(_values(None)))]
    outcome = run_stack(policy, resources)
    assert "does not tolerate dedicated=gpu:NoExecute (on node patch gpu-nodes-node-1)" in outcome.text


def test_a_stack_without_the_operator_is_not_applicable() -> None:
    assert run_stack(policy, stack(node_group())).not_applicable == "no GPU Operator release in this stack"


_taints = st.lists(
    st.builds(
        lambda key, value, effect: f"{key}={value}:{effect}",
        st.sampled_from(["nvidia.com/gpu", "dedicated", "gpu-platform.io/workload"]),
        st.sampled_from(["", "true", "notebooks"]),
        st.sampled_from(TAINT_EFFECTS),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=examples(60))
@given(taints=_taints, data=st.data())
def test_exactly_the_taints_left_untolerated_are_reported(taints: list[str], data: st.DataObject) -> None:
    parsed = sorted({parse_taint(t) for t in taints}, key=str)
    dropped = data.draw(st.sets(st.sampled_from(parsed)), label="dropped")
    tolerations = [taint.toleration() for taint in parsed if taint not in dropped]
    release = operator_release({"daemonsets": {"tolerations": tolerations}, "nfd": {"enabled": False}})
    outcome = run_stack(policy, stack(node_group(taints=taints), release=release))
    expected = sorted(str(t) for t in dropped if t.effect != "PreferNoSchedule")
    reported = sorted(str(t) for t in parsed if f"tolerate {t} (on" in outcome.text or f"; {t} (on" in outcome.text)
    assert reported == expected
