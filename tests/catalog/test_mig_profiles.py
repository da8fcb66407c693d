"""MIG profile facts: spot checks against NVIDIA's tables, and the model lookups users hit first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from components.catalog.gpus import GPU_MODELS, UnknownGpuModelError
from components.catalog.mig import (
    FOUR_SLICE,
    MIG_GPUS,
    SEVEN_SLICE,
    MigNotSupported,
    UnknownGpuModel,
    UnknownMigProfile,
    is_mig_capable,
    mig_gpu,
    mig_models,
    mig_profile,
    mig_profiles,
)

ROOT = Path(__file__).resolve().parents[2]
MIG_KEYS = [
    "A100-40GB",
    "A100-80GB",
    "A30-24GB",
    "H100-80GB",
    "H100-94GB",
    "H100-96GB",
    "H200-141GB",
    "H200-NVL-141GB",
    "GH200-144GB",
    "B200-180GB",
]


def _table(model: str) -> list[tuple[str, int, int, int, int, tuple[int, ...]]]:
    return [
        (p.name, p.gi_profile_id, p.compute_slices, p.memory_slices, p.max_instances, p.starts)
        for p in mig_profiles(model)
    ]


def test_h100_80gb_matches_the_mig_guide_and_lgipp():
    # MIG guide H100 table (names, instance counts); nvidia-smi mig -lgip/-lgipp (IDs, placements).
    assert _table("H100-80GB") == [
        ("1g.10gb", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        ("1g.10gb+me", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        ("1g.20gb", 15, 1, 2, 4, (0, 2, 4, 6)),
        ("2g.20gb", 14, 2, 2, 3, (0, 2, 4)),
        ("3g.40gb", 9, 3, 4, 2, (0, 4)),
        ("4g.40gb", 5, 4, 4, 1, (0,)),
        ("7g.80gb", 0, 7, 8, 1, (0,)),
    ]


def test_a100_40gb_1g_10gb_takes_two_memory_slices_not_one():
    # The guide's table prints 1/8 memory, but lgipp shows profile 15 as {0,2,4,6}:2.
    profile = mig_profile("A100-40GB", "1g.10gb")
    assert (profile.gi_profile_id, profile.memory_slices, profile.max_instances) == (15, 2, 4)
    assert mig_profile("A100-40GB", "1g.5gb").max_instances == 7


def test_a30_is_a_four_slice_gpu_with_its_own_ids_and_starts():
    assert mig_gpu("A30-24GB").geometry == FOUR_SLICE
    assert (FOUR_SLICE.compute_slices, FOUR_SLICE.memory_slices, FOUR_SLICE.max_gpu_instances) == (4, 4, 4)
    assert _table("A30-24GB") == [
        ("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3)),
        ("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3)),
        ("2g.12gb", 5, 2, 2, 2, (0, 2)),
        ("2g.12gb+me", 6, 2, 2, 1, (0, 2)),
        ("4g.24gb", 0, 4, 4, 1, (0,)),
    ]


@pytest.mark.parametrize(
    ("model", "names"),
    [
        ("A100-40GB", "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb"),
        ("A100-80GB", "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb"),
        ("H100-94GB", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb"),
        ("H100-96GB", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb"),
        ("H200-141GB", "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb"),
        ("GH200-144GB", "1g.18gb 1g.18gb+me 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb"),
        ("B200-180GB", "1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb"),
    ],
)
def test_seven_slice_profile_names_follow_nvidia(model, names):
    assert [p.name for p in mig_profiles(model)] == names.split()
    assert mig_gpu(model).geometry == SEVEN_SLICE


def test_the_mig_capable_keys_are_exactly_the_projects_mig_models():
    assert sorted(mig_models()) == sorted(MIG_KEYS)
    assert all(is_mig_capable(model) for model in MIG_KEYS)


def test_mig_catalog_agrees_with_the_gpu_catalog_on_which_models_can_do_mig():
    for key, model in GPU_MODELS.items():
        assert is_mig_capable(key) == model.mig_capable, key


@pytest.mark.parametrize("model", ["V100-32GB", "T4-16GB"])
def test_v100_and_t4_are_known_but_refused_with_the_mig_models_listed(model):
    assert is_mig_capable(model) is False
    with pytest.raises(MigNotSupported, match=re.escape(model)) as error:
        mig_profiles(model)
    assert isinstance(error.value, ValueError)
    assert "H100-80GB" in str(error.value) and "A30-24GB" in str(error.value)


def test_an_unknown_model_is_a_value_error_listing_the_known_models():
    with pytest.raises(UnknownGpuModel) as error:
        is_mig_capable("H100")
    assert isinstance(error.value, ValueError)
    assert isinstance(error.value, UnknownGpuModelError)  # callers of the GPU catalog catch it too
    for key in (*MIG_KEYS, "V100-32GB"):
        assert key in str(error.value)
    with pytest.raises(UnknownGpuModel):
        mig_profiles("h100-80gb")  # keys are case-sensitive on purpose: they are config values


def test_an_unknown_profile_lists_the_models_profiles():
    with pytest.raises(UnknownMigProfile, match=r"H100-80GB: unknown MIG profile '1g\.5gb'") as error:
        mig_profile("H100-80GB", "1g.5gb")
    assert "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" in str(error.value)


@pytest.mark.parametrize("model", MIG_KEYS)
def test_every_profile_fits_its_geometry(model):
    gpu = mig_gpu(model)
    geometry = gpu.geometry
    names = [p.name for p in gpu.profiles]
    assert len(set(names)) == len(names)
    for p in gpu.profiles:
        assert re.fullmatch(rf"{p.compute_slices}g\.\d+gb(\+me)?", p.name)
        assert p.starts and all(s + p.memory_slices <= geometry.memory_slices for s in p.starts)
        assert p.compute_slices <= geometry.compute_slices
        # Starts are aligned to the GI's own size; a plain profile can fill every start at once.
        assert all(s % p.memory_slices == 0 for s in p.starts) or p.memory_slices == 1
        if not p.media_extensions:
            assert p.max_instances == len(p.starts)
        else:
            assert p.max_instances == 1


def test_pci_ids_are_nvidia_filter_strings_and_name_one_model_each():
    seen: dict[str, str] = {}
    for model, gpu in MIG_GPUS.items():
        assert gpu.pci_device_ids
        for pci in gpu.pci_device_ids:
            assert re.fullmatch(r"0x[0-9A-F]{4}10DE", pci), pci
            assert pci not in seen, f"{pci} is claimed by {seen.get(pci)} and {model}"
            seen[pci] = model
    assert "0x233010DE" in mig_gpu("H100-80GB").pci_device_ids  # H100 SXM5 80GB HBM3
    assert "0x20B710DE" in mig_gpu("A30-24GB").pci_device_ids


def test_cli_lists_a_models_profiles():
    result = subprocess.run(
        [sys.executable, "-m", "tools.mig", "profiles", "--model", "H100-80GB"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "7 compute / 8 memory slices" in result.stdout
    assert re.search(r"^3g\.40gb\s+9\s+3\s+4\s+2\s+0,4$", result.stdout, re.MULTILINE)


@pytest.mark.parametrize("model", ["V100-32GB", "H100"])
def test_cli_refuses_models_without_mig_in_one_line(model):
    result = subprocess.run(
        [sys.executable, "-m", "tools.mig", "profiles", "--model", model],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr
