"""Policy configuration: one schema per tunable policy, and reading it with the schema's defaults.

The Pulumi CLI validates ``--policy-pack-config`` against each schema and fills in the defaults;
``args.get_config()`` is then complete. Other callers (unit tests, the offline gate) hand over
whatever they have, so ``setting`` falls back to the schema default itself: the default is written
once, in the schema, and holds on every path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol

from pulumi_policy import Policy, PolicyConfigSchema


class HasConfig(Protocol):
    """``ResourceValidationArgs`` and ``StackValidationArgs`` both offer this."""

    def get_config(self) -> Mapping[str, Any]: ...


def schema_defaults(policy: Policy) -> dict[str, Any]:
    """The ``default`` of every property in the policy's config schema (deep copies)."""
    schema = policy.config_schema
    if schema is None:
        return {}
    return {key: copy.deepcopy(spec["default"]) for key, spec in schema.properties.items() if "default" in spec}


def setting(args: HasConfig, schema: PolicyConfigSchema, key: str) -> Any:
    """The configured value of ``key``, else the schema's default, else None."""
    config = args.get_config() or {}
    if key in config:
        return config[key]
    spec = schema.properties[key]
    return copy.deepcopy(spec.get("default"))


def string_list(value: Any) -> list[str]:
    """A configured list of strings (anything else ignored)."""
    if isinstance(value, str) or value is None:
        return []
    try:
        return [item for item in value if isinstance(item, str)]
    except TypeError:
        return []
