"""The base of every config section model, and pydantic errors turned into key-named problems.

Config is checked in two passes. Pydantic checks shape and types (and refuses unknown keys, so a
typo is never silently ignored). Then each section's ``problems()`` checks meaning against the
catalog (a GPU count the platform does not offer, MIG on a V100). Both passes report the full
config key path, the bad value and what is allowed, and every problem is reported at once.
"""

from __future__ import annotations

import types
import typing
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from components.base.problems import Problem, join_path
from components.catalog.kubernetes import (
    Taint,
    check_taints,
    gpu_node_taint_problem,
    int32_problem,
    label_key_problem,
    label_value_problem,
    reserved_label_key_problem,
    taint_key,
)
from components.catalog.names import OWNED_KEY_PREFIXES, OWNED_NODE_LABELS

#: The key that tells the members of a discriminated config block apart (``cluster.kind``).
DISCRIMINATOR = "kind"


class ConfigModel(BaseModel):
    """Base of every config section: camelCase keys in YAML, unknown keys refused, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
    )

    @field_validator("*", mode="after")
    @classmethod
    def _fits_the_receiving_field(cls, value: Any) -> Any:
        """Every whole number of the config ends in an int32 field of Kubernetes (or a narrower one of Yandex).

        Why here, once: ``leaseTtlSeconds: 1e12`` parses as an int and would otherwise reach the Lease's int32
        ``leaseDurationSeconds`` (or a Go duration) and fail there, or wrap. Narrower ranges are each field's own.
        Every text likewise: a control character is refused here once (``control_character_problem``).
        """
        if isinstance(value, int) and not isinstance(value, bool):
            problem = int32_problem(value)
            if problem:
                raise ValueError(problem)
        if isinstance(value, str):  # a list's or a map's texts are each checked by their grammar, at their index
            problem = control_character_problem(value)
            if problem:
                raise ValueError(problem)
        return value


def control_character_problem(text: str) -> str | None:
    """Why ``text`` cannot be a config value: it holds a control character (a 0 byte, a line break, an escape).

    No key of the stack takes one: every value ends in a name, a label, a path, a one-line command argument or a
    text shown on one line; a 0 byte ends a C string early (a path, a label on the host) and a line break splits a
    line-based format (the host steps' ``export`` lines, an annotation shown in a table).
    """
    found = next((c for c in text if unicodedata.category(c) == "Cc"), None)
    if found is None:
        return None
    return f"holds the control character {found!r} ({ord(found):#06x}); no key of the stack takes one"


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted((field.alias or name) for name, field in model.model_fields.items())


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` -> X and ``X | None`` -> X."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (Union, types.UnionType) and len(args) == 1:
        return _unwrap(args[0])
    return annotation


def _tagged_members(annotation: Any) -> dict[str, type[BaseModel]] | None:
    """For a discriminated union of models (``kind: Literal[...]`` in each), tag -> member; else None."""
    if typing.get_origin(annotation) not in (Union, types.UnionType):
        return None
    members: dict[str, type[BaseModel]] = {}
    for member in typing.get_args(annotation):
        if not (isinstance(member, type) and issubclass(member, BaseModel)) or DISCRIMINATOR not in member.model_fields:
            return None
        for tag in typing.get_args(member.model_fields[DISCRIMINATOR].annotation):
            members[str(tag)] = member
    return members or None


def _walk(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], type[BaseModel] | None]:
    """``loc`` without the union tags pydantic inserts, and the model owning its last element.

    Pydantic reports an error inside a discriminated union as ``("cluster", "yandex", "clusterId")``;
    the user wrote ``cluster.clusterId``, so the tag is dropped from the key path.
    """
    clean: list[Any] = []
    current: Any = root
    parts = list(loc)
    owner: type[BaseModel] | None = root
    index = 0
    while index < len(parts):
        part = parts[index]
        current = _unwrap(current)
        members = _tagged_members(current)
        if members is not None and isinstance(part, str) and part in members:
            current = members[part]
            index += 1
            continue
        if members is None and typing.get_origin(current) in (Union, types.UnionType) and isinstance(part, str):
            # A scalar union (``int | str``): pydantic names the member it tried (``int``, ``constrained-str``);
            # the user wrote the key above it, so the member's name is no part of the key path.
            current, index = None, index + 1
            continue
        clean.append(part)
        if isinstance(current, type) and issubclass(current, BaseModel):
            owner = current
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = field.annotation if field is not None else None
        elif typing.get_origin(current) in (dict, list):
            owner = None
            args = typing.get_args(current)
            current = args[-1] if args else None
        else:
            owner, current = None, None
        index += 1
    return tuple(clean), owner


def problems_from_validation_error(
    error: ValidationError, root: type[BaseModel], prefix: tuple[Any, ...] = ()
) -> list[Problem]:
    """Turn pydantic's errors into Problems with full config key paths and allowed values."""
    problems: list[Problem] = []
    for item in error.errors():
        raw_loc = tuple(part for part in item["loc"] if not (isinstance(part, str) and "[" in part))
        loc, owner = _walk(root, raw_loc)
        kind = item["type"]
        value = item.get("input")
        ctx = item.get("ctx", {})
        if kind in ("union_tag_invalid", "union_tag_not_found"):
            loc = (*loc, DISCRIMINATOR)
        path = join_path(*prefix, *loc) or "(root)"
        if kind == "extra_forbidden":
            allowed = f"; allowed keys: {', '.join(_allowed_keys(owner))}" if owner else ""
            message = f"unknown key{allowed}"
        elif kind == "missing":
            message = "is required"
        elif kind == "literal_error":
            message = f"{value!r} is not allowed; allowed: {ctx.get('expected', '')}"
        elif kind == "union_tag_invalid":
            message = f"{ctx.get('tag')!r} is not allowed; allowed: {ctx.get('expected_tags', '')}"
        elif kind == "union_tag_not_found":
            message = "is required (it decides which other keys this block takes)"
        elif kind == "value_error":
            message = str(item["msg"]).removeprefix("Value error, ")
        else:
            message = f"{item['msg']} (got {value!r})" if not isinstance(value, dict) else item["msg"]
        problems.append(Problem(path, message))
    return _one_per_union(problems)


def _one_per_union(problems: list[Problem]) -> list[Problem]:
    """The members' refusals of one value of a scalar union, as one problem: what each member expected."""
    merged: dict[str, list[str]] = {}
    for problem in problems:
        merged.setdefault(problem.path, []).append(problem.message)
    result: list[Problem] = []
    for path, messages in merged.items():
        got = [m for m in messages if m.startswith("Input should be ")]
        if len(got) > 1:
            expected = " or ".join(m.removeprefix("Input should be ").split(" (got ")[0] for m in got)
            tail = got[0].partition(" (got ")[2]
            messages = [m for m in messages if m not in got] + [
                f"Input should be {expected}" + (f" (got {tail}" if tail else "")
            ]
        result.extend(Problem(path, message) for message in dict.fromkeys(messages))
    return result


def taint_key_problems(texts: list[str], path: str) -> Iterator[Problem]:
    """A user taint whose key is in a family the platform writes (the node agent removes its own taints)."""
    for index, text in enumerate(texts):
        key = taint_key(text)
        problem = reserved_label_key_problem(key, (), OWNED_KEY_PREFIXES) if key else None
        if problem:
            yield Problem(join_path(path, index), problem)


@dataclass(frozen=True)
class CheckedTaints:
    """A config section's taint list, parsed once by the catalog's rules, with every problem at its key path."""

    taints: tuple[Taint, ...]  #: the taints that parse
    problems: tuple[Problem, ...]  #: the form, one taint per key and effect, a key in a family the platform writes
    #: Why the taints break "a GPU node carries a NoSchedule taint" (``gpu_node_taint_problem``); None where they
    #: keep it, and where one of them does not parse (that one is the problem then).
    untainted: str | None


def checked_taints(texts: list[str], path: str) -> CheckedTaints:
    """The taint list ``texts`` at key ``path`` (``nodeGroups.a100.taints``) checked once: what a node group, a
    bare-metal node and a pool of nodes someone else provisions all ask of their ``taints``."""
    parsed, found = check_taints(texts)
    problems = [Problem(join_path(path, *(() if index is None else (index,))), message) for index, message in found]
    problems.extend(taint_key_problems(texts, path))
    untainted = gpu_node_taint_problem(parsed) if len(parsed) == len(texts) else None
    return CheckedTaints(tuple(parsed), tuple(problems), untainted)


def gpu_node_taints_problems(texts: list[str], path: str, *, allow_untainted: bool, fix: str) -> Iterator[Problem]:
    """A GPU node's declared taints (a bare-metal host's, an existing pool's): every problem of the list, and one
    at the list when no NoSchedule taint keeps other pods off its GPUs unless ``allow_untainted``; ``fix`` says how,
    in the words of who sets the taints there."""
    checked = checked_taints(texts, path)
    yield from checked.problems
    if checked.untainted and not allow_untainted:
        yield Problem(path, f"a GPU node {checked.untainted}: {fix}")


def label_problems(labels: dict[str, str], path: str) -> Iterator[Problem]:
    """Problems of every key and value of a user's node label map (reserved and platform-owned keys refused)."""
    for key, value in labels.items():
        problem = label_key_problem(key) or reserved_label_key_problem(key, OWNED_NODE_LABELS, OWNED_KEY_PREFIXES)
        for found in (problem, label_value_problem(value)):
            if found:
                yield Problem(join_path(path, key), found)
