"""What the policy analyzer hands a policy, reproduced: the argument bags, the unknown-value proxy, and the
stack's resources linked to their parents and dependencies (pulumi-policy ``policy.py`` ``AnalyzeStack``).

The offline gate and the policies' unit tests (``tests/policies/support.py``) both run policies through
these, so a policy is tested the way the gate and the CLI run it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy import proxy as analyzer_proxy
from pulumi_policy.proxy import unknown_checking_proxy

from preview.run.registration import Registration

NO_OPTIONS = PolicyResourceOptions(
    protect=False,
    ignore_changes=[],
    delete_before_replace=None,
    aliases=[],
    custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
    additional_secret_outputs=[],
)


class PolicyNotApplicable(Exception):
    """A policy said it does not apply (``args.not_applicable(reason)``), as the analyzer records it."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason


class GateResourceArgs(ResourceValidationArgs):
    """The SDK's argument bag, with ``not_applicable`` raising our exception instead of the SDK's private one.

    Policies call the public ``args.not_applicable(reason)``; the SDK implements it by raising a
    private class. Overriding the public method is the seam: no private import, and
    ``tests/preview/gate/test_policy_gate.py`` pins that a not-applicable verdict still reaches the report.
    """

    def not_applicable(self, reason: str | None = None) -> None:
        raise PolicyNotApplicable(reason)


class GateStackArgs(StackValidationArgs):
    """Stack-policy counterpart of ``GateResourceArgs``."""

    def not_applicable(self, reason: str | None = None) -> None:
        raise PolicyNotApplicable(reason)


_UNKNOWNS = frozenset(
    getattr(analyzer_proxy, name) for name in dir(analyzer_proxy) if re.fullmatch(r"UNKNOWN_[A-Z]+_VALUE", name)
)


def has_unknown(value: Any) -> bool:
    """Whether ``value`` holds a value the engine only knows after the update (its unknown sentinels)."""
    if isinstance(value, dict):
        return any(has_unknown(item) for item in value.values())
    if isinstance(value, list):
        return any(has_unknown(item) for item in value)
    return isinstance(value, str) and value in _UNKNOWNS


def analyzer_props(inputs: dict[str, Any]) -> Mapping[str, Any]:
    """Props as a policy sees them: the inputs, behind the analyzer's unknown-checking proxy where needed.

    Only a resource holding an unknown value gets the proxy (reading that value raises
    ``UnknownValueError``, which the analyzer reports as "can't run policy during preview"); the
    others are handed over as they are, which keeps the gate fast. Policies are written against
    ``Mapping``/``Sequence`` and their unit tests always wrap props in the proxy, so both forms work.
    """
    return unknown_checking_proxy(inputs) if has_unknown(inputs) else inputs


def stack_resources(registrations: Sequence[Registration], props: Mapping[str, Any]) -> list[PolicyResource]:
    """``PolicyResource``s with parents and dependencies linked, as ``AnalyzeStack`` builds them."""
    resources = {
        r.urn: PolicyResource(r.type, props[r.urn], r.urn, r.name, NO_OPTIONS, None, None, [], {})
        for r in registrations
    }
    for registration in registrations:
        resource = resources[registration.urn]
        resource.parent = resources.get(registration.parent_urn)
        resource.dependencies = [resources[urn] for urn in registration.dependencies if urn in resources]
    return list(resources.values())
