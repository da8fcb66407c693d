"""Stack files that are not JSON-shaped YAML are refused in one line with file, line and column."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from preview.run.stack_file import StackFileError, load_stack_file
from tests.helpers import ROOT

VALID = (ROOT / "Pulumi.dev.yaml").read_text()

# (mutated text, what the one-line message must contain)
BAD_FILES = {
    "unclosed flow sequence": ("config:\n  gpu-platform:cuda: [1, 2\n", "Pulumi.t.yaml:3:1: "),
    "tab in the indentation": ("config:\n\tgpu-platform:cuda: 1\n", "Pulumi.t.yaml:2:1: "),
    "undefined alias": ("config:\n  gpu-platform:cuda: *nothing\n", "undefined alias"),
    "two documents": (VALID + "---\nconfig: {}\n", "expected a single document"),
    "NUL byte": ("config:\n  gpu-platform:cuda: a\x00b\n", "character 0x0000 is not allowed"),
    "key over 1,024 characters": ("config:\n  " + "k" * 1100 + ": 1\n", "Pulumi.t.yaml:2:"),
    "a date": ("config:\n  gpu-platform:environment: {name: 2024-01-01}\n", "a YAML date or timestamp"),
    "a timestamp": ("config:\n  gpu-platform:x: 2024-01-01T10:00:00Z\n", "a YAML date or timestamp"),
    "binary": ("config:\n  gpu-platform:x: !!binary aGk=\n", "!!binary data"),
    "set": ("config:\n  gpu-platform:x: !!set {a}\n", "a !!set"),
    "document is a list": ("- config\n", "must be a mapping with a 'config' key, not a list"),
    "document is a string": ("config\n", "must be a mapping with a 'config' key, not a str"),
    "config is a list": ("config:\n  - a\n", "'config' must be a mapping"),
    "non-string key": ("config:\n  1: a\n", "a mapping key must be a string"),
    "1,000 levels of nesting": (
        "config:\n  gpu-platform:x: " + "[" * 1000 + "]" * 1000 + "\n",
        "nested deeper than 64",
    ),
    "duplicate key": (
        "config:\n  gpu-platform:cuda: {version: '12.6'}\n  gpu-platform:cuda: {version: '12.8'}\n",
        "Pulumi.t.yaml:3:3: duplicate key 'gpu-platform:cuda' (first at line 2)",
    ),
    "duplicate nested key": (
        "config:\n  gpu-platform:cuda:\n    version: '12.6'\n    version: '12.8'\n",
        ":4:5: duplicate",
    ),
    "misspelled project namespace": (
        "config:\n  gpu-platfrom:cuda: {version: '12.6'}\n",
        "unknown namespace 'gpu-platfrom' (did you mean gpu-platform:cuda?)",
    ),
    "key without a namespace": ("config:\n  cuda: {version: '12.6'}\n", "needs a namespace, e.g. gpu-platform:cuda"),
    "unknown top-level key": ("configs: {}\n", "unknown top-level key 'configs'"),
    "alias bomb": (
        "config:\n  gpu-platform:a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"  gpu-platform:{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n"
            for p, n in zip("abcdefg", "bcdefgh", strict=True)
        ),
        "an alias bomb",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_malformed_stack_file_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    text, expected = BAD_FILES[name]
    (tmp_path / "Pulumi.t.yaml").write_text(text)
    with pytest.raises(StackFileError) as caught:
        load_stack_file(tmp_path, "t")
    message = str(caught.value)
    assert message.startswith("Pulumi.t.yaml"), message
    assert expected in message, message
    assert "\n" not in message


def test_the_preview_exits_2_with_the_position_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.t.yaml").write_text(BAD_FILES["duplicate key"][0])
    proc = subprocess.run(
        [sys.executable, "-m", "preview", "t", "--root", str(tmp_path), "--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == (
        "error: Pulumi.t.yaml:3:3: duplicate key 'gpu-platform:cuda' (first at line 2); YAML keeps only one of "
        "them and the Pulumi CLI refuses the file"
    )
    assert not (tmp_path / "out" / "t").exists(), "nothing is written"


def test_the_example_stack_files_read_strictly() -> None:
    for stack in ("dev", "prod"):
        assert load_stack_file(ROOT, stack).config["gpu-platform:cuda"].startswith("{")


def _preview(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "preview", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_previews_of_one_stack_at_once_both_succeed_and_leave_one_whole_folder(tmp_path: Path) -> None:
    runs = [_preview("prod", "--quiet", "--out", str(tmp_path)) for _ in range(2)]
    results = [(run.wait(timeout=300), run.communicate()) for run in runs]
    assert [code for code, _ in results] == [0, 0], [err for _, (_, err) in results]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prod"], "no staging or retired folder is left"
    written = {p.name for p in (tmp_path / "prod").iterdir()}
    assert {"resources.json", "outputs.json", "policy-report.json", "manifests"} <= written


def test_a_bug_is_one_line_with_the_log_path_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.t.yaml").write_text(VALID)
    (tmp_path / "__main__.py").write_text("raise RuntimeError('boom in the program')\n")
    proc = _preview("t", "--root", str(tmp_path), "--out", str(tmp_path / "out"))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    log = tmp_path / "out" / "t.error.log"
    assert lines[0] == f"error: stack t: internal error (RuntimeError: boom in the program); details in {log}"
    assert "Traceback" in log.read_text()


def _anchored_fleet(nodes: int) -> str:
    """The prod stack file with ``nodes`` bare-metal nodes that share their taints and MIG layout through anchors."""
    lines = VALID_PROD.split("\n")
    start = lines.index("    nodes:")
    end = next(i for i, line in enumerate(lines) if line.startswith("  gpu-platform:mig:"))
    fleet = ["    nodes:"]
    for index in range(nodes):
        shared = (
            "        taints: &taints [nvidia.com/gpu=true:NoSchedule]\n        mig: &mig {layout: all-1g.10gb}"
            if index == 0
            else "        taints: *taints\n        mig: *mig"
        )
        fleet.append(
            f"      - name: gpu-node-{index}\n        address: 192.0.2.{index % 250 + 1}\n        gpuModel: H100-80GB\n"
            f"        gpus: 8\n        pool: h100\n{shared}"
        )
    return "\n".join([*lines[:start], *fleet, *lines[end:]])


VALID_PROD = (ROOT / "Pulumi.prod.yaml").read_text()


def test_a_thousand_node_stack_written_with_anchors_loads(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.t.yaml").write_text(_anchored_fleet(1000))
    config = load_stack_file(tmp_path, "t").config
    nodes = json.loads(config["gpu-platform:bareMetal"])["nodes"]
    assert len(nodes) == 1000
    assert all(node["taints"] == ["nvidia.com/gpu=true:NoSchedule"] for node in nodes)
    assert nodes[999]["mig"] == {"layout": "all-1g.10gb"}


def test_an_alias_of_a_deep_anchor_used_deep_is_refused_at_its_position(tmp_path: Path) -> None:
    deep = "[" * 40 + "x" + "]" * 40
    text = f"config:\n  gpu-platform:a: &deep {deep}\n  gpu-platform:b: {'[' * 30}*deep{']' * 30}\n"
    (tmp_path / "Pulumi.t.yaml").write_text(text)
    with pytest.raises(StackFileError) as caught:
        load_stack_file(tmp_path, "t")
    assert str(caught.value).startswith("Pulumi.t.yaml:3:"), caught.value
    assert "nested deeper than 64 levels once aliases expand" in str(caught.value)
