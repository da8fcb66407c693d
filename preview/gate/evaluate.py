"""Every policy over one offline run: each custom resource's inputs and each rendered object, as the analyzer
runs resource policies, and the registered resources together for the stack policies; messages scrubbed of
the stack's secrets (the report is written beside the preview)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.proxy import UnknownValueError

from policies.gpu_policies import ALL_POLICIES
from preview.gate.analyzer import (
    NO_OPTIONS,
    GateResourceArgs,
    GateStackArgs,
    PolicyNotApplicable,
    analyzer_props,
    stack_resources,
)
from preview.gate.config import (
    PolicyConfigError,
    config_path,
    cuda_drift,
    effective_level,
    effective_settings,
    load_policy_config,
)
from preview.render.rendered import Rendered, RenderedObject, render_program
from preview.run.registration import SECRET_MASK, Registration, secret_strings
from preview.run.runner import REPO_ROOT, ProgramRun

STACK_RESOURCE = "(stack)"
REGISTERED = "registered"
RENDER_CHECK = "rendered-output"


@dataclass(frozen=True, order=True)
class Finding:
    """One violation, as written to ``policy-report.json``."""

    policy: str
    enforcement: str
    resource: str
    message: str
    origin: str = REGISTERED  #: ``registered``, or ``rendered from <type>::<name>``


def rendered_from(obj: RenderedObject) -> str:
    """The ``origin`` of a finding about a rendered object."""
    return f"rendered from {obj.origin_label}"


@dataclass
class GateResult:
    """Every finding of one stack, each policy's effective level and applicability, and what was rendered."""

    stack: str
    findings: list[Finding] = field(default_factory=list)
    levels: dict[str, str] = field(default_factory=dict)
    not_applicable: dict[str, str] = field(default_factory=dict)
    renders: list[str] = field(default_factory=list)  #: one summary line per release or Directory

    @property
    def mandatory(self) -> list[Finding]:
        """The findings that fail the preview."""
        return [f for f in self.findings if f.enforcement == EnforcementLevel.MANDATORY.value]

    @property
    def failed(self) -> bool:
        """True when at least one mandatory policy is violated."""
        return bool(self.mandatory)

    def report(self) -> list[dict[str, str]]:
        """The report document: findings sorted by policy, level, resource, message and origin."""
        return [asdict(finding) for finding in sorted(self.findings)]


def resource_label(registration: Registration) -> str:
    """How the report names a resource: ``<type>::<name>`` (the tail of its URN)."""
    return f"{registration.type}::{registration.name}"


def _scrubbed(message: str, secrets: set[str]) -> str:
    for value in sorted((v for v in secrets if len(v) >= 4), key=len, reverse=True):
        message = message.replace(value, SECRET_MASK)
    return message


class _Scrubber:
    """Masks secret values in messages: the report is written next to the preview files.

    A resource policy only reads its own resource, so its messages are checked against that
    resource's secrets; a stack policy's against every secret of the stack.
    """

    def __init__(self, registrations: Sequence[Registration]) -> None:
        self._registrations = {r.urn: r for r in registrations}
        self._cache: dict[str, set[str]] = {}

    def _of(self, urn: str) -> set[str]:
        if urn not in self._cache:
            registration = self._registrations[urn]
            self._cache[urn] = secret_strings(registration.inputs, registration.masked_inputs)
        return self._cache[urn]

    def resource(self, message: str, urn: str) -> str:
        return _scrubbed(message, self._of(urn))

    def stack(self, message: str) -> str:
        if "(stack)" not in self._cache:
            self._cache["(stack)"] = set().union(*(self._of(urn) for urn in self._registrations))
        return _scrubbed(message, self._cache["(stack)"])


def evaluate(
    registrations: Iterable[Registration],
    config: Mapping[str, Any] | None = None,
    stack: str = "",
    stack_tags: Mapping[str, str] | None = None,
    policies: Sequence[Policy] = ALL_POLICIES,
    rendered: Rendered | None = None,
) -> GateResult:
    """Run ``policies`` over the custom resources among ``registrations`` and the ``rendered`` objects."""
    config = config or {}
    registrations = list(registrations)
    custom = [r for r in registrations if r.custom]
    labels = {r.urn: resource_label(r) for r in custom}
    props = {r.urn: analyzer_props(r.inputs) for r in custom}
    objects = rendered.objects if rendered is not None else []
    result = GateResult(stack=stack)
    active: list[tuple[Policy, str, dict[str, Any]]] = []
    for policy in policies:
        level = effective_level(policy, config)
        result.levels[policy.name] = level
        if level != EnforcementLevel.DISABLED.value:
            # As in the SDK: a policy at "remediate" that still reports is reported as mandatory.
            reported = EnforcementLevel.MANDATORY.value if level == EnforcementLevel.REMEDIATE.value else level
            active.append((policy, reported, effective_settings(policy, config)))

    scrubber = _Scrubber(registrations)  # a rendered object's messages: against its (component) origin's secrets

    def run(policy: Policy, level: str, args: Any, subject: Registration | RenderedObject | None) -> None:
        """One policy on one resource, one rendered object, or the stack (None), as the analyzer runs it."""
        if isinstance(subject, RenderedObject):
            default, origin, scrub_urn = f"{subject.type}::{subject.name}", rendered_from(subject), subject.origin.urn
        elif subject is not None:
            default, origin, scrub_urn = labels[subject.urn], REGISTERED, subject.urn
        else:
            default, origin, scrub_urn = STACK_RESOURCE, REGISTERED, None

        def report(message: str, reported_urn: str | None = None) -> None:
            message = scrubber.resource(message, scrub_urn) if scrub_urn else scrubber.stack(message)
            resource = labels.get(reported_urn or "", default)
            result.findings.append(Finding(policy.name, level, resource, message, origin))

        try:
            policy.validate(args, report)  # type: ignore[attr-defined]
        except UnknownValueError as error:
            message = f"can't run policy '{policy.name}' during preview: {error.message}"
            result.findings.append(Finding(policy.name, EnforcementLevel.ADVISORY.value, default, message, origin))
        except PolicyNotApplicable as error:
            if subject is None:  # a resource policy that skips one resource still applies to the others
                result.not_applicable[policy.name] = error.reason or "not applicable"

    for policy, level, settings in active:
        if isinstance(policy, ResourceValidationPolicy):
            for r in custom:
                args = GateResourceArgs(r.type, props[r.urn], r.urn, r.name, NO_OPTIONS, None, settings, stack_tags)
                run(policy, level, args, r)
            for obj in objects:
                args = GateResourceArgs(
                    obj.type, obj.manifest, obj.urn, obj.name, NO_OPTIONS, None, settings, stack_tags
                )
                run(policy, level, args, obj)
    if any(isinstance(policy, StackValidationPolicy) for policy, _, _ in active):
        resources = stack_resources(custom, props)
        for policy, level, settings in active:
            if isinstance(policy, StackValidationPolicy):
                run(policy, level, GateStackArgs(resources, settings, stack_tags), None)
    for render in rendered.renders if rendered is not None else ():
        result.renders.append(render.summary())
        if render.problem is not None:
            render_level = EnforcementLevel.MANDATORY if render.mandatory else EnforcementLevel.ADVISORY
            result.findings.append(Finding(RENDER_CHECK, render_level.value, render.origin_label, render.problem))
    result.findings.sort()
    return result


def run_gate(run: ProgramRun, root: Path = REPO_ROOT, rendered: Rendered | None = None) -> GateResult:
    """Every policy over one offline run and what it renders (rendered here unless given), with the stack's config.

    Raises ``PolicyConfigError`` for an invalid policy config and ``RenderSetupError`` when a tool or the
    pinned chart is missing.
    """
    config = load_policy_config(run.stack, root)
    drift = cuda_drift(config, run.outputs.get("cuda") or {})
    if drift:
        raise PolicyConfigError(f"{config_path(run.stack, root).name}: {drift}")
    rendered = render_program(run) if rendered is None else rendered
    # In the project folder, as the engine ran the program: a relative path among the inputs (a mirrored
    # chart's gpuOperator.chartPath) names the same file for a policy as it did for the program.
    previous = Path.cwd()
    os.chdir(run.root)
    try:
        return evaluate(run.registrations, config, stack=run.stack, rendered=rendered)
    finally:
        os.chdir(previous)
