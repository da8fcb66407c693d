"""The base of every config section model, and pydantic errors turned into key-named problems.

Config is checked in two passes. Pydantic checks shape and types (and refuses unknown keys, so a
typo is never silently ignored). Then each section's ``problems()`` checks meaning against the
catalog (a GPU count the platform does not offer, MIG on a V100). Both passes report the full
config key path, the bad value and what is allowed, and every problem is reported at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from components.base.problems import Problem, join_path
from components.catalog.kubernetes import label_key_problem, label_value_problem


class ConfigModel(BaseModel):
    """Base of every config section: camelCase keys in YAML, unknown keys refused, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
    )


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted((field.alias or name) for name, field in model.model_fields.items())


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the last element of ``loc``, for "allowed keys" hints."""
    current: Any = root
    for part in loc[:-1]:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for n, f in current.model_fields.items() if part in (n, f.alias)),
                None,
            )
            if field is None:
                return None
            current = field.annotation
        else:
            current = _unwrap_container(current)
            if current is None:
                return None
        current = _unwrap_optional(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap_optional(annotation: Any) -> Any:
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if getattr(annotation, "__origin__", None) is None and len(args) == 1:  # X | None
        return args[0]
    return annotation


def _unwrap_container(annotation: Any) -> Any:
    """dict[str, M] -> M, list[M] -> M."""
    args = getattr(annotation, "__args__", ())
    return args[-1] if args else None


def problems_from_validation_error(
    error: ValidationError, root: type[BaseModel], prefix: tuple[Any, ...] = ()
) -> list[Problem]:
    """Turn pydantic's errors into Problems with full config key paths and allowed values."""
    problems: list[Problem] = []
    for item in error.errors():
        loc = tuple(part for part in item["loc"] if not (isinstance(part, str) and "[" in part))
        path = join_path(*prefix, *loc) or "(root)"
        kind = item["type"]
        value = item.get("input")
        if kind == "extra_forbidden":
            owner = _model_at(root, loc)
            allowed = f"; allowed keys: {', '.join(_allowed_keys(owner))}" if owner else ""
            message = f"unknown key{allowed}"
        elif kind == "missing":
            message = "is required"
        elif kind == "literal_error":
            expected = item.get("ctx", {}).get("expected", "")
            message = f"{value!r} is not allowed; allowed: {expected}"
        elif kind == "value_error":
            message = str(item["msg"]).removeprefix("Value error, ")
        else:
            message = f"{item['msg']} (got {value!r})" if not isinstance(value, dict) else item["msg"]
        problems.append(Problem(path, message))
    return problems


def label_problems(labels: dict[str, str], path: str) -> Iterator[Problem]:
    """Problems of every key and value of a label map."""
    for key, value in labels.items():
        for problem in (label_key_problem(key), label_value_problem(value)):
            if problem:
                yield Problem(join_path(path, key), problem)
