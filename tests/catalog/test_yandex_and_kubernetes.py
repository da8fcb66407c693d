"""Yandex platform facts and Kubernetes taint rules."""

from __future__ import annotations

import pytest

from components.catalog.kubernetes import Taint, TaintFormatError, parse_taint, tolerates, tolerations_for
from components.catalog.yandex import UnknownPlatformError, yandex_platform


def test_v100_platform_offers_documented_shapes() -> None:
    platform = yandex_platform("gpu-standard-v2")
    assert platform.gpu_model == "V100-32GB"
    assert platform.allowed_gpus == [1, 2, 4, 8]
    assert [(s.cores, s.memory_gb) for s in platform.shapes_for(1)] == [(8, 48)]
    assert not platform.mig_supported


def test_a100_platform_supports_mig() -> None:
    platform = yandex_platform("gpu-standard-v3")
    assert platform.gpu_model == "A100-80GB" and platform.mig_supported


def test_there_is_no_gpu_h100_platform_at_yandex() -> None:
    with pytest.raises(UnknownPlatformError, match="gpu-standard-v2"):
        yandex_platform("gpu-h100")


def test_a_taint_without_a_value_is_kubectls_key_effect_form_and_yandex_needs_the_equals_sign() -> None:
    assert parse_taint("nvidia.com/gpu=:NoSchedule") == Taint("nvidia.com/gpu", "", "NoSchedule")
    assert parse_taint("nvidia.com/gpu:NoSchedule") == Taint("nvidia.com/gpu", "", "NoSchedule")
    assert str(parse_taint("nvidia.com/gpu:NoSchedule")) == "nvidia.com/gpu=:NoSchedule"
    with pytest.raises(TaintFormatError, match="key=value:Effect"):
        parse_taint("nvidia.com/gpu:NoSchedule", value_required=True)
    with pytest.raises(TaintFormatError, match="not of the form"):
        parse_taint("a=b=c:NoSchedule")


def test_taint_effect_must_be_known() -> None:
    with pytest.raises(TaintFormatError, match="NoSchedule, PreferNoSchedule, NoExecute"):
        parse_taint("a=b:Never")


def test_tolerations_match_their_taints() -> None:
    taints = [parse_taint("nvidia.com/gpu=true:NoSchedule"), parse_taint("team=ml:NoExecute")]
    tolerations = tolerations_for(taints + taints)
    assert len(tolerations) == 2
    assert all(any(tolerates(t, taint) for t in tolerations) for taint in taints)
    assert not tolerates({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}, taints[0])
    assert tolerates({"operator": "Exists"}, taints[1])
