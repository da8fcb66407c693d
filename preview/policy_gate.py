"""The pull-request policy gate: every CrossGuard policy of ``policies/`` over an offline preview.

Why: ``pulumi preview --policy-pack policies`` needs the Pulumi CLI, a backend and cloud
credentials, which a pull request from a fork (and this repository's CI) does not have. The
offline preview already records every registration with the wire-format inputs the policy
analyzer would receive, so the gate hands those to the very same policy objects, the way the
analyzer does: resource policies get each custom resource's inputs, stack policies get the whole
recorded set (a value unknown at preview raises as it does under the analyzer, see
``analyzer_props``), and each policy gets its schema defaults plus the stack's
``policies/config/<stack>.json`` (the ``--policy-pack-config`` format:
``{"all": "advisory", "<policy>": "disabled" | {"enforcementLevel": ..., "<key>": ...}}``). Policies run in
the project folder, as the program did, so a relative path in the inputs (``gpuOperator.chartPath``) reads
the same file.

Beyond the analyzer: the gate also runs every resource policy on the objects the program's Helm
releases and kustomize Directories render to (``preview/rendered.py``, the real ``helm template``
and ``kubectl kustomize``), each as a resource of type ``kubernetes:<group/version>:<Kind>`` with
the object as props. The CLI never sees a ``helm.v3.Release``'s objects (pulumi/pulumi#10055).
A render that fails is a finding of the gate's own check ``rendered-output`` (mandatory for a
Directory that does not build, advisory for a release of a chart with no pinned copy). Stack
policies see the registered resources only.

Output: ``policy-report.json``, a sorted list of ``{"policy", "enforcement", "resource",
"message", "origin"}`` (``origin``: ``registered``, or ``rendered from <type>::<name>`` of the
release or Directory), and a verdict table; a mandatory violation fails the preview (exit code 3).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy as analyzer_proxy
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from policies.gpu_policies import ALL_POLICIES
from policies.gpu_policies.settings import schema_defaults
from preview.mocks import SECRET_MASK, Registration, secret_strings
from preview.output_folder import EXIT_MANDATORY_VIOLATION as EXIT_MANDATORY_VIOLATION  # re-exported
from preview.output_folder import REPORT_NAME as REPORT_NAME  # re-exported
from preview.rendered import Rendered, RenderedObject, render_program
from preview.runner import REPO_ROOT, ProgramRun

STACK_RESOURCE = "(stack)"
REGISTERED = "registered"
RENDER_CHECK = "rendered-output"
LEVELS = tuple(level.value for level in EnforcementLevel)


class PolicyConfigError(ValueError):
    """A ``policies/config/<stack>.json`` the Pulumi CLI would refuse too."""


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


# ----------------------------------------------------------------------------------------------
# Policy config (the --policy-pack-config format, checked against each policy's schema)

_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "integer": (int,),
    "number": (int, float),
}


def _schema_problem(key: str, spec: Mapping[str, Any], value: Any) -> str | None:
    """The first way ``value`` breaks the JSON-schema subset our schemas use, or None."""
    kinds = spec.get("type")
    if isinstance(kinds, str):
        wanted = _JSON_TYPES.get(kinds, (object,))
        if not isinstance(value, wanted) or (kinds in ("integer", "number") and isinstance(value, bool)):
            return f"{key} must be a JSON {kinds}, got {json.dumps(value)}"
    if "enum" in spec and value not in spec["enum"]:
        return f"{key} must be one of {', '.join(map(str, spec['enum']))}, got {json.dumps(value)}"
    if "pattern" in spec and isinstance(value, str) and not re.search(spec["pattern"], value):
        return f"{key} {value!r} does not match {spec['pattern']}"
    if "minLength" in spec and isinstance(value, str) and len(value) < spec["minLength"]:
        return f"{key} must be at least {spec['minLength']} character(s) long, got {json.dumps(value)}"
    if isinstance(value, dict) and isinstance(spec.get("additionalProperties"), Mapping):
        for item_key, item in value.items():
            problem = _schema_problem(f"{key}[{json.dumps(item_key)}]", spec["additionalProperties"], item)
            if problem:
                return problem
    if isinstance(value, list) and isinstance(spec.get("items"), Mapping):
        for index, item in enumerate(value):
            problem = _schema_problem(f"{key}[{index}]", spec["items"], item)
            if problem:
                return problem
    return None


def parse_policy_config(document: Any, policies: Sequence[Policy] = ALL_POLICIES) -> dict[str, Any]:
    """Check a policy-pack config document; returns it unchanged or raises ``PolicyConfigError``."""
    if not isinstance(document, dict):
        raise PolicyConfigError("the policy config must be a JSON object of policy name -> level or settings")
    by_name = {policy.name: policy for policy in policies}
    problems: list[str] = []
    for name, entry in document.items():
        policy = by_name.get(name)
        if name != "all" and policy is None:
            problems.append(f"{name}: no such policy; known: all, {', '.join(sorted(by_name))}")
            continue
        if isinstance(entry, str):
            if entry not in LEVELS:
                problems.append(f"{name}: enforcement level must be one of {', '.join(LEVELS)}, got {entry!r}")
            continue
        if not isinstance(entry, dict) or (name == "all" and set(entry) - {"enforcementLevel"}):
            problems.append(f"{name}: expected an enforcement level or an object of settings")
            continue
        level = entry.get("enforcementLevel")
        if level is not None and level not in LEVELS:
            problems.append(f"{name}.enforcementLevel must be one of {', '.join(LEVELS)}, got {level!r}")
        properties = policy.config_schema.properties if policy is not None and policy.config_schema else {}
        for key, value in entry.items():
            if key == "enforcementLevel":
                continue
            if key not in properties:
                known = ", ".join(sorted(properties)) or "none"
                problems.append(f"{name}.{key}: not a setting of this policy; settings: {known}")
                continue
            problem = _schema_problem(f"{name}.{key}", properties[key], value)
            if problem:
                problems.append(problem)
    if problems:
        raise PolicyConfigError("; ".join(problems))
    return document


def config_path(stack: str, root: Path = REPO_ROOT) -> Path:
    """``<root>/policies/config/<stack>.json``: the stack's policy-pack config, if it has one."""
    return root / "policies" / "config" / f"{stack}.json"


def load_policy_config(stack: str, root: Path = REPO_ROOT) -> dict[str, Any]:
    """The stack's policy config (``{}`` without a file); ``PolicyConfigError`` when it is invalid."""
    path = config_path(stack, root)
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise PolicyConfigError(f"{path.name}: not valid JSON: {error}") from None
    try:
        return parse_policy_config(document)
    except PolicyConfigError as error:
        raise PolicyConfigError(f"{path.name}: {error}") from None


def effective_level(policy: Policy, config: Mapping[str, Any]) -> str:
    """The level the CLI would run ``policy`` at: its own entry, else ``all``, else the policy's level."""
    for key in (policy.name, "all"):
        entry = config.get(key)
        level = entry if isinstance(entry, str) else entry.get("enforcementLevel") if isinstance(entry, dict) else None
        if level:
            return str(level)
    return (policy.enforcement_level or EnforcementLevel.ADVISORY).value


def effective_settings(policy: Policy, config: Mapping[str, Any]) -> dict[str, Any]:
    """The schema defaults with the stack's settings on top (what the CLI sends to ``Configure``)."""
    settings = schema_defaults(policy)
    entry = config.get(policy.name)
    if isinstance(entry, dict):
        settings.update({key: value for key, value in entry.items() if key != "enforcementLevel"})
    return settings


# ----------------------------------------------------------------------------------------------
# Running the policies

_NO_OPTIONS = PolicyResourceOptions(
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


class _GateResourceArgs(ResourceValidationArgs):
    """The SDK's argument bag, with ``not_applicable`` raising our exception instead of the SDK's private one.

    Policies call the public ``args.not_applicable(reason)``; the SDK implements it by raising a
    private class. Overriding the public method is the seam: no private import, and
    ``tests/preview/test_policy_gate.py`` pins that a not-applicable verdict still reaches the report.
    """

    def not_applicable(self, reason: str | None = None) -> None:
        raise PolicyNotApplicable(reason)


class _GateStackArgs(StackValidationArgs):
    """Stack-policy counterpart of ``_GateResourceArgs``."""

    def not_applicable(self, reason: str | None = None) -> None:
        raise PolicyNotApplicable(reason)


def resource_label(registration: Registration) -> str:
    """How the report names a resource: ``<type>::<name>`` (the tail of its URN)."""
    return f"{registration.type}::{registration.name}"


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


def _stack_resources(registrations: Sequence[Registration], props: Mapping[str, Any]) -> list[PolicyResource]:
    """``PolicyResource``s with parents and dependencies linked, as ``AnalyzeStack`` builds them."""
    resources = {
        r.urn: PolicyResource(r.type, props[r.urn], r.urn, r.name, _NO_OPTIONS, None, None, [], {})
        for r in registrations
    }
    for registration in registrations:
        resource = resources[registration.urn]
        resource.parent = resources.get(registration.parent_urn)
        resource.dependencies = [resources[urn] for urn in registration.dependencies if urn in resources]
    return list(resources.values())


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
                args = _GateResourceArgs(r.type, props[r.urn], r.urn, r.name, _NO_OPTIONS, None, settings, stack_tags)
                run(policy, level, args, r)
            for obj in objects:
                args = _GateResourceArgs(
                    obj.type, obj.manifest, obj.urn, obj.name, _NO_OPTIONS, None, settings, stack_tags
                )
                run(policy, level, args, obj)
    if any(isinstance(policy, StackValidationPolicy) for policy, _, _ in active):
        resources = _stack_resources(custom, props)
        for policy, level, settings in active:
            if isinstance(policy, StackValidationPolicy):
                run(policy, level, _GateStackArgs(resources, settings, stack_tags), None)
    for render in rendered.renders if rendered is not None else ():
        result.renders.append(render.summary())
        if render.problem is not None:
            render_level = EnforcementLevel.MANDATORY if render.mandatory else EnforcementLevel.ADVISORY
            result.findings.append(Finding(RENDER_CHECK, render_level.value, render.origin_label, render.problem))
    result.findings.sort()
    return result


def cuda_drift(config: Mapping[str, Any], cuda: Mapping[str, Any]) -> str | None:
    """Why the policy config's CUDA level differs from the stack's, or None.

    ``pulumi preview --policy-pack`` reads the level from ``policies/config/<stack>.json`` (a policy
    cannot read the program's config), so the level is written twice; the gate refuses a drift
    between the two instead of checking the fleet against a stale level.
    """
    settings = config.get("driver-supports-cuda")
    if not isinstance(settings, Mapping):
        return None
    for setting, key in (("requiredCuda", "version"), ("cudaCheck", "check")):
        if setting in settings and key in cuda and str(settings[setting]) != str(cuda[key]):
            return (
                f"driver-supports-cuda.{setting} is {settings[setting]!r} but the stack's cuda.{key} is "
                f"{cuda[key]!r}; set them equal (the CLI policy run reads this file)"
            )
    return None


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


def report_text(result: GateResult) -> str:
    """The text of ``policy-report.json``: indented, sorted keys, final newline."""
    return json.dumps(result.report(), indent=2, sort_keys=True) + "\n"


def write_report(result: GateResult, out_dir: Path) -> Path:
    """Write ``policy-report.json`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / REPORT_NAME
    path.write_text(report_text(result))
    return path


def _verdict(result: GateResult, name: str) -> str:
    found = [f for f in result.findings if f.policy == name]
    level = result.levels.get(name, EnforcementLevel.MANDATORY.value)
    if level == EnforcementLevel.DISABLED.value:
        return "disabled"
    if any(f.enforcement == EnforcementLevel.MANDATORY.value for f in found):
        return f"FAIL ({len(found)})"
    if found:
        return f"warn ({len(found)})"
    if name in result.not_applicable:
        return f"n/a: {result.not_applicable[name]}"
    return "pass"


def verdict_table(result: GateResult) -> str:
    """One row per policy (level and verdict), then each finding, then the overall verdict."""
    names = list(result.levels)
    width = max((len(name) for name in names), default=6)
    lines = [f"Policies ({len(names)}) for stack {result.stack}:", f"  {'policy':<{width}}  {'level':<9}  verdict"]
    lines += [f"  {name:<{width}}  {result.levels[name]:<9}  {_verdict(result, name)}" for name in names]
    if result.renders:
        lines.append(f"Rendered by the offline gate ({RENDER_CHECK}: {_verdict(result, RENDER_CHECK)}):")
        lines += [f"  {line}" for line in result.renders]
    for finding in result.findings:
        origin = "" if finding.origin == REGISTERED else f" ({finding.origin})"
        lines.append(f"  [{finding.enforcement}] {finding.policy} {finding.resource}{origin}: {finding.message}")
    advisory = len(result.findings) - len(result.mandatory)
    verdict = "FAILED" if result.failed else "passed"
    lines.append(f"policy gate {verdict}: {len(result.mandatory)} mandatory, {advisory} advisory violation(s)")
    return "\n".join(lines)
