"""Reads the stack from the engine: the program config and the secrets it names.

The only module that reads Pulumi config (``pulumi.runtime.config`` for the program's keys,
``pulumi.Config`` for the secrets), so what a stack can be configured with is visible in one place.
Secrets are read with ``require_secret`` and stay Pulumi secrets: the program never sees them in
plaintext.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from components.base.problems import Problem, StackConfigError
from components.mig.recorded import RecordedPlan, parse_recorded_plan, record_file_name
from components.stack.config import PROJECT, StackConfig, parse_stack_config, top_level_keys
from components.stack.platforms.registry import platform_of


@dataclass(frozen=True)
class StackSecrets:
    """Every secret the stack config names, as Pulumi secrets (None where the config names none)."""

    #: The platform's secrets by role (``kubeconfig``, ``sshPrivateKey``): what its own sections name.
    platform: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    dex_password_hash: pulumi.Output[str] | None = None
    oidc_client_secret: pulumi.Output[str] | None = None


def read_secrets(stack: StackConfig) -> StackSecrets:
    """The secrets ``stack`` names, read from the engine (``pulumi config set --secret <key>``)."""
    config = pulumi.Config()
    kubeflow = stack.kubeflow
    kubeflow_on = kubeflow is not None and kubeflow.enabled
    return StackSecrets(
        platform=platform_of(stack).read_secrets(stack, config),
        dex_password_hash=config.require_secret(kubeflow.dex.password_hash_secret)
        if kubeflow and kubeflow_on
        else None,
        oidc_client_secret=(
            config.require_secret(kubeflow.oidc_client_secret_key)
            if kubeflow and kubeflow_on and kubeflow.oidc_client_secret_key
            else None
        ),
    )


def _configured_project_keys() -> dict[str, str]:
    """All ``gpu-platform:*`` keys the engine (or the offline preview) passed, as raw strings."""
    values: dict[str, Any] = dict(pulumi.runtime.config.get_config_env())
    values.update(pulumi.runtime.config.CONFIG.get())
    prefix = f"{PROJECT}:"
    return {key[len(prefix) :]: value for key, value in values.items() if key.startswith(prefix)}


def _is_secret_key(key: str) -> bool:
    return bool(pulumi.runtime.config.is_config_secret(f"{PROJECT}:{key}"))


def load_stack_config() -> StackConfig:
    """Read and validate the stack's program config.

    Secret values (kubeconfigs, password hashes, SSH keys) live in their own keys, read later with
    ``require_secret``; the model names those keys, so they are not mistaken for unknown keys.
    """
    configured = _configured_project_keys()
    known = set(top_level_keys())
    raw: dict[str, Any] = {}
    for key in sorted(known & set(configured)):
        text = configured[key]
        try:
            raw[key] = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError:
            raw[key] = text  # a plain string; pydantic reports it against the expected shape
    problems: list[Problem] = []
    stack: StackConfig | None = None
    try:
        stack = parse_stack_config(raw)
    except StackConfigError as error:
        problems.extend(error.problems)
    # Before the model parses we cannot know which secret keys it names: skip keys the engine
    # marks secret then, and report them once the model is known.
    secret_keys = stack.secret_keys() if stack else {key for key in configured if _is_secret_key(key)}
    allowed = ", ".join(sorted(known))
    problems.extend(
        Problem(key, f"unknown config key; allowed: {allowed} (and the secret keys the config names)")
        for key in sorted(configured)
        if key not in known and key not in secret_keys
    )
    if problems or stack is None:
        raise StackConfigError(problems)
    return stack


def read_recorded_mig_plan() -> RecordedPlan | None:
    """The MIG layouts the stack's pools planned from demand got last time (``mig-plans/<stack>.yaml``).

    Read from the project folder, where the engine runs the program, like the stack file beside it;
    None when the stack has recorded none (every GPU is then free to the planner).
    """
    return recorded_mig_plan(Path("."), pulumi.get_stack())


def recorded_mig_plan(folder: Path, stack: str) -> RecordedPlan | None:
    """``mig-plans/<stack>.yaml`` in ``folder``; None when there is none. Also read by the status command."""
    name = record_file_name(stack)
    path = folder / name
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise StackConfigError([Problem(name, f"cannot be read: {error}")]) from None
    recorded, problems = parse_recorded_plan(text, name)
    if problems:
        raise StackConfigError(problems)
    return recorded
