"""MIG as code in the program: node labels, the mig-parted config in the operator values, outputs, refusals."""

from __future__ import annotations

import pytest
import yaml

from components.catalog import gpu_operator_chart as chart
from components.catalog import mig as catalog
from preview.run.runner import ProgramRun, run_program
from tests.helpers import refusal, set_path, stack_raw

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program("dev")


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_program("prod")


def test_yandex_a100_group_gets_its_mig_label_at_creation(dev: ProgramRun) -> None:
    labels = dev.one(NODE_GROUP, "gpu-a100-group").inputs["nodeLabels"]
    assert labels["nvidia.com/mig.config"] == "all-1g.10gb"
    assert "nvidia.com/mig.config" not in dev.one(NODE_GROUP, "gpu-v100-group").inputs["nodeLabels"], "V100 has no MIG"


def test_named_layouts_alone_use_the_operators_own_config(dev: ProgramRun) -> None:
    values = dev.one(RELEASE, "gpu-operator-release").inputs["values"]
    assert values["mig"] == {"strategy": "mixed"}  # dev sets mixed, so Kubeflow quotas can cap the slices
    assert "config" not in values["migManager"]
    assert dev.outputs["gpuPools"]["a100"]["resourcesPerNode"] == {"nvidia.com/mig-1g.10gb": 7}


def test_bare_metal_nodes_get_labels_through_node_patches(prod: ProgramRun) -> None:
    patches = [r for r in prod.by_type("kubernetes:core/v1:NodePatch") if r.name.startswith("gpu-nodes-")]
    labels = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in patches}
    assert labels["gpu-node-1"]["nvidia.com/mig.config"] == "all-1g.10gb"
    assert labels["gpu-node-2"]["nvidia.com/mig.config"].startswith("gpu-platform-gpu-node-2-")
    assert labels["gpu-node-3"]["nvidia.com/mig.config"].startswith("gpu-platform-gpu-node-3-")
    release = prod.one(RELEASE, "gpu-operator-release")
    for patch in patches:
        assert patch.inputs["metadata"]["annotations"]["pulumi.com/patchFieldManager"] == "gpu-platform"
        assert release.urn in patch.dependencies, "the label names a config the release must ship first"


def test_bare_metal_mig_patches_take_the_label_over_from_the_operator(prod: ProgramRun) -> None:
    """The operator writes nvidia.com/mig.config=all-disabled (as gpu-operator) on MIG nodes without one.

    By the time the patches run (after the release) a running node carries that label, owned by another
    field manager: a server-side apply of a new layout conflicts unless it is forced.
    """
    assert chart.OPERATOR_FIELD_MANAGER != "gpu-platform"
    patches = [r for r in prod.by_type("kubernetes:core/v1:NodePatch") if r.name.startswith("gpu-nodes-")]
    assert len(patches) == 3 and not [r for r in prod.by_type("kubernetes:core/v1:NodePatch") if r not in patches]
    release = prod.one(RELEASE, "gpu-operator-release")
    for patch in patches:
        assert "nvidia.com/mig.config" in patch.inputs["metadata"]["labels"]
        assert patch.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
        assert release.urn in patch.dependencies
        assert patch.urn not in release.dependencies


def test_an_edited_custom_layout_gets_a_new_config_name(prod: ProgramRun) -> None:
    """mig-manager acts on label changes only, so a changed layout must change the label."""
    raw = stack_raw("prod")
    raw["bareMetal"]["nodes"][1]["mig"] = {"custom": {"3g.40gb": 2}}
    edited = run_program("prod", overrides={"gpu-platform:bareMetal": raw["bareMetal"]})
    before = prod.outputs["gpuPools"]["gpu-node-2"]["migConfig"]
    after = edited.outputs["gpuPools"]["gpu-node-2"]["migConfig"]
    assert before != after and after.startswith("gpu-platform-gpu-node-2-")


def test_custom_layouts_ship_a_mig_parted_config_every_entry_placeable(prod: ProgramRun) -> None:
    values = prod.one(RELEASE, "gpu-operator-release").inputs["values"]
    assert values["mig"] == {"strategy": "mixed"}
    config = values["migManager"]["config"]
    assert (
        config["create"] is True and config["name"] == "gpu-platform-mig-config" and config["default"] == "all-disabled"
    )
    parted = yaml.safe_load(config["data"]["config.yaml"])
    assert parted["version"] == "v1"
    names = {pool["migConfig"] for pool in prod.outputs["gpuPools"].values()}
    assert names >= {"all-1g.10gb"} and set(parted["mig-configs"]) == {"all-disabled"} | names
    for entries in parted["mig-configs"].values():
        for entry in entries:
            if entry["mig-enabled"]:
                assert catalog.is_placeable("H100-80GB", entry["mig-devices"])
    node3 = parted["mig-configs"][prod.outputs["gpuPools"]["gpu-node-3"]["migConfig"]]
    assert [e["devices"] for e in node3] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [e["mig-enabled"] for e in node3] == [True, False]


def test_outputs_tell_other_teams_what_to_request(prod: ProgramRun) -> None:
    pools = prod.outputs["gpuPools"]
    assert pools["gpu-node-1"]["resourcesPerNode"] == {"nvidia.com/mig-1g.10gb": 56}
    assert pools["gpu-node-3"]["resourcesPerNode"] == {"nvidia.com/gpu": 4, "nvidia.com/mig-3g.40gb": 8}
    assert pools["gpu-node-2"]["podResources"] == {"limits": {"nvidia.com/mig-1g.10gb": 1}}
    (demand,) = prod.outputs["mig"]["demand"]
    assert demand["gpusUsed"] == demand["lowerBound"] == 11 and demand["fleetGpus"] == 24


def test_v100_group_asking_for_mig_is_refused() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "nodeGroups.v100.mig", {"layout": "all-1g.10gb"}))
    assert line.startswith("nodeGroups.v100.mig: the platform of nodeGroups.v100 does not offer MIG")


def test_unplaceable_custom_layout_names_the_node_model_and_reason() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.1.mig", {"custom": {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}})
    (line,) = refusal(raw)
    assert line.startswith("bareMetal.nodes[1].mig: bareMetal.nodes[1] (H100-80GB):")


def test_layout_not_defined_for_the_model() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "bareMetal.nodes.0.mig", {"layout": "all-1g.5gb"}))
    assert line.startswith("bareMetal.nodes[0].mig.layout: bareMetal.nodes[0] (H100-80GB):") and "all-1g.10gb" in line


def _h200_node(model: str, layout: str) -> dict:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.0.gpuModel", model)
    raw = set_path(raw, "bareMetal.nodes.0.mig", {"layout": layout})
    return {**raw, "mig": {"strategy": "mixed"}}  # the demand is for H100s


def test_a_layout_nvidia_filters_to_another_device_is_refused_with_the_ones_that_apply() -> None:
    """all-1g.35gb is for the H200 SXM id only: an H200 NVL node labelled with it would get nothing."""
    (line,) = refusal(_h200_node("H200-NVL-141GB", "all-1g.35gb"))
    assert line.startswith("bareMetal.nodes[0].mig.layout: bareMetal.nodes[0] (H200-NVL-141GB):")
    assert "applies 'all-1g.35gb' only to the PCI devices 0x233510DE (H200-141GB)" in line
    assert "valid for H200-NVL-141GB: all-disabled, all-enabled, all-balanced, all-1g.18gb" in line
    assert "all-1g.35gb" not in line.split("valid for H200-NVL-141GB: ")[1]


def test_the_same_layout_on_an_h200_sxm_node_is_planned() -> None:
    run = run_program(
        "prod", overrides={f"gpu-platform:{k}": v for k, v in _h200_node("H200-141GB", "all-1g.35gb").items()}
    )
    assert run.config_error is None, run.config_error
    assert run.outputs["gpuPools"]["gpu-node-1"]["resourcesPerNode"] == {"nvidia.com/mig-1g.35gb": 32}


def test_gpu_index_outside_the_node() -> None:
    raw = set_path(stack_raw("prod"), "bareMetal.nodes.2.mig", {"perGpu": [{"devices": [8], "layout": {"1g.10gb": 7}}]})
    (line,) = refusal(raw)
    assert "GPU index 8 does not exist; the node has GPUs 0-7" in line


def test_single_strategy_cannot_serve_mixed_layouts() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "mig.strategy", "single"))
    assert line.startswith("mig.strategy: single cannot serve GPUs with several profile types")


def test_demand_the_fleet_cannot_hold_states_the_shortfall() -> None:
    raw = set_path(stack_raw("prod"), "mig.demand", [{"gpuModel": "H100-80GB", "profiles": {"7g.80gb": 30}}])
    (line,) = refusal(raw)
    assert line.startswith("mig.demand[0]:") and "fleet has 24" in line and "short by 6" in line


def test_removing_a_layout_returns_the_node_to_all_disabled() -> None:
    raw = stack_raw("prod")
    del raw["bareMetal"]["nodes"][0]["mig"]
    no_demand = {**raw["mig"], "demand": []}  # the demand's 40 x 1g.10gb came from gpu-node-1's layout
    run = run_program("prod", overrides={"gpu-platform:bareMetal": raw["bareMetal"], "gpu-platform:mig": no_demand})
    patch = run.one("kubernetes:core/v1:NodePatch", "gpu-nodes-gpu-node-1").inputs["metadata"]["labels"]
    assert patch["nvidia.com/mig.config"] == "all-disabled"
