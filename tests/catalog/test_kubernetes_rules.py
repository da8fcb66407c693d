"""The catalog's Kubernetes rules (apimachinery's), shared by every config model and the policies."""

from __future__ import annotations

import pytest

from components.catalog.kernel_args import kernel_arg_problem
from components.catalog.kubernetes import (
    TaintFormatError,
    dns_label_problem,
    email_problem,
    hostname_problem,
    int_or_percent_problem,
    label_key_problem,
    label_value_problem,
    parse_taint,
    priority_class_problem,
    quantity_problem,
    reserved_label_key_problem,
    user_name_problem,
)


@pytest.mark.parametrize("value", ["8", "500m", "16Gi", "1.5", "2e3", "0", "+4", ".5"])
def test_quantities_kubernetes_accepts(value: str) -> None:
    assert quantity_problem(value) is None


@pytest.mark.parametrize("value", ["abc", "-1", "16GB", "1.5.1", "", " 8", "8\n", "Ki"])
def test_quantities_kubernetes_refuses(value: str) -> None:
    assert quantity_problem(value) is not None


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (3, True),
        ("25%", True),
        ("100%", True),
        ("0%", True),
        ("abc", False),
        (-5, False),
        ("250%", False),
        ("25", False),
        (True, False),
    ],
)
def test_max_unavailable_forms(value: object, ok: bool) -> None:
    assert (int_or_percent_problem(value) is None) is ok


def test_max_unavailable_can_require_progress() -> None:
    assert int_or_percent_problem(0, allow_zero=False) is not None
    assert int_or_percent_problem("0%", allow_zero=False) is not None


@pytest.mark.parametrize("text", ["a\n", "x" * 64, "-a", "a b", ""])
def test_label_values_refused_include_a_final_newline(text: str) -> None:
    if text == "":
        assert label_value_problem(text) is None, "an empty label value is valid"
    else:
        assert label_value_problem(text) is not None


def test_a_newline_inside_a_taint_is_refused() -> None:
    with pytest.raises(TaintFormatError):
        parse_taint("nvidia.com/gpu=true:NoSchedule\n")
    with pytest.raises(TaintFormatError):
        parse_taint("nvidia.com/gpu\n=true:NoSchedule")


def test_label_keys() -> None:
    assert label_key_problem("gpu-platform.io/role") is None
    assert label_key_problem("role\n") is not None
    assert reserved_label_key_problem("kubernetes.io/hostname") is not None
    assert reserved_label_key_problem("node-role.kubernetes.io/gpu") is not None
    assert reserved_label_key_problem("team.example.com/x") is None
    assert "set by gpu-platform" in (reserved_label_key_problem("a/b", owned=["a/b"]) or "")


def test_names_hosts_emails_users() -> None:
    assert dns_label_problem("kube flow") is not None and dns_label_problem("kubeflow") is None
    assert priority_class_problem("system-node-critical") is None
    assert priority_class_problem("system-mine") is not None
    assert priority_class_problem("Gpu") is not None
    assert hostname_problem("192.0.2.10") is not None and hostname_problem("kubeflow.example.com") is None
    assert hostname_problem("kubeflow") is not None
    assert email_problem("lead@example.com") is None and email_problem("lead") is not None
    assert user_name_problem("cloud-user") is None
    assert user_name_problem("root;rm -rf /") is not None and user_name_problem("$(id)") is not None


def test_kernel_arguments_are_allowlisted_by_name() -> None:
    assert kernel_arg_problem("rd.driver.blacklist=nouveau") is None
    assert kernel_arg_problem("nvidia.NVreg_EnableGpuFirmware=0") is None
    assert "never accepted" in (kernel_arg_problem("init=/bin/sh") or "")
    assert "extraKernelArgNames" in (kernel_arg_problem("quiet") or "")
    assert kernel_arg_problem("quiet", frozenset({"quiet"})) is None
    assert "never accepted" in (kernel_arg_problem("init=/bin/sh", frozenset({"init"})) or "")
