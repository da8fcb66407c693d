"""Reads ``Pulumi.<stack>.yaml`` the way the Pulumi CLI passes it to a program.

Structured values become JSON strings (what ``pulumi.Config.require_object`` parses). ``secure:``
values cannot be decrypted without the CLI and the stack's secrets provider, so the offline preview
replaces them with clearly marked dummies and keeps them secret; a real ``pulumi up`` uses the real
values and fails if they are missing.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.base import strict_yaml
from components.stack.config import PROJECT

OFFLINE_DUMMY_PREFIX = "offline-preview-dummy"
#: Keys of a Pulumi stack settings file (github.com/pulumi/pulumi sdk/go/common/workspace/project.go ProjectStack).
STACK_FILE_KEYS = frozenset({"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"})
#: Config namespaces a stack of this project may set: ours and the providers the program uses.
CONFIG_NAMESPACES = frozenset({PROJECT, "yandex", "kubernetes", "random", "command", "pulumi"})
MAX_KEY_LENGTH = 256


class StackFileError(ValueError):
    """The stack file cannot be read as a stack file; ``str()`` is one line: ``<file>[:line:col]: <what>``."""


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
    raw = _config_of(path)
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


def _config_of(path: Path) -> dict[str, Any]:
    """The ``config`` mapping of a stack file, read strictly; ``StackFileError`` names what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise StackFileError(f"{path.name}: not UTF-8 text (byte {error.start})") from None
    try:
        document = strict_yaml.load(text)
    except strict_yaml.StrictYamlError as error:
        where = f":{error.line}:{error.column}" if error.line else ""
        raise StackFileError(f"{path.name}{where}: {error.message}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise StackFileError(f"{path.name}: must be a mapping with a 'config' key, not a {type(document).__name__}")
    unknown = sorted(set(document) - STACK_FILE_KEYS)
    if unknown:
        raise StackFileError(
            f"{path.name}: unknown top-level key {unknown[0]!r}; allowed: {', '.join(sorted(STACK_FILE_KEYS))}"
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{path.name}: 'config' must be a mapping of namespace:key to values")
    for key in config:
        _check_key(path, key)
    return dict(config)


def _check_key(path: Path, key: str) -> None:
    if len(key) > MAX_KEY_LENGTH:
        raise StackFileError(f"{path.name}: config key {key[:40]!r}... is longer than {MAX_KEY_LENGTH} characters")
    namespace, colon, name = key.partition(":")
    if not colon or not name:
        raise StackFileError(f"{path.name}: config key {key!r} needs a namespace, e.g. {PROJECT}:{key}")
    if namespace not in CONFIG_NAMESPACES:
        close = difflib.get_close_matches(namespace, sorted(CONFIG_NAMESPACES), n=1)
        hint = f" (did you mean {close[0]}:{name}?)" if close else ""
        raise StackFileError(
            f"{path.name}: config key {key!r} has an unknown namespace {namespace!r}{hint}; "
            f"allowed: {', '.join(sorted(CONFIG_NAMESPACES))}"
        )
