"""One driver owner per node, a driver new enough for the workloads' CUDA, and able to drive every GPU."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from components.catalog.gpu_operator_chart import DEFAULT_DRIVER_VERSION
from policies.gpu_policies.drivers import (
    driver_supports_cuda,
    driver_supports_gpu_architectures,
    gpu_nodes_have_one_driver_owner,
    host_driver_removal_required,
)
from policies.gpu_policies.names import NODE_GROUP_TYPE, NODE_PATCH_TYPE, NVIDIA_DRIVER_TYPE, OPT_IN_LABEL, OPT_IN_VALUE
from tests.policies.support import (
    RELEASE_TYPE,
    config_for,
    node_group,
    operator_namespace,
    operator_release,
    run_stack,
    stack,
    urn,
)

OPERATOR_580 = operator_release({"driver": {"enabled": True, "version": "580.95.05"}})
HOST_OWNED = operator_release({"driver": {"enabled": False}})

# -- host-driver-removal-required --------------------------------------------------------------


def test_a_preinstalled_group_opted_in_to_removal_passes() -> None:
    group = node_group(gpu_environment="runc_drivers_cuda", node_labels={OPT_IN_LABEL: OPT_IN_VALUE})
    assert run_stack(host_driver_removal_required, stack(group, release=OPERATOR_580)).messages == []


def test_a_preinstalled_group_without_removal_under_the_operator_driver_is_refused() -> None:
    group = node_group(gpu_environment="runc_drivers_cuda")
    outcome = run_stack(host_driver_removal_required, stack(group, release=OPERATOR_580))
    assert outcome.messages == [
        "node group g0 boots with a preinstalled driver (gpuEnvironment runc_drivers_cuda) while GPU Operator "
        "release gpu-operator-release installs its own (driver.enabled is true): the operator marks such nodes "
        "pre-installed and never manages their driver, so two drivers fight over the fleet; enable host-driver "
        "removal (node label gpu-platform.io/host-driver-removal=enabled, config hostDriverRemoval: true) or "
        "recreate the group with gpuEnvironment runc"
    ]
    assert outcome.urns == [urn(NODE_GROUP_TYPE, "g0")]
    assert host_driver_removal_required.enforcement_level is EnforcementLevel.MANDATORY


def test_the_chart_enables_the_driver_when_values_do_not_say() -> None:
    group = node_group(gpu_environment="runc_drivers_cuda")
    outcome = run_stack(host_driver_removal_required, stack(group, release=operator_release({})))
    assert len(outcome.messages) == 1


def test_a_host_owned_driver_needs_no_removal() -> None:
    group = node_group(gpu_environment="runc_drivers_cuda")
    outcome = run_stack(host_driver_removal_required, stack(group, release=HOST_OWNED))
    assert outcome.messages == [] and outcome.not_applicable is not None


def test_an_opt_in_label_with_another_value_does_not_count() -> None:
    group = node_group(gpu_environment="runc_drivers_cuda", node_labels={OPT_IN_LABEL: "true"})
    assert len(run_stack(host_driver_removal_required, stack(group, release=OPERATOR_580)).messages) == 1


# -- driver-supports-cuda ----------------------------------------------------------------------


def test_without_required_cuda_the_check_is_not_applicable() -> None:
    outcome = run_stack(driver_supports_cuda, stack(node_group(), release=OPERATOR_580))
    assert outcome.not_applicable == "requiredCuda is not configured"
    assert outcome.messages == []


def test_a_driver_new_enough_for_the_required_cuda_passes() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="12.6")
    assert run_stack(driver_supports_cuda, stack(node_group(), release=OPERATOR_580), config=config).messages == []


def test_a_driver_too_old_for_the_required_cuda_is_refused() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="13.1")
    outcome = run_stack(driver_supports_cuda, stack(node_group(), release=OPERATOR_580), config=config)
    assert outcome.messages == [
        "release gpu-operator-release driver.version: driver 580.95.05 is too old for CUDA 13.1 workloads; "
        "CUDA 13.1 needs driver 590.44.01 or newer (strict check)"
    ]
    assert outcome.urns == [urn(RELEASE_TYPE, "gpu-operator-release")]
    assert driver_supports_cuda.enforcement_level is EnforcementLevel.MANDATORY


def test_permissive_mode_accepts_minor_version_compatibility() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="13.1", cudaCheck="permissive")
    assert run_stack(driver_supports_cuda, stack(node_group(), release=OPERATOR_580), config=config).messages == []


def test_a_host_owned_driver_is_read_from_the_namespace_annotation() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="12.9")
    namespace = operator_namespace(driver_version="570.124.06", owner="host")
    outcome = run_stack(driver_supports_cuda, stack(release=HOST_OWNED, namespace=namespace), config=config)
    assert outcome.messages == [
        "namespace gpu-operator-namespace annotation gpu-platform.io/driver-version: driver 570.124.06 is too old "
        "for CUDA 12.9 workloads; CUDA 12.9 needs driver 575.51.03 or newer (strict check)"
    ]


def test_the_chart_default_driver_is_checked_when_values_name_none() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="13.3")
    outcome = run_stack(driver_supports_cuda, stack(release=operator_release({})), config=config)
    assert outcome.messages[0].startswith(
        f"release gpu-operator-release (the chart v26.7.0 default driver.version): driver {DEFAULT_DRIVER_VERSION}"
    )


def test_an_unknown_cuda_version_is_reported_not_crashed_on() -> None:
    config = config_for(driver_supports_cuda, requiredCuda="9.9")
    outcome = run_stack(driver_supports_cuda, stack(release=OPERATOR_580), config=config)
    assert outcome.messages[0].startswith("requiredCuda: CUDA 9.9 is not in the catalog")


# -- driver-supports-gpu-architectures --------------------------------------------------------


def test_an_r580_driver_drives_volta() -> None:
    assert run_stack(driver_supports_gpu_architectures, stack(node_group(), release=OPERATOR_580)).messages == []


def test_the_r595_chart_default_refuses_volta_nodes() -> None:
    outcome = run_stack(driver_supports_gpu_architectures, stack(node_group(), release=operator_release({})))
    assert outcome.messages == [
        f"release gpu-operator-release (the chart v26.7.0 default driver.version): driver {DEFAULT_DRIVER_VERSION} "
        "(R595) does not support Volta GPUs; use an R580 driver or older (R580 is the last branch that supports "
        "Volta (NVIDIA feature deprecation schedule)); affected models: V100-32GB"
    ]
    assert driver_supports_gpu_architectures.enforcement_level is EnforcementLevel.MANDATORY


def test_models_on_bare_metal_node_patches_are_checked() -> None:
    patch = {"metadata": {"name": "node-1", "labels": {"gpu-platform.io/gpu-model": "V100-32GB"}}}
    namespace = operator_namespace(driver_version="595.45.04", models="", owner="host")
    resources = [(NODE_PATCH_TYPE, "gpu-nodes-node-1", patch), *stack(release=HOST_OWNED, namespace=namespace)]
    outcome = run_stack(driver_supports_gpu_architectures, resources)
    assert "driver 595.45.04 (R595) does not support Volta GPUs" in outcome.text


def test_models_declared_on_the_operator_namespace_are_checked() -> None:
    namespace = operator_namespace(driver_version="595.45.04", models="H100-80GB,V100-32GB", owner="host")
    outcome = run_stack(driver_supports_gpu_architectures, stack(release=HOST_OWNED, namespace=namespace))
    assert len(outcome.messages) == 1 and "affected models: V100-32GB" in outcome.text


def test_an_unknown_gpu_model_is_reported() -> None:
    outcome = run_stack(driver_supports_gpu_architectures, stack(node_group(model="X100"), release=OPERATOR_580))
    assert outcome.messages[0].startswith("node group g0: unknown GPU model 'X100'")


def test_a_stack_without_gpu_models_is_not_applicable() -> None:
    assert run_stack(driver_supports_gpu_architectures, stack(release=OPERATOR_580)).not_applicable


# -- per-pool drivers: each NVIDIADriver against its own pools ----------------------------------

PER_POOL = operator_release(
    {"driver": {"enabled": True, "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}}
)


def _nvidia_driver(name: str, version: str, group: str, cuda: str = "") -> tuple[str, str, dict]:
    annotations = {"gpu-platform.io/cuda": cuda} if cuda else {}
    props = {
        "metadata": {"name": f"gpu-platform-{name}", "annotations": annotations},
        "spec": {"version": version, "nodeSelector": {"gpu-platform.io/driver": group}},
    }
    return (NVIDIA_DRIVER_TYPE, f"gpu-drivers-{name}", props)


def _mixed_fleet(*drivers: tuple[str, str, dict]) -> list:
    v100 = node_group(model="V100-32GB", node_labels={"gpu-platform.io/driver": "v100"})
    a100 = node_group(model="A100-80GB", node_labels={"gpu-platform.io/driver": "a100"})
    return [*stack(v100, a100, release=PER_POOL), *drivers]


def test_an_r595_driver_selecting_only_a100_nodes_passes_next_to_v100_on_r580() -> None:
    resources = _mixed_fleet(_nvidia_driver("v100", "580.95.05", "v100"), _nvidia_driver("a100", "595.91.07", "a100"))
    assert run_stack(driver_supports_gpu_architectures, resources).messages == []


def test_an_r595_driver_selecting_v100_nodes_is_refused_by_its_own_selector() -> None:
    """The models come from the nodes the selector matches (no annotation here): the check cannot be skipped."""
    resources = _mixed_fleet(_nvidia_driver("v100", "595.91.07", "v100"), _nvidia_driver("a100", "595.91.07", "a100"))
    outcome = run_stack(driver_supports_gpu_architectures, resources)
    assert outcome.messages == [
        "NVIDIADriver gpu-platform-v100 spec.version: driver 595.91.07 (R595) does not support Volta GPUs; use an "
        "R580 driver or older (R580 is the last branch that supports Volta (NVIDIA feature deprecation schedule)); "
        "affected models: V100-32GB"
    ]
    assert outcome.urns == [urn(NVIDIA_DRIVER_TYPE, "gpu-drivers-v100")]


def test_each_nvidiadriver_meets_the_cuda_level_its_pools_declare() -> None:
    resources = _mixed_fleet(
        _nvidia_driver("v100", "580.95.05", "v100", cuda="12.6"),
        _nvidia_driver("a100", "580.95.05", "a100", cuda="13.2"),
    )
    outcome = run_stack(driver_supports_cuda, resources, config=config_for(driver_supports_cuda, requiredCuda="12.6"))
    assert outcome.messages == [
        "NVIDIADriver gpu-platform-a100 spec.version: driver 580.95.05 is too old for CUDA 13.2 workloads; CUDA 13.2 "
        "needs driver 595.45.04 or newer (strict check) (the CUDA level its pools declare)"
    ]


# -- gpu-nodes-have-one-driver-owner ------------------------------------------------------------


def test_every_gpu_node_group_selected_by_exactly_one_nvidiadriver_passes() -> None:
    resources = _mixed_fleet(_nvidia_driver("v100", "580.95.05", "v100"), _nvidia_driver("a100", "595.91.07", "a100"))
    assert run_stack(gpu_nodes_have_one_driver_owner, resources).messages == []
    assert gpu_nodes_have_one_driver_owner.enforcement_level is EnforcementLevel.MANDATORY


def test_a_gpu_node_group_no_nvidiadriver_selects_is_refused_by_name() -> None:
    """The silent gap: without a default resource its nodes get no owner and no driver, and nothing reports it."""
    outcome = run_stack(gpu_nodes_have_one_driver_owner, _mixed_fleet(_nvidia_driver("v100", "580.95.05", "v100")))
    assert outcome.messages == [
        "node group g1 is selected by no NVIDIADriver and release gpu-operator-release deploys no default one: the "
        "operator gives its nodes no owner (nvidia.com/gpu-operator.driver.owner) and no driver, and reports "
        "nothing; label the nodes with the gpu-platform.io/driver of an NVIDIADriver"
    ]
    assert outcome.urns == [urn(NODE_GROUP_TYPE, "g1")]


def test_a_node_two_nvidiadrivers_select_is_refused() -> None:
    both = ("v100", "580.95.05", "v100")
    wide = (NVIDIA_DRIVER_TYPE, "gpu-drivers-all", {"metadata": {"name": "all"}, "spec": {"version": "580.95.05"}})
    outcome = run_stack(gpu_nodes_have_one_driver_owner, _mixed_fleet(_nvidia_driver(*both), wide))
    assert outcome.messages[0].startswith("node group g0 is selected by NVIDIADrivers all, gpu-platform-v100:")
    assert len(outcome.messages) == 1  # g1 (a100) is selected by "all" only


def test_the_charts_default_resource_takes_the_nodes_no_other_selects() -> None:
    release = operator_release({"driver": {"enabled": True, "nvidiaDriverCRD": {"enabled": True}}})
    v100 = node_group(model="V100-32GB", node_labels={"gpu-platform.io/driver": "v100"})
    a100 = node_group(model="A100-80GB")
    resources = [*stack(v100, a100, release=release), _nvidia_driver("v100", "580.95.05", "v100")]
    assert run_stack(gpu_nodes_have_one_driver_owner, resources).messages == []


def test_a_bare_metal_gpu_node_without_an_owner_is_refused() -> None:
    patch = (NODE_PATCH_TYPE, "gpu-nodes-n1", {"metadata": {"name": "n1", "labels": {"gpu-platform.io/gpu": "true"}}})
    outcome = run_stack(gpu_nodes_have_one_driver_owner, [*stack(release=PER_POOL), patch])
    assert outcome.messages[0].startswith("node patch gpu-nodes-n1 is selected by no NVIDIADriver")


def test_the_clusterpolicy_driver_needs_no_owner() -> None:
    assert run_stack(gpu_nodes_have_one_driver_owner, stack(node_group(), release=OPERATOR_580)).not_applicable
