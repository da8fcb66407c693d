"""The gpu-platform CrossGuard policies, importable without starting a policy pack.

``PolicyPack(...)`` starts a gRPC server and never returns, so the policies live here and
``policies/__main__.py`` only wraps them; tests and the offline pull-request gate
(``preview/gate/``) import these lists directly.
"""

from __future__ import annotations

from pulumi_policy import Policy, ResourceValidationPolicy, StackValidationPolicy

from . import drivers, helm, kubeflow, mig, network, node_groups, operands, operator_values, scheduling, workloads

RESOURCE_POLICIES: list[ResourceValidationPolicy] = [
    *node_groups.POLICIES,
    *helm.POLICIES,
    *operator_values.POLICIES,
    *operands.POLICIES,
    *mig.POLICIES,
    *workloads.POLICIES,
    *network.POLICIES,
    *kubeflow.POLICIES,
]
STACK_POLICIES: list[StackValidationPolicy] = [*scheduling.POLICIES, *drivers.POLICIES]
ALL_POLICIES: list[Policy] = [*RESOURCE_POLICIES, *STACK_POLICIES]

__all__ = ["ALL_POLICIES", "RESOURCE_POLICIES", "STACK_POLICIES"]
