"""Reads ``Pulumi.<stack>.yaml`` the way the Pulumi CLI passes it to a program.

Structured values become JSON strings (what ``pulumi.Config.require_object`` parses). ``secure:``
values cannot be decrypted without the CLI and the stack's secrets provider, so the offline preview
replaces them with clearly marked dummies and keeps them secret; a real ``pulumi up`` uses the real
values and fails if they are missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

OFFLINE_DUMMY_PREFIX = "offline-preview-dummy"


@dataclass(frozen=True)
class StackFile:
    """The flat config of one stack, as the engine hands it to the program."""

    stack: str
    config: dict[str, str]
    secret_keys: list[str]


def offline_dummy(key: str) -> str:
    """The stand-in of a secure value in offline mode (never used by a real deployment)."""
    return f"{OFFLINE_DUMMY_PREFIX}:{key}"


def stack_file_path(root: Path, stack: str) -> Path:
    """``<root>/Pulumi.<stack>.yaml``."""
    return root / f"Pulumi.{stack}.yaml"


def available_stacks(root: Path) -> list[str]:
    """Every stack that has a ``Pulumi.<stack>.yaml`` in ``root``."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def load_stack_file(root: Path, stack: str, overrides: dict[str, Any] | None = None) -> StackFile:
    """Load a stack file; ``overrides`` (``{"gpu-platform:key": value}``) replace or add keys."""
    path = stack_file_path(root, stack)
    if not path.exists():
        known = ", ".join(available_stacks(root)) or "none"
        raise FileNotFoundError(f"no stack file {path.name}; stacks in this project: {known}")
    document = yaml.safe_load(path.read_text()) or {}
    raw: dict[str, Any] = dict(document.get("config") or {})
    raw.update(overrides or {})
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in raw.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = offline_dummy(key)
            secret_keys.append(key)
        elif isinstance(value, str):
            config[key] = value
        else:
            config[key] = json.dumps(value)
    return StackFile(stack=stack, config=config, secret_keys=sorted(secret_keys))
