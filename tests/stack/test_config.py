"""The typed stack config: valid stacks parse, invalid ones are refused with the key path and what is allowed."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.base.problems import StackConfigError
from components.stack.config import parse_stack_config
from tests.helpers import delete_path, plan_raw, refusal, set_path, stack_raw
from tests.properties import examples

V100 = "nodeGroups.v100"


def test_dev_stack_parses() -> None:
    stack = parse_stack_config(stack_raw("dev"))
    group = stack.node_groups["v100"]
    assert group.model.key == "V100-32GB"
    assert group.gpu_environment == "runc"
    assert group.maintenance.auto_upgrade is False and group.maintenance.auto_repair is True


def test_gpu_count_the_platform_does_not_offer() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.resources.gpus", 3))
    assert f"{V100}.resources.gpus: 3 is not offered on gpu-standard-v2; allowed: 1, 2, 4, 8" in lines


def test_shape_must_match_the_gpu_count() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.resources.gpus", 2))
    assert any(
        line.startswith(f"{V100}.resources: cores 8, memory 48") and "cores 16, memory 96" in line for line in lines
    )


def test_unknown_key_is_refused_with_the_allowed_keys() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.preemptable", True))
    assert len(lines) == 1
    assert lines[0].startswith(f"{V100}.preemptable: unknown key; allowed keys:")
    assert "preemptible" in lines[0] and "gpuEnvironment" in lines[0]


def test_malformed_taint() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.taints", ["nvidia.com/gpu:Never"]))
    assert any(line.startswith(f"{V100}.taints[0]: taint 'nvidia.com/gpu:Never': effect 'Never'") for line in lines)


def test_a_taint_without_a_value_is_accepted_and_sent_to_yandex_with_the_equals_sign() -> None:
    stack = parse_stack_config(set_path(stack_raw("dev"), f"{V100}.taints", ["nvidia.com/gpu:NoSchedule"]))
    assert stack.node_groups["v100"].taints == ["nvidia.com/gpu=:NoSchedule"]


def test_gpu_group_needs_a_noschedule_taint() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.taints", ["a=b:PreferNoSchedule"]))
    assert any(
        line.startswith(f"{V100}.taints: a GPU node group has no NoSchedule taint (taints: a=b:PreferNoSchedule)")
        for line in lines
    )


def test_gpu_environment_is_one_of_two() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.gpuEnvironment", "docker"))
    assert lines == [f"{V100}.gpuEnvironment: 'docker' is not allowed; allowed: 'runc' or 'runc_drivers_cuda'"]


def test_zone_without_capacity() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.location.zone", "ru-central1-d"))
    assert (
        f"{V100}.location.zone: ru-central1-d has no gpu-standard-v2 capacity; allowed: ru-central1-a, ru-central1-b"
        in lines
    )


def test_autoscale_bounds_are_ordered() -> None:
    lines = refusal(set_path(stack_raw("dev"), f"{V100}.scale.auto.initial", 5))
    assert any(line.startswith(f"{V100}.scale.auto: need min <= initial <= max") for line in lines)


def test_unnamed_chip_platform_needs_a_gpu_model() -> None:
    raw = set_path(stack_raw("dev"), f"{V100}.platform", "gpu-standard-v4")
    raw = set_path(raw, f"{V100}.resources", {"gpus": 1, "cores": 22, "memory": 220})
    raw = set_path(raw, f"{V100}.location.zone", "ru-central1-d")
    lines = refusal(raw)
    assert any(line.startswith(f"{V100}.gpuModel: is required on gpu-standard-v4") for line in lines)
    stack = parse_stack_config(set_path(raw, f"{V100}.gpuModel", "H200-141GB"))
    assert stack.node_groups["v100"].model.key == "H200-141GB"


def test_missing_required_key() -> None:
    lines = refusal(delete_path(stack_raw("dev"), f"{V100}.gpuEnvironment"))
    assert lines == [f"{V100}.gpuEnvironment: is required"]


def test_every_problem_is_reported_at_once() -> None:
    raw = set_path(stack_raw("dev"), f"{V100}.resources.gpus", 3)
    raw = set_path(raw, f"{V100}.taints", ["bad"])
    assert len(refusal(raw)) >= 2


def test_kubernetes_version_range() -> None:
    lines = refusal(set_path(stack_raw("dev"), "cluster.kubernetesVersion", "1.26"))
    assert lines == ["cluster.kubernetesVersion: 1.26 is not supported; allowed: 1.28 to 1.37"]


def test_unknown_cuda_version() -> None:
    lines = refusal(set_path(stack_raw("dev"), "cuda.version", "12.7"))
    assert len(lines) == 1 and lines[0].startswith("cuda.version: CUDA 12.7 is not in the catalog")


# --- property test: malformed configs are always refused with a key path, never with a traceback ---

_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=10_000),
    st.text(max_size=12),
    st.lists(st.text(max_size=6), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        path = (*prefix, key)
        paths.append(path)
        paths.extend(_paths(value, path))
    return paths


_DEV = stack_raw("dev")
_DEV_PATHS = _paths(_DEV)


def _node(path: tuple[Any, ...]) -> Any:
    node: Any = _DEV
    for part in path:
        node = node[part]
    return node


# Maps whose keys are the user's (Kubernetes labels, quota resources, chart values checked elsewhere).
_FREE_MAPS = {"labels", "resourceQuota", "extraValues"}
_DICT_PATHS = {path for path in _DEV_PATHS if isinstance(_node(path), dict)}


_FLEET_SECTIONS = {"nodeGroups", "nodeGroupDefaults", "mig"}
_QUOTA_PATHS = ("kubeflow.profiles",)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(_DEV_PATHS), value=_JUNK, extra=st.booleans())
def test_malformed_configs_are_refused_with_a_key_path(path: tuple[Any, ...], value: Any, extra: bool) -> None:
    raw = set_path(_DEV, (*path, "zzUnknown"), value) if extra and path in _DICT_PATHS else set_path(_DEV, path, value)
    try:
        plan_raw(raw)
    except StackConfigError as error:
        assert error.problems, "a refusal names at least one problem"
        named = any(problem.path.startswith(str(path[0])) for problem in error.problems)
        # A pool's layout or size decides what the fleet advertises, so a valid but different pool can
        # leave a Profile's GPU quota unbacked: refused at the quota, which names the pools it counted.
        follows = path[0] in _FLEET_SECTIONS and all(p.path.startswith(_QUOTA_PATHS) for p in error.problems)
        assert named or follows, error.problems
        for problem in error.problems:
            assert problem.path and problem.path != "(root)"
            assert problem.message
            assert "Traceback" not in problem.message
    else:
        # Some junk is valid (another label value, a bigger disk); an unknown key never is.
        free_map = bool(_FREE_MAPS & set(path))
        assert not (extra and path in _DICT_PATHS and not free_map), f"unknown key accepted at {path}"


def test_node_group_kubernetes_version_format() -> None:
    assert refusal(set_path(stack_raw("dev"), f"{V100}.kubernetesVersion", "1.30.2")) == [
        f"{V100}.kubernetesVersion: '1.30.2' must be MAJOR.MINOR, e.g. 1.30"
    ]


# ----------------------------------------------------------------------------------------------
# The cluster block is discriminated by kind; nodeGroupDefaults are inherited by every group


def test_cluster_keys_of_the_other_kind_are_refused_with_the_keys_this_kind_takes() -> None:
    raw = set_path(stack_raw("dev"), "cluster.kubeconfigSecret", "kubeconfig")
    (line,) = refusal(raw)
    assert line == (
        "cluster.kubeconfigSecret: unknown key; allowed keys: clusterId, endpoint, kind, kubernetesVersion, name"
    )


def test_the_old_nested_yandex_block_is_refused_by_name() -> None:
    raw = set_path(stack_raw("dev"), "cluster.yandex", {"clusterId": "cat1", "folderId": "b1g"})
    assert refusal(raw) == [
        "cluster.yandex: unknown key; allowed keys: clusterId, endpoint, kind, kubernetesVersion, name"
    ]


def test_an_unknown_cluster_kind_names_the_kinds_allowed() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "cluster.kind", "gke"))
    assert line == "cluster.kind: 'gke' is not allowed; allowed: 'yandex', 'bare-metal', 'existing'"


def test_a_missing_required_key_of_a_kind_is_named_without_the_tag() -> None:
    (line,) = refusal(delete_path(stack_raw("dev"), "cluster.clusterId"))
    assert line == "cluster.clusterId: is required"


def test_the_dev_file_with_defaults_plans_like_the_groups_written_out() -> None:
    with_defaults = plan_raw(stack_raw("dev", expand_defaults=False))
    written_out = plan_raw(stack_raw("dev"))
    assert "nodeGroupDefaults" in stack_raw("dev", expand_defaults=False)
    assert with_defaults.config.node_groups == written_out.config.node_groups
    assert with_defaults.pools == written_out.pools


def test_a_group_overrides_an_inherited_key_and_the_others_keep_the_default() -> None:
    raw = stack_raw("dev", expand_defaults=False)
    raw = set_path(raw, "nodeGroups.a100.location", {"subnetId": "e9bother"})
    stack = parse_stack_config(raw)
    assert stack.node_groups["a100"].location.subnet_id == "e9bother"
    assert stack.node_groups["a100"].location.zone == "ru-central1-a", "maps merge key by key"
    assert stack.node_groups["v100"].location.subnet_id == "e9bexampledevsubnet0"
    assert stack.node_groups["v100"].taints == [
        "nvidia.com/gpu=true:NoSchedule",
        "gpu-platform.io/workload=notebooks:NoSchedule",
    ], "lists replace the default"
    assert stack.node_groups["a100"].taints == ["nvidia.com/gpu=true:NoSchedule"]


def test_a_bad_default_is_refused_at_its_own_key() -> None:
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroupDefaults.preemptible", "sometimes")
    lines = refusal(raw)
    assert any(line.startswith("nodeGroupDefaults.preemptible: ") for line in lines), lines
    raw = set_path(stack_raw("dev", expand_defaults=False), "nodeGroupDefaults.zzUnknown", 1)
    assert any(
        line.startswith("nodeGroupDefaults.zzUnknown: unknown key; allowed keys: bootDisk") for line in refusal(raw)
    )
