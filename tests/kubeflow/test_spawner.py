"""The spawner config edit on upstream's real file: what it adds, when it adds nothing, and that it fails loudly.

What the stacks render from it with the real kustomize is in test_real_tree.py.
"""

from __future__ import annotations

import pytest
import yaml

from components.catalog.kubeflow.releases import DEFAULT_TAG, tag_components
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER
from components.catalog.kubeflow.v1_10_2.spawner import SPAWNER_CONFIG_KEY, SPAWNER_CONFIGMAP, SPAWNER_NAMESPACE
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.gpus import FleetPool, GpuFleet, mig_ui_name
from components.kubeflow.overlay import render_overlay
from components.kubeflow.spawner import SpawnerConfigError, read_upstream, spawner_config
from components.kubeflow.spec import KubeflowOverlaySpec
from components.kubeflow.stages import PLATFORM
from tests.kubeflow.kustomize import REPO_ROOT

TREE = REPO_ROOT / KUBEFLOW_MANIFESTS.path
ALL = tuple(c for c in tag_components(DEFAULT_TAG) if c != CERT_MANAGER)


def _pool(name: str, resources: dict[str, int]) -> FleetPool:
    return FleetPool(
        name=name,
        config_path=f"nodeGroups.{name}",
        model="H100-80GB",
        max_nodes=2,
        resources_per_node=resources,
        node_selector={"gpu-platform.io/node-group": name},
        tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
    )


FLEET = GpuFleet(
    (
        _pool("h100", {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-1g.10gb.me": 2, "nvidia.com/mig-3g.40gb": 8}),
        _pool("whole", {"nvidia.com/gpu": 8}),
    ),
    "mixed",
)


@pytest.fixture(scope="module")
def upstream() -> str:
    text = read_upstream(TREE)
    assert text is not None, "the pinned tree is in .upstream (make upstream)"
    return text


def test_mig_vendors_follow_nvidia_gpu_in_resource_order(upstream: str) -> None:
    vendors = yaml.safe_load(spawner_config(upstream, FLEET))["spawnerFormDefaults"]["gpus"]["value"]["vendors"]
    assert vendors == [
        {"limitsKey": "nvidia.com/gpu", "uiName": "NVIDIA"},
        {"limitsKey": "nvidia.com/mig-1g.10gb", "uiName": "NVIDIA MIG 1g.10gb"},
        {"limitsKey": "nvidia.com/mig-1g.10gb.me", "uiName": "NVIDIA MIG 1g.10gb+me"},
        {"limitsKey": "nvidia.com/mig-3g.40gb", "uiName": "NVIDIA MIG 3g.40gb"},
        {"limitsKey": "amd.com/gpu", "uiName": "AMD"},
        {"limitsKey": "habana.ai/gaudi", "uiName": "Intel Gaudi"},
    ]
    assert mig_ui_name("nvidia.com/mig-7g.80gb") == "NVIDIA MIG 7g.80gb"


def test_a_single_strategy_fleet_adds_no_vendor_but_still_its_pools(upstream: str) -> None:
    single = GpuFleet((_pool("a100", {"nvidia.com/gpu": 7}),), "single")
    parsed = yaml.safe_load(spawner_config(upstream, single))["spawnerFormDefaults"]
    assert [v["limitsKey"] for v in parsed["gpus"]["value"]["vendors"]] == [
        "nvidia.com/gpu",
        "amd.com/gpu",
        "habana.ai/gaudi",
    ]
    assert [o["configKey"] for o in parsed["affinityConfig"]["options"]] == ["gpu-pool-a100"]


def test_no_pools_leave_upstreams_file_as_is(upstream: str) -> None:
    assert spawner_config(upstream, GpuFleet()) == upstream


def test_a_changed_upstream_file_fails_loudly(upstream: str) -> None:
    moved = upstream.replace('uiName: "NVIDIA"', 'uiName: "NVIDIA GPU"')
    with pytest.raises(SpawnerConfigError, match="no longer has exactly one"):
        spawner_config(moved, FLEET)


def test_the_overlay_ships_the_file_beside_a_merge_generator_only_with_jupyter(upstream: str) -> None:
    text = spawner_config(upstream, FLEET)
    files = render_overlay(KubeflowOverlaySpec("../tree", spawner_ui_config=text))
    assert files[f"{PLATFORM.directory}/{SPAWNER_CONFIG_KEY}"] == text
    assert f"`{PLATFORM.directory}/{SPAWNER_CONFIG_KEY}` is upstream's" in files["README.md"]
    kustomization = yaml.safe_load(files[f"{PLATFORM.directory}/kustomization.yaml"])
    assert kustomization["configMapGenerator"] == [
        {
            "name": SPAWNER_CONFIGMAP,
            "namespace": SPAWNER_NAMESPACE,
            "behavior": "merge",
            "files": [SPAWNER_CONFIG_KEY],
        }
    ]
    without = tuple(c for c in ALL if c not in {"jupyter", "user-namespace"})
    lean = render_overlay(KubeflowOverlaySpec("../tree", components=without, spawner_ui_config=text))
    assert f"{PLATFORM.directory}/{SPAWNER_CONFIG_KEY}" not in lean
    assert "notebook spawner" not in lean["README.md"]
    assert "configMapGenerator" not in yaml.safe_load(lean[f"{PLATFORM.directory}/kustomization.yaml"])
    assert render_overlay(KubeflowOverlaySpec("../tree", spawner_ui_config=text)) == files  # deterministic
