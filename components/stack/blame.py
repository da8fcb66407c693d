"""An error no check expected, raised while the stack is read or planned, as a problem at the key it is about.

Every value is checked by its receiver's rule before it is used (``components.catalog``), so a check or a planning
function that raises on some input is a bug. It must still reach the user as a refused config that names the key,
never as a traceback: a user cannot fix what they cannot find. Where the key is found, in this order:

- the config value the error quotes (``OSError.filename``, or a value the message repeats), the longest that fits,
  among the keys of the section below;
- the section: the innermost config model (or one passed as an argument) on the traceback, located in the stack.

Pure Python; the stack's config and plan call ``problem_for`` from their catch-all.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from components.base.problems import Problem, join_path

#: The shortest value matched in an error's text (shorter ones, ``1`` or ``true``, are in every message).
_MIN_MATCH = 4


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    else:
        yield path, node


def _models(node: Any, path: tuple[Any, ...], found: dict[int, tuple[Any, ...]]) -> None:
    """``id(model) -> key path`` for every config model below ``node`` (the path of its key in the file)."""
    if isinstance(node, BaseModel):
        found.setdefault(id(node), path)
        for name, field in type(node).model_fields.items():
            _models(getattr(node, name, None), (*path, field.alias or name), found)
    elif isinstance(node, Mapping):
        for key, value in node.items():
            _models(value, (*path, key), found)
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            _models(value, (*path, index), found)


def _section(error: BaseException, stack: BaseModel | None) -> tuple[Any, ...]:
    """The key path of the innermost config model on the traceback (``self`` or an argument), or ``()``."""
    if stack is None:
        return ()
    located: dict[int, tuple[Any, ...]] = {}
    _models(stack, (), located)
    located.pop(id(stack), None)
    best: tuple[Any, ...] = ()
    for frame, _ in traceback.walk_tb(error.__traceback__):
        for value in frame.f_locals.values():
            path = located.get(id(value))
            if path is not None and len(path) >= len(best):
                best = path
    return best


def _quoted(error: BaseException) -> list[str]:
    texts = [str(error), *(str(arg) for arg in error.args)]
    for attribute in ("filename", "filename2"):
        value = getattr(error, attribute, None)
        if value is not None:
            texts.append(str(value))
    return texts


def _value_path(error: BaseException, raw: Mapping[str, Any], within: tuple[Any, ...]) -> tuple[Any, ...] | None:
    texts = _quoted(error)
    best: tuple[int, tuple[Any, ...]] | None = None
    for path, value in _leaves(raw):
        if path[: len(within)] != within or isinstance(value, bool) or value is None:
            continue
        shown = str(value)
        prefix = shown[:60]
        quoted = len(prefix) >= _MIN_MATCH and any(prefix in text or repr(prefix)[1:-1] in text for text in texts)
        if quoted and (best is None or len(shown) > best[0]):
            best = (len(shown), path)
    return best[1] if best else None


def problem_for(error: BaseException, raw: Mapping[str, Any], stack: BaseModel | None = None) -> Problem:
    """``error`` (raised by a check or the planning on this config) as a problem at the key it is about."""
    section = _section(error, stack)
    path = _value_path(error, raw, section) or _value_path(error, raw, ()) or section
    detail = " ".join(str(error).split())[:300]
    return Problem(
        join_path(*path) if path else "(config)",
        f"could not be checked ({type(error).__name__}: {detail}); this value stopped gpu-platform before it could "
        "say what is wrong with it, which is a bug to report; meanwhile change the value",
    )
