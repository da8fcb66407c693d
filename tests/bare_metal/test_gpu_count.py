"""A bare-metal host's GPU count must be one its product comes in (the GPU table's host forms)."""

from __future__ import annotations

from components.catalog.gpus import GPU_MODELS, host_gpu_count_problem
from tests.helpers import plan_raw, refusal, set_path, stack_raw


def test_nine_h100_gpus_in_one_host_are_refused_at_the_key_with_the_counts_allowed() -> None:
    lines = refusal(set_path(stack_raw("prod"), "bareMetal.nodes.0.gpus", 9))
    assert (
        "bareMetal.nodes[0].gpus: a host does not carry 9 x H100-80GB (HGX H100 (SXM5) baseboards carry 4 or 8; "
        "PCIe servers carry 1 to 8); allowed: 1, 2, 3, 4, 5, 6, 7, 8"
    ) in lines


def test_the_counts_the_baseboards_come_in_are_accepted() -> None:
    for gpus in (4, 8):
        assert plan_raw(set_path(stack_raw("prod"), "bareMetal.nodes.0.gpus", gpus))


def test_a_model_whose_host_forms_are_not_recorded_takes_any_count_the_config_allows() -> None:
    assert GPU_MODELS["A30-24GB"].host_gpu_counts is None
    assert host_gpu_count_problem("A30-24GB", 9) is None
    assert host_gpu_count_problem("B200-180GB", 4) == (
        "a host does not carry 4 x B200-180GB (HGX B200 baseboards carry 8); allowed: 8"
    )
