"""Legal stack files the preview used to refuse (issue #39): a ConfigMap name with a dot, and settings shared through
a YAML merge key. Each previews through the preview's entry point, exactly as the stack it is equivalent to."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from preview.__main__ import preview_stack_guarded
from tests.helpers import ROOT


def _preview(tmp_path: Path, stack: str, text: str) -> tuple[int, str, Path]:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream"):
        (root / name).symlink_to(ROOT / name)
    (root / f"Pulumi.{stack}.yaml").write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = preview_stack_guarded(stack, root / "out", True, root)
    return code, out.getvalue() + err.getvalue(), root / "out" / stack


def _edited(stack: str, *edits: tuple[str, str]) -> str:
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def test_a_stack_file_sharing_a_groups_settings_through_a_merge_key_previews_as_the_spelled_out_stack(
    tmp_path: Path,
) -> None:
    text = _edited(
        "dev",
        ("  gpu-platform:nodeGroupDefaults:\n", "  gpu-platform:nodeGroupDefaults: &gpu-defaults\n"),
        (
            "    a100:\n      platform: gpu-standard-v3\n",
            "    a100:\n      <<: *gpu-defaults\n      platform: gpu-standard-v3\n",
        ),
    )
    code, output, out = _preview(tmp_path, "dev", text)
    assert code in (0, 3), output
    assert "a mapping key must be a string" not in output
    spelled, _, spelled_out = _preview(tmp_path / "spelled", "dev", (ROOT / "Pulumi.dev.yaml").read_text())
    assert code == spelled
    assert json.loads((out / "outputs.json").read_text()) == json.loads((spelled_out / "outputs.json").read_text())


def test_a_config_map_name_with_a_dot_previews_and_reaches_the_operator(tmp_path: Path) -> None:
    text = _edited(
        "prod",
        (
            "    dashboards:\n      folder: GPU\n",
            "    metrics:\n      configMapName: gpu-platform.dcgm-metrics\n    dashboards:\n      folder: GPU\n",
        ),
    )
    code, output, out = _preview(tmp_path, "prod", text)
    assert code in (0, 3), output
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["observability"]["metricsConfigMap"] == "gpu-platform.dcgm-metrics"
