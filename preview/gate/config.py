"""A stack's policy-pack config (``policies/config/<stack>.json``, the ``--policy-pack-config`` format), checked
against each policy's schema as the CLI checks it, and what each policy runs with: its level and settings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import EnforcementLevel, Policy

from policies.gpu_policies import ALL_POLICIES
from policies.gpu_policies.settings import schema_defaults
from preview.run.runner import REPO_ROOT

LEVELS = tuple(level.value for level in EnforcementLevel)


class PolicyConfigError(ValueError):
    """A ``policies/config/<stack>.json`` the Pulumi CLI would refuse too."""


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
