"""``diff.json`` read back: a JSON Schema derived from the ``StackDiff`` dataclasses, and a strict loader.

Why: the pull-request comment is built by the base branch's code from the ``diff.json`` a pull
request's run uploaded (``preview.diff.comment``). That file is untrusted input: the schema refuses any key,
type or shape the dataclasses do not have, so a report cannot smuggle in text the reports never write
(a forged banner, raw HTML, another stack), and the loader builds the same dataclasses the reports
are rendered from. The schema is derived from the type hints, so it cannot drift from ``to_json``.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

import jsonschema

from preview.diff.changes import StackDiff

#: A stack name as the reports and ``Pulumi.<stack>.yaml`` spell it.
STACK_NAME = "^[a-z0-9][a-z0-9-]{0,62}$"
MAX_STRING = 200_000
MAX_ITEMS = 20_000
_DERIVED = {"counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}


def _schema_of(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is str:
        return {"type": "string", "maxLength": MAX_STRING}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_of(arg) for arg in typing.get_args(hint)]}
    if origin in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return {"type": "array", "maxItems": MAX_ITEMS, "items": _schema_of(args[0])}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint)
        fields = [f.name for f in dataclasses.fields(hint)]
        return {
            "type": "object",
            "additionalProperties": False,
            "required": fields,
            "properties": {name: _schema_of(hints[name]) for name in fields},
        }
    raise TypeError(f"diff.json schema: no JSON shape for {hint!r}")


def diff_schema() -> dict[str, Any]:
    """The JSON Schema of ``diff.json`` (``StackDiff.to_json``)."""
    schema = _schema_of(StackDiff)
    schema["properties"]["stack"] = {"type": "string", "pattern": STACK_NAME}
    schema["properties"].update(_DERIVED)
    schema["required"] = [*schema["required"], *_DERIVED]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _build(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        return _build(next(a for a in typing.get_args(hint) if a is not type(None)), value)
    if origin is tuple:
        return tuple(_build(typing.get_args(hint)[0], item) for item in value)
    if origin is list:
        return [_build(typing.get_args(hint)[0], item) for item in value]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: _build(hints[f.name], value[f.name]) for f in dataclasses.fields(hint)})
    return value


class DiffJsonError(ValueError):
    """``diff.json`` is not a report this code wrote: not JSON, or not of the schema."""


def load_diff(text: str) -> StackDiff:
    """A ``StackDiff`` from untrusted ``diff.json`` text; ``DiffJsonError`` unless it matches the schema exactly."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DiffJsonError(f"not JSON: {error}") from error
    try:
        jsonschema.validate(document, diff_schema())
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise DiffJsonError(f"not a diff.json of this project at {where}: {error.message[:200]}") from error
    diff: StackDiff = _build(StackDiff, document)
    if document["counts"] != diff.counts():
        raise DiffJsonError("counts do not match the resources listed")
    return diff
