"""The one GPU table: every other GPU table is keyed by it and agrees with it."""

from __future__ import annotations

import pytest

from components.catalog.gpus import GPU_MODELS
from components.catalog.mig import MIG_GPUS, is_mig_capable
from components.catalog.yandex import YANDEX_GPU_PLATFORMS
from tests.support.nvidia_smi import UnknownGpuProductError, gpu_model_key


def test_the_mig_table_has_exactly_the_models_the_gpu_table_calls_mig_capable() -> None:
    assert list(MIG_GPUS) == [key for key, model in GPU_MODELS.items() if model.mig_capable]
    assert [key for key in GPU_MODELS if is_mig_capable(key)] == list(MIG_GPUS)


def test_every_yandex_platform_names_a_model_of_the_gpu_table() -> None:
    named = {platform.gpu_model for platform in YANDEX_GPU_PLATFORMS.values()} - {None}
    assert named <= set(GPU_MODELS)


@pytest.mark.parametrize("key", list(GPU_MODELS))
def test_nvidia_smi_names_map_back_to_their_key_through_the_gpu_table(key: str) -> None:
    model = GPU_MODELS[key]
    assert model.smi_families, f"{key} has no nvidia-smi product family"
    for family in model.smi_families:
        # nvidia-smi reports a little less than the nominal size (an H200 "141GB": 143771 MiB).
        assert gpu_model_key(f"NVIDIA {family}", int(model.memory_gb * 1024 * 0.995)) == key


def test_a_product_the_gpu_table_does_not_know_is_refused() -> None:
    with pytest.raises(UnknownGpuProductError):
        gpu_model_key("NVIDIA L40S", 46068)
