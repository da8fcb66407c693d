"""The values contracts of the GPU Operator chart: which Helm value paths each chart version reads.

Why a package: checking values is one engine (``engine``), while what a chart accepts is data of
one published version, one module each (``v26_7_0``), so a new chart version never edits the
engine or an older version's data. Adding a chart version is one new module plus one line in
``CONTRACTS`` (and its entry in ``gpu_operator_chart.RELEASES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from components.catalog.gpu_operator_chart import unsupported_version_message
from components.catalog.gpu_operator_contract import v26_7_0
from components.catalog.gpu_operator_contract.engine import (
    BOOL,
    INT,
    INT_OR_STR,
    K8S_ENV,
    K8S_PULL_SECRETS,
    K8S_RESOURCES,
    OBJECT,
    OBJECTS,
    PULL_POLICY,
    STR,
    STRING_MAP,
    STRINGS,
    TOLERATIONS,
    AnyValue,
    Contract,
    ContractViolationError,
    FreeMap,
    Ignored,
    Keys,
    ListOf,
    Node,
    Rule,
    Scalar,
    Violation,
)
from components.catalog.gpu_operator_contract.v26_7_0 import (
    ENV,
    ENV_HOMES,
    PULL_SECRET_NAMES,
    RESOURCES,
    mig_config_rule,
    misplaced_env_rule,
)

__all__ = [
    "BOOL",
    "CONTRACTS",
    "ENV",
    "ENV_HOMES",
    "INT",
    "INT_OR_STR",
    "K8S_ENV",
    "K8S_PULL_SECRETS",
    "K8S_RESOURCES",
    "OBJECT",
    "OBJECTS",
    "PULL_POLICY",
    "PULL_SECRET_NAMES",
    "RESOURCES",
    "STR",
    "STRINGS",
    "STRING_MAP",
    "TOLERATIONS",
    "AnyValue",
    "Contract",
    "ContractViolationError",
    "FreeMap",
    "Ignored",
    "Keys",
    "ListOf",
    "Node",
    "Rule",
    "Scalar",
    "Violation",
    "contract_for",
    "mig_config_rule",
    "misplaced_env_rule",
]

# One line per supported chart version, in the order of ``gpu_operator_chart.RELEASES``.
CONTRACTS: Mapping[str, Contract] = MappingProxyType(
    {
        v26_7_0.CHART_VERSION: v26_7_0.CONTRACT,
    }
)


def contract_for(chart_version: str) -> Contract:
    """The values contract of one chart version; an unknown version lists the supported ones."""
    try:
        return CONTRACTS[chart_version]
    except KeyError:
        raise ValueError(
            unsupported_version_message(chart_version).replace("is not supported", "has no values contract")
        ) from None
