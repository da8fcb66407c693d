"""MIG layouts in a mig-parted config can be placed on the GPU model their device filter selects."""

from __future__ import annotations

from typing import Any

import yaml
from pulumi_policy import EnforcementLevel

from components.catalog.mig import DeviceLayout, mig_gpu, render_parted_config
from policies.gpu_policies.mig import mig_layouts_placeable as policy
from tests.policies.support import RELEASE_TYPE, operator_release, run_resource

H100 = list(mig_gpu("H100-80GB").pci_device_ids)
A100_40 = list(mig_gpu("A100-40GB").pci_device_ids)


def _release(parted: dict[str, Any] | str) -> dict[str, Any]:
    text = parted if isinstance(parted, str) else yaml.safe_dump(parted, sort_keys=False)
    values = {"migManager": {"enabled": True, "config": {"create": True, "data": {"config.yaml": text}}}}
    return operator_release(values)


def _config(name: str, device_filter: list[str] | None, layout: dict[str, int]) -> dict[str, Any]:
    entry: dict[str, Any] = {"devices": "all", "mig-enabled": True, "mig-devices": layout}
    if device_filter is not None:
        entry["device-filter"] = device_filter
    return {"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}], name: [entry]}}


def test_a_config_rendered_by_the_catalog_passes() -> None:
    parted = render_parted_config(
        {"balanced": [DeviceLayout("H100-80GB", "all", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})]}
    )
    assert run_resource(policy, RELEASE_TYPE, _release(parted)).messages == []


def test_a_layout_that_does_not_fit_the_gpu_is_refused_with_the_placement_story() -> None:
    layout = {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("big", H100, layout)), name="op")
    assert outcome.messages == [
        "op config.yaml: config 'big' entry 0: H100-80GB: no free placement left for 1g.10gb (allowed starts "
        "[0, 1, 2, 3, 4, 5, 6]; memory slices 0-3 already used by 4g.40gb, memory slices 4-7 already used by "
        "3g.40gb); the layout needs 8 of 7 compute slices and 9 of 8 memory slices"
    ]
    assert policy.enforcement_level is EnforcementLevel.MANDATORY


def test_the_same_profile_name_means_different_things_per_model() -> None:
    # 1g.10gb is one memory slice on an H100-80GB (7 fit) but two on an A100-40GB (at most 4).
    layout = {"1g.10gb": 7}
    assert run_resource(policy, RELEASE_TYPE, _release(_config("seven", H100, layout))).messages == []
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("seven", A100_40, layout)), name="op")
    assert outcome.messages == [
        "op config.yaml: config 'seven' entry 0: A100-40GB: 7 x 1g.10gb requested; at most 4 per GPU"
    ]


def test_an_unknown_profile_for_the_filtered_model_is_refused() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("bad", H100, {"1g.5gb": 7})))
    assert "H100-80GB: unknown MIG profile '1g.5gb'" in outcome.text


def test_device_filter_ids_are_matched_case_insensitively_as_strings() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("one", "0x233010de", {"7g.80gb": 1})))  # type: ignore[arg-type]
    assert outcome.messages == []


def test_an_unfiltered_layout_must_fit_some_model_offering_its_profiles() -> None:
    assert run_resource(policy, RELEASE_TYPE, _release(_config("any", None, {"1g.10gb": 7}))).messages == []
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("any", None, {"7g.80gb": 2})))
    assert "config 'any' entry 0:" in outcome.text and "7g.80gb" in outcome.text


def test_a_filter_of_an_unknown_gpu_is_reported() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, _release(_config("x", ["0xFFFF10DE"], {"1g.10gb": 1})))
    assert "device-filter 0xFFFF10DE matches no MIG-capable GPU in the catalog" in outcome.text


def test_invalid_yaml_is_reported() -> None:
    outcome = run_resource(policy, RELEASE_TYPE, _release("mig-configs: [unclosed"), name="op")
    assert outcome.messages[0].startswith("op config.yaml is not valid YAML:")


def test_a_mig_parted_configmap_is_checked_too() -> None:
    text = yaml.safe_dump(_config("seven", A100_40, {"1g.10gb": 7}))
    props = {"metadata": {"name": "custom-mig-parted-config"}, "data": {"config.yaml": text}}
    outcome = run_resource(policy, "kubernetes:core/v1:ConfigMap", props, name="mig-config")
    assert len(outcome.messages) == 1


def test_a_release_without_a_mig_config_is_not_checked() -> None:
    assert run_resource(policy, RELEASE_TYPE, operator_release({"migManager": {"enabled": True}})).messages == []
