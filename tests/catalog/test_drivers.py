"""The driver facts users rely on: CUDA minimums, architecture support, max CUDA of a driver."""

from __future__ import annotations

import pytest

from components.catalog.drivers import (
    CudaCheckMode,
    CudaVersionError,
    architecture_problem,
    cuda_problem,
    driver_satisfies_cuda,
    max_cuda_for_driver,
    minimum_driver,
)
from components.catalog.gpus import Architecture
from components.catalog.versions import parse_version


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [("12.6", "560.28.03"), ("12.6.3", "560.35.05"), ("12.8", "570.26"), ("13.0", "580.65.06"), ("11.8", "520.61.05")],
)
def test_strict_minimum_is_the_toolkit_driver(cuda: str, driver: str) -> None:
    assert minimum_driver(cuda) == driver


def test_unknown_later_patch_takes_the_newest_known_update() -> None:
    assert minimum_driver("12.8.9") == "570.124.06"


def test_permissive_minimum_is_the_major_floor() -> None:
    assert minimum_driver("12.8", CudaCheckMode.PERMISSIVE) == "525.60.13"
    assert minimum_driver("13.2", CudaCheckMode.PERMISSIVE) == "580.65.06"


def test_cuda_12_8_workloads_cannot_run_on_a_550_driver() -> None:
    assert not driver_satisfies_cuda("550.127.05", "12.8")
    problem = cuda_problem("550.127.05", "12.8")
    assert problem is not None
    assert "550.127.05" in problem and "570.26" in problem and "12.8" in problem


def test_versions_compare_numerically_not_as_text() -> None:
    assert parse_version("580.9") < parse_version("580.10")
    assert driver_satisfies_cuda("570.124.06", "12.8")


def test_unknown_cuda_lists_the_known_levels() -> None:
    with pytest.raises(CudaVersionError, match=r"known CUDA versions: .*12\.6.*13\.3"):
        minimum_driver("12.7")


def test_volta_is_supported_up_to_r580_only() -> None:
    assert architecture_problem("580.95.05", Architecture.VOLTA) is None
    problem = architecture_problem("595.91.07", Architecture.VOLTA)
    assert problem is not None and "R580" in problem and "Volta" in problem


def test_hopper_needs_a_driver_that_knows_it() -> None:
    assert architecture_problem("470.82.01", Architecture.HOPPER) is not None
    assert architecture_problem("595.91.07", Architecture.HOPPER) is None


@pytest.mark.parametrize(("driver", "cuda"), [("580.95.05", "13.0"), ("570.124.06", "12.8"), ("560.35.05", "12.6")])
def test_max_cuda_of_a_driver(driver: str, cuda: str) -> None:
    assert max_cuda_for_driver(driver) == cuda
