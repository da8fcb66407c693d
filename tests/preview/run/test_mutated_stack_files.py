"""Property: whatever a stack file says, the preview exits 0, 2 or 3, never with a traceback, and every
refusal names a key (or the file position). Both stacks; structured and raw-text mutations.

The counts of examples and outcomes are printed at the end of the test run (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preview.__main__ import preview_stack_guarded
from tests.helpers import ROOT
from tests.properties import examples

OUTCOMES: Counter[str] = Counter()
STACKS = ("dev", "prod")
TEXTS = {stack: (ROOT / f"Pulumi.{stack}.yaml").read_text() for stack in STACKS}
DOCUMENTS = {stack: yaml.safe_load(text) for stack, text in TEXTS.items()}
# One refusal line of a config problem: "  <key path>: <message>"; or the file position form.
PROBLEM_LINE = re.compile(r"  \S.*?: \S")
FILE_LINE = re.compile(r"error: Pulumi\.\w+\.yaml(:\d+:\d+)?: \S")

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
TOKENS = st.sampled_from(
    [
        "[",
        "]",
        "{",
        "}",
        ": ",
        "- ",
        "*a",
        "&a ",
        "\t",
        "\x00",
        "!!set ",
        "!!binary ",
        "---\n",
        "2024-01-01",
        "\n",
        "'",
        '"',
        "#",
        "? ",
        "|",
        ">",
        "%YAML 1.1\n",
        "~",
        ".inf",
    ]
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


PATHS = {stack: [p for p in _paths(DOCUMENTS[stack]) if p[0] == "config" and len(p) > 1] for stack in STACKS}


def _set(document: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    node = document
    for part in path[:-1]:
        node = node[part]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return document


@st.composite
def mutated_files(draw: st.DrawFn) -> tuple[str, str]:
    stack = draw(st.sampled_from(STACKS))
    if draw(st.booleans()):  # structured: one key set to any JSON value, or deleted
        document = yaml.safe_load(TEXTS[stack])
        path = draw(st.sampled_from(PATHS[stack]))
        _set(document, path, draw(JSON_VALUES), delete=draw(st.booleans()))
        return stack, yaml.safe_dump(document, sort_keys=False)
    text = TEXTS[stack]  # raw text: a token inserted, or a slice deleted or duplicated
    start = draw(st.integers(0, len(text)))
    end = min(len(text), start + draw(st.integers(0, 40)))
    edit = draw(st.sampled_from(["insert", "delete", "duplicate"]))
    if edit == "insert":
        return stack, text[:start] + draw(TOKENS) + text[start:]
    if edit == "delete":
        return stack, text[:start] + text[end:]
    return stack, text[:end] + text[start:end] + text[end:]


def _project(root: Path) -> Path:
    """A project folder with the real program and a stack file we overwrite per example."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream"):
        link = root / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    return root


# Each example is a whole preview: 24 in make test, 480 random ones in make fuzz.
@settings(max_examples=examples(24), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=mutated_files())
def test_no_stack_file_crashes_the_preview_and_every_refusal_names_a_key(
    tmp_path_factory: Any, case: tuple[str, str]
) -> None:
    stack, text = case
    root = _project(tmp_path_factory.getbasetemp() / "mutation-project")
    (root / f"Pulumi.{stack}.yaml").write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = preview_stack_guarded(stack, root / "out", True, root)  # unchanged renders come from the render cache
    output = out.getvalue() + err.getvalue()
    OUTCOMES[f"exit {code}"] += 1
    assert code in (0, 2, 3), output
    assert "Traceback" not in output, output
    if code == 2:
        lines = err.getvalue().splitlines()
        assert FILE_LINE.match(lines[0]) or lines[0].startswith(f"error: stack {stack}: invalid stack config"), lines
        problems = lines[1:-1]
        assert all(PROBLEM_LINE.match(line) for line in problems), problems
