"""A YAML reader for the files the program reads (stack files, the recorded MIG plan) that refuses what YAML hides.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys, turns ``2024-01-01`` into a
date and ``!!binary``/``!!set`` into non-JSON types, and expands aliases without bound (an alias bomb
runs for minutes and takes gigabytes). Stack config is JSON-shaped and the CLI refuses duplicate
keys, so this reader allows exactly that: mappings with string keys, sequences, strings, numbers,
booleans and null, bounded in depth and in the size aliases expand to; merge keys (``<<: *anchor``) are
resolved as YAML defines them. Every refusal carries the
line and column of the offending node.

It lives in ``components.base`` because both the offline preview (``preview/run/stack_file.py``, the stack
file) and the program (``components/mig/recorded.py``, ``mig-plans/<stack>.yaml``) read with it;
``load_with_lines`` also says on which line each key was written, so a check made after loading can
still name the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_DEPTH = 64  #: nesting levels a stack file may use (the deepest real key path is under 10)
#: Values the document may expand to once aliases are followed. The bound is on the expanded size, as
#: YAML libraries bound alias bombs, not on the number of alias uses: a 1,000-node stack that shares its
#: taints through one anchor is ~60,000 values; seven nested 9-fold aliases are 4.8 million.
MAX_EXPANDED_NODES = 200_000

#: The tag of ``<<`` (https://yaml.org/type/merge.html): a mapping's keys laid under another's, the usual way a stack
#: file shares one node group's settings with others (``<<: *gpu-defaults``). The Pulumi CLI reads stack files with
#: gopkg.in/yaml.v3, which resolves merge keys the same way (a key of the mapping itself wins over a merged one).
MERGE_TAG = "tag:yaml.org,2002:merge"

#: What the duplicate-key refusal adds for a stack file (``load``); other files pass their own note.
STACK_FILE_DUPLICATE_NOTE = " and the Pulumi CLI refuses the file"

_NOT_JSON = {
    "tag:yaml.org,2002:timestamp": "a YAML date or timestamp",
    "tag:yaml.org,2002:binary": "!!binary data",
    "tag:yaml.org,2002:set": "a !!set",
    "tag:yaml.org,2002:omap": "an !!omap",
    "tag:yaml.org,2002:pairs": "!!pairs",
}


class StrictYamlError(ValueError):
    """The text is not a stack file this reader accepts; ``line`` and ``column`` are 1-based (0: unknown)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _where(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader with duplicate keys, non-string keys and non-JSON types refused."""

    #: Said after a duplicate key: who else refuses the file (the Pulumi CLI, for a stack file).
    duplicate_note = STACK_FILE_DUPLICATE_NOTE

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue  # ``<<: *defaults``: merged below, the mapping's own keys win (YAML merge key type)
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                line, column = _where(key_node)
                raise StrictYamlError("a mapping key must be a string (quote it)", line, column)
            key = key_node.value
            if key in seen:
                line, column = _where(key_node)
                raise StrictYamlError(
                    f"duplicate key {key!r} (first at line {seen[key]}); YAML keeps only one of them{self.duplicate_note}",
                    line,
                    column,
                )
            seen[key] = key_node.start_mark.line + 1
        self.flatten_mapping(node)  # the merged keys first, then the mapping's own: the later (own) value wins
        return super().construct_mapping(node, deep=deep)


def _refuse_not_json(loader: yaml.SafeLoader, node: Node) -> Any:
    line, column = _where(node)
    what = _NOT_JSON.get(node.tag, node.tag)
    raise StrictYamlError(f"{what} is not a config value (config is JSON-shaped); quote it as a string", line, column)


for _tag in _NOT_JSON:
    _StrictLoader.add_constructor(_tag, _refuse_not_json)


def _check_shape(root: Node) -> None:
    """Depth and expanded size as if every alias were expanded, computed without expanding any.

    An alias shares its anchor's node, so each distinct node is measured once (its expanded size and
    height memoised by identity): the check is linear in the text however often anchors are reused,
    and it refuses an alias bomb before PyYAML builds anything.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)

    def measure(node: Node, depth: int) -> tuple[int, int]:
        known = measured.get(id(node))
        if known is None:
            if depth > MAX_DEPTH:
                line, column = _where(node)
                raise StrictYamlError(f"nested deeper than {MAX_DEPTH} levels", line, column)
            children: list[Node] = []
            if isinstance(node, SequenceNode):
                children = list(node.value)
            elif isinstance(node, MappingNode):
                children = [part for pair in node.value for part in pair]
            total, height = 1, 0
            for child in children:
                child_size, child_height = measure(child, depth + 1)
                if depth + 1 + child_height > MAX_DEPTH:  # an alias of a deep anchor, used deep: name the use
                    line, column = _where(node)
                    raise StrictYamlError(f"nested deeper than {MAX_DEPTH} levels once aliases expand", line, column)
                total += child_size
                height = max(height, child_height + 1)
                if total > MAX_EXPANDED_NODES:
                    line, column = _where(node)
                    raise StrictYamlError(
                        f"expands to more than {MAX_EXPANDED_NODES} values (an alias bomb?)", line, column
                    )
            known = measured[id(node)] = (total, height)
        return known

    measure(root, 0)


def _reader_message(text: str, error: yaml.YAMLError) -> str:
    character = getattr(error, "character", None)
    if isinstance(character, int):
        return f"character {character:#06x} is not allowed in a stack file"
    return str(error).splitlines()[0] if str(error) else "unreadable YAML"


def _reader_position(text: str, error: yaml.YAMLError) -> tuple[int, int]:
    position = getattr(error, "position", None)
    if not isinstance(position, int):
        return 0, 0
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


def _check_depth(text: str) -> None:
    """Refuse deep nesting from the event stream, before PyYAML's recursive composer can overflow."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
                raise StrictYamlError(f"nested deeper than {MAX_DEPTH} levels", line, column)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


KeyPath = tuple[str | int, ...]


def load(text: str) -> Any:
    """The one document of ``text`` as plain JSON-shaped data; ``StrictYamlError`` otherwise."""
    return _read(text, None, STACK_FILE_DUPLICATE_NOTE)


def load_with_lines(text: str, duplicate_note: str = "") -> tuple[Any, dict[KeyPath, int]]:
    """``load``, and the 1-based line of every key path written: ``("pools", "a", "gpus", 1)`` -> line.

    A mapping entry's line is its key's line; a sequence item's line is where the item starts. The root
    is ``()``. An alias's contents are not listed under the alias (they were written at the anchor).
    ``duplicate_note`` is appended to a duplicate key's refusal (say what the reader does with the file).
    """
    lines: dict[KeyPath, int] = {}
    return _read(text, lines, duplicate_note), lines


def _entries(root: Node) -> Iterator[tuple[KeyPath, int, bool]]:
    """Every key path below ``root`` with the 1-based line it was written on and whether it is a mapping key
    (else a sequence item), in document order within each node; each distinct node is expanded once, so an
    alias's contents are not listed again under the alias."""
    seen: set[int] = set()
    pending: list[tuple[KeyPath, Node]] = [((), root)]
    while pending:
        path, node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode):
                    yield (*path, key_node.value), key_node.start_mark.line + 1, True
                    pending.append(((*path, key_node.value), value_node))
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                yield (*path, index), item.start_mark.line + 1, False
                pending.append(((*path, index), item))


def _note_lines(root: Node, lines: dict[KeyPath, int]) -> None:
    """Fill ``lines`` from the composed node tree."""
    lines.setdefault((), root.start_mark.line + 1)
    for path, line, _ in _entries(root):
        lines.setdefault(path, line)


def key_path_at(text: str, line: int) -> KeyPath | None:
    """The key path of the mapping key written on ``line`` (1-based), e.g. the second of two duplicate keys.

    For naming the key of a refusal that came before the document could be built (``StrictYamlError``
    has the line only). Composes the text without building it; None where no key starts on that line or
    the text cannot be composed.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    if root is None:
        return None
    return next((path for path, at, is_key in _entries(root) if is_key and at == line), None)


def _read(text: str, lines: dict[KeyPath, int] | None, duplicate_note: str) -> Any:
    try:
        loader = _StrictLoader(text)
        loader.duplicate_note = duplicate_note
    except yaml.YAMLError as error:  # ReaderError: a NUL byte or another unprintable character
        raise StrictYamlError(_reader_message(text, error), *_reader_position(text, error)) from None
    try:
        _check_depth(text)
        root = loader.get_single_node()
        if root is None:
            return None
        _check_shape(root)
        if lines is not None:
            _note_lines(root, lines)  # before constructing: merge keys are then still as written
        return loader.construct_document(root)
    except StrictYamlError:
        raise
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = " ".join(part for part in (error.context, error.problem) if part) or str(error)
        if mark is None:
            raise StrictYamlError(problem) from None
        raise StrictYamlError(problem, mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as error:
        raise StrictYamlError(_reader_message(text, error), *_reader_position(text, error)) from None
    except RecursionError:
        raise StrictYamlError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
