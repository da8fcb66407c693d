"""Generates docs/configuration.md from the config models: every key, its type, default and meaning.

Generated, not written by hand, so the reference can never drift from what the program accepts;
a test regenerates it and compares. ``python -m components.stack.reference > docs/configuration.md``.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from components.stack.config import PROJECT, StackConfig

HEADER = f"""# Configuration reference

Generated from the config models by `python -m components.stack.reference`; do not edit by hand.

Every key lives under the `{PROJECT}:` namespace of `Pulumi.<stack>.yaml`, one structured value per
top-level key. Unknown keys are errors at every level. Secrets are never values here: keys such as
`dex.passwordHashSecret` name a secret config key set with `pulumi config set --secret`.
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args if a is not type(None)) + (
            " or null" if type(None) in args else ""
        )
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}" if args else "map"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    return getattr(annotation, "__name__", str(annotation))


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models(arg))
    return found


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    default = field.get_default(call_default_factory=True) if field.default is PydanticUndefined else field.default
    if isinstance(default, BaseModel):
        return "(see keys)"
    if default is None:
        return "null"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if hasattr(default, "value"):
        return f"`{default.value}`"
    return f"`{default}`"


def _rows(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, field in model.model_fields.items():
        key = f"{prefix}.{field.alias or name}" if prefix else (field.alias or name)
        nested = _models(field.annotation)
        doc = (field.description or (_model_doc(nested[0]).split(". ")[0] if nested else "")).replace("|", "\\|")
        collection = typing.get_origin(field.annotation) in (dict, list) or any(
            typing.get_origin(a) in (dict, list) for a in typing.get_args(field.annotation)
        )
        yield f"| `{key}` | {_type_name(field.annotation)} | {_default(field)} | {doc} |"
        for sub in nested:
            sub_prefix = (
                f"{key}.<name>"
                if collection and "map of" in _type_name(field.annotation)
                else (f"{key}[]" if collection else key)
            )
            yield from _rows(sub, sub_prefix)


def _model_doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


def _table(model: type[BaseModel], prefix: str) -> list[str]:
    return ["| key | type | default | notes |\n| --- | --- | --- | --- |", *_rows(model, prefix)]


def render() -> str:
    """The whole reference as Markdown."""
    parts = [HEADER]
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        models = _models(field.annotation)
        required = "required" if field.is_required() else "optional"
        parts.append(f"\n## `{PROJECT}:{key}` ({required})\n")
        sub_prefix = f"{key}.<name>" if "map of" in _type_name(field.annotation) else key
        if len(models) > 1:  # a discriminated block: one table per kind
            for model in models:
                tag = " \\| ".join(f"`{value}`" for value in typing.get_args(model.model_fields["kind"].annotation))
                parts.append(f"\nWith `kind` {tag}: {_model_doc(model)}\n")
                parts.extend(_table(model, sub_prefix))
            continue
        if models:
            parts.append(_model_doc(models[0]) + "\n")
        parts.extend(_table(models[0], sub_prefix) if models else _table(BaseModel, sub_prefix))
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
