"""The preview of layouts from demand: the plan per node, what changes against the recorded plan, the file."""

from __future__ import annotations

import copy
from pathlib import Path

from components.mig.recorded import record_file_name
from preview.diff.mig_plan import PLAN_FILE, mig_plan_files, mig_plan_lines
from preview.run.runner import run_program
from tests.helpers import preview_cli
from tests.preview.support import project_copy, stack_config


def _project(tmp_path: Path, three_g: int = 12) -> Path:
    config = copy.deepcopy(stack_config("prod"))
    config["gpu-platform:bareMetal"]["nodes"][2]["mig"] = {"fromDemand": True}
    config["gpu-platform:mig"]["demand"][0]["profiles"]["3g.40gb"] = three_g
    config["gpu-platform:kubeflow"]["enabled"] = False  # not what this test is about, and slow to render
    return project_copy(tmp_path, "prod", config)


def test_the_preview_prints_the_plan_per_gpu_and_says_how_to_record_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    out = tmp_path / "out"
    result = preview_cli("prod", "--root", str(project), "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(
        "MIG layouts from demand (4 x 3g.40gb): 2 of 8 GPUs partitioned (proven optimal, lower bound 2)"
    )
    assert lines[start + 2 : start + 6] == [
        "    GPUs 0-1: 2 x 3g.40gb  (3g.40gb@0-3 3g.40gb@4-7)  [re-partitioned]",
        "    GPUs 2-7: MIG disabled",
        "  re-partitions 2 GPU(s) against nothing recorded: every partitioned GPU is new",
        f"notice: the MIG plan differs from mig-plans/prod.yaml; record it with the change: cp {out / 'prod' / PLAN_FILE} "
        f"{project / record_file_name('prod')}",
    ]
    assert (out / "prod" / PLAN_FILE).read_text().startswith("# The MIG layouts stack prod planned from demand.")


def test_once_recorded_an_unchanged_plan_moves_nothing_and_a_bigger_demand_moves_only_new_gpus(tmp_path: Path) -> None:
    project = _project(tmp_path / "a")
    first = run_program("prod", root=project)
    (project / "mig-plans").mkdir()
    (project / record_file_name("prod")).write_text(mig_plan_files(first)[PLAN_FILE])
    again = run_program("prod", root=project)
    lines = mig_plan_lines(again, tmp_path / "out")
    assert "  re-partitions 0 GPU(s) against mig-plans/prod.yaml" in lines
    assert not any(line.startswith("notice:") for line in lines)

    bigger = _project(tmp_path / "b", three_g=14)  # two more 3g.40gb: one more GPU
    (bigger / "mig-plans").mkdir()
    (bigger / record_file_name("prod")).write_text(mig_plan_files(first)[PLAN_FILE])
    lines = mig_plan_lines(run_program("prod", root=bigger), tmp_path / "out")
    assert "    GPUs 0-1: 2 x 3g.40gb  (3g.40gb@0-3 3g.40gb@4-7)" in lines  # kept, at their indexes
    assert "    GPU 2: 2 x 3g.40gb  (3g.40gb@0-3 3g.40gb@4-7)  [re-partitioned]" in lines
    assert "  re-partitions 1 GPU(s) against mig-plans/prod.yaml" in lines
    assert any(line.startswith("notice: the MIG plan differs from mig-plans/prod.yaml") for line in lines)


def test_a_stack_without_layouts_from_demand_prints_and_writes_nothing_of_it() -> None:
    run = run_program("dev")
    assert mig_plan_lines(run, Path("out")) == [] and mig_plan_files(run) == {}
