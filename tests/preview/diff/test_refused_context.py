"""A refused stack whose change removed a GPU pool says so (issue: deleting a pool was reported only as a quota
or demand problem elsewhere, without saying what changed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from preview.diff.refused import refused_diff, removed_pools
from tests.helpers import ROOT
from tests.preview.support import project_copy


def _dev_without(pool: str, tmp_path: Path) -> Path:
    config = copy.deepcopy(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"])
    del config["gpu-platform:nodeGroups"][pool]
    return project_copy(tmp_path, "dev", config)


def _base_preview(tmp_path: Path, pools: list[str]) -> Path:
    folder = tmp_path / "base" / "dev"
    folder.mkdir(parents=True)
    (folder / "outputs.json").write_text(json.dumps({"gpuPools": {name: {} for name in pools}}))
    return folder


def test_deleting_a_pool_is_named_beside_the_problem_it_causes(tmp_path: Path) -> None:
    project = _dev_without("a100", tmp_path)
    diff = refused_diff("dev", project, "main (abc1234)", "working tree", _base_preview(tmp_path, ["a100", "v100"]))
    assert any("mig-1g.10gb" in line for line in diff.refused[:-1]), "the quota that needed a100's MIG slices"
    assert diff.refused[-1].startswith("what changed since main (abc1234): GPU pool(s) a100 removed")


def test_no_context_line_without_a_base_or_when_no_pool_went(tmp_path: Path) -> None:
    project = _dev_without("a100", tmp_path)
    assert removed_pools("dev", project, None) == []
    assert removed_pools("dev", project, _base_preview(tmp_path, ["v100"])) == []
    diff = refused_diff("dev", project, "main", "working tree", None)
    assert diff.refused and not any(line.startswith("what changed") for line in diff.refused)
