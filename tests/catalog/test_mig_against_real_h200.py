"""The MIG catalog checked against what a real H200 reports (``nvidia-smi mig -lgip`` / ``-lgipp``).

The fixtures were captured read-only from an NVIDIA H200 (tests/fixtures/nvidia-smi/README.md).
Every profile the GPU lists must be in the catalog with the same id, instance count, memory
slices and start positions, and the catalog must list nothing the GPU does not offer.
"""

from __future__ import annotations

from pathlib import Path

from components.catalog import mig
from tests.support.nvidia_smi import (
    gpu_model_key,
    parse_mig_lgip,
    parse_mig_lgipp,
    parse_query_gpu_csv,
    with_placements,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def test_real_h200_maps_to_the_catalog_model() -> None:
    (gpu,) = parse_query_gpu_csv((FIXTURES / "query-gpu.csv").read_text())
    assert gpu_model_key(gpu.name, gpu.memory_total_mib) == "H200-141GB"


def test_catalog_profiles_match_the_real_h200() -> None:
    real = with_placements(
        parse_mig_lgip((FIXTURES / "mig-lgip.txt").read_text()),
        parse_mig_lgipp((FIXTURES / "mig-lgipp.txt").read_text()),
    )
    catalog = {profile.name: profile for profile in mig.mig_profiles("H200-141GB")}
    assert {row.name for row in real} == set(catalog)
    for row in real:
        profile = catalog[row.name]
        assert profile.gi_profile_id == row.profile_id, row.name
        assert profile.max_instances == row.instances_total, row.name
        assert profile.memory_slices == row.memory_slices, row.name
        assert tuple(profile.starts) == row.placements, row.name


def test_the_real_h200s_device_id_is_the_one_its_model_key_filters() -> None:
    """NVIDIA's all-1g.35gb filters 0x233510DE: the id the captured H200 reports, so H200-141GB gets it."""
    (gpu,) = parse_query_gpu_csv((FIXTURES / "query-gpu-device-id.csv").read_text())
    device_id = gpu.extra["pci.device_id"]
    model = gpu_model_key(gpu.name, gpu.memory_total_mib)
    assert mig.mig_gpu(model).pci_device_ids == (device_id,)
    assert mig.named_layout(model, "all-1g.35gb") == {"1g.35gb": 4}
