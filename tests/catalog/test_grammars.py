"""Each grammar module of the catalog gives its receiver's verdict on every edge case (``tests/grammar_cases.py``).

The catalog functions are the one place each rule lives; the config keys that use them are checked against the same
cases in ``tests/stack/test_grammar_edge_cases.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.catalog.gpu_operator_operands import operand_max_unavailable_problem
from components.catalog.helm import release_name_problem
from components.catalog.image_reference import image_reference_problem, parse_image_reference, unpinned_image_problem
from components.catalog.kubernetes import dns_label_problem, dns_subdomain_problem, hostname_problem, quantity_problem
from components.catalog.label_selector import label_selector_problem
from components.catalog.prometheus import duration_ms, duration_problem, threshold_problem
from tests.grammar_cases import GRAMMARS

#: Grammar -> the catalog's verdict (the problem, or None), composed as the config keys compose them.
CHECKS: dict[str, Callable[[Any], str | None]] = {
    "image reference": lambda v: image_reference_problem(v) or unpinned_image_problem(v),
    "DNS label": dns_label_problem,
    "DNS subdomain": dns_subdomain_problem,
    "Helm release name": lambda v: release_name_problem(v) or dns_label_problem(v),
    "label selector": label_selector_problem,
    "Prometheus duration": duration_problem,
    "alert threshold": lambda v: threshold_problem(v) or ("negative" if v < 0 else None),
    "public host": hostname_problem,
    "operator maxUnavailable": operand_max_unavailable_problem,
    "Kubernetes quantity": quantity_problem,
}


@pytest.mark.parametrize(
    ("grammar", "value", "valid"),
    [(grammar, value, valid) for grammar, cases in GRAMMARS.items() for value, valid in cases],
    ids=[f"{grammar}-{index}" for grammar, cases in GRAMMARS.items() for index in range(len(cases))],
)
def test_the_catalog_gives_the_receivers_verdict(grammar: str, value: Any, valid: bool) -> None:
    problem = CHECKS[grammar](value)
    assert (problem is None) is valid, problem


def test_every_grammar_has_a_check_and_cases_of_both_verdicts() -> None:
    assert set(CHECKS) == set(GRAMMARS)
    for grammar, cases in GRAMMARS.items():
        assert {valid for _, valid in cases} == {True, False}, grammar


def test_a_reference_is_normalised_as_the_kubelet_does() -> None:
    assert parse_image_reference("ubuntu:22.04").repository == "docker.io/library/ubuntu"
    assert parse_image_reference("team/app:1").repository == "docker.io/team/app"
    assert parse_image_reference("localhost:5000/app@sha256:" + "a" * 64).domain == "localhost:5000"
    assert parse_image_reference("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0").tag == "vectoradd-cuda12.5.0"


def test_the_longest_prometheus_duration_is_the_longest_go_duration() -> None:
    assert duration_ms("106751d") is not None and duration_ms("106752d") is None
    assert duration_ms("1y2w3d4h5m6s7ms") == ((((365 + 14 + 3) * 24 + 4) * 60 + 5) * 60 + 6) * 1000 + 7
