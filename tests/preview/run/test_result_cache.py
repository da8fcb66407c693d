"""The result cache: a preview whose inputs did not change is not run again, and says and writes the same.

The previews are the real ones (``preview.__main__.main`` on the real stacks); ``preview.run.runner.run_program``
is replaced only to count runs, or to fail if the program runs at all.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import preview.render.cache as render_cache
import preview.render.rendered as rendered
import preview.run.runner as runner
from preview.__main__ import main
from preview.render.cache import CACHE_DIR_ENV, RenderCache, project_cache
from preview.run.result_cache import RESULT_CACHE_ENV, preview_key
from tests.helpers import ROOT


@pytest.fixture(autouse=True)
def result_cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-preview cache is on here, as it is for a user (the other tests turn it off: tests/conftest.py)."""
    monkeypatch.setenv(RESULT_CACHE_ENV, "on")


@pytest.fixture
def program_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stacks whose program actually ran."""
    ran: list[str] = []
    real = runner.run_program

    def counting(stack: str, *args: object, **kwargs: object) -> runner.ProgramRun:
        ran.append(stack)
        return real(stack, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run_program", counting)
    return ran


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_unchanged_preview_is_not_run_again_and_writes_and_says_the_same(
    tmp_path: Path, program_runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["prod", "--out", str(tmp_path / "out"), "--no-base", "--verbose"]
    assert main(arguments) == 0
    first_console, first_files = capsys.readouterr().out, _files(tmp_path / "out" / "prod")
    shutil.rmtree(tmp_path / "out")
    assert main(arguments) == 0
    assert program_runs == ["prod"], "the second preview came from the result cache"
    assert capsys.readouterr().out == first_console
    assert _files(tmp_path / "out" / "prod") == first_files
    assert "resources.json" in first_files and "policy-report.json" in first_files


# A preview in a fresh interpreter; prints the SDK packages it imported.
_IMPORTED_SDKS = """
import runpy, sys
sys.argv = ["preview", *sys.argv[1:]]
try:
    runpy.run_module("preview", run_name="__main__")
except SystemExit as stop:
    assert not stop.code, stop.code
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pulumi", "pulumi_kubernetes", "grpc", "google")))
"""


def test_a_preview_read_from_the_result_cache_imports_no_sdk(tmp_path: Path) -> None:
    # A warm preview costs about the interpreter's start: pulumi alone (grpc, protobuf) would double it.
    arguments = ["prod", "--quiet", "--no-base", "--out", str(tmp_path / "out")]
    command = [sys.executable, "-c", _IMPORTED_SDKS, *arguments]
    cold = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    warm = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    assert "'pulumi'" in cold.stdout.splitlines()[-1]  # the first one ran the program
    assert warm.stdout.splitlines()[-1] == "[]"


def test_in_a_cache_full_of_other_work_the_next_preview_is_served_whole_and_its_renders_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program_runs: list[str]
) -> None:
    """Issue #41: once the cache reached its bound, each whole preview was deleted as it was stored."""
    folder, bound = tmp_path / "cache", 96 * 2**20  # prod's preview and its renders: about 35 MB
    for entry in project_cache(ROOT).folder.glob("??/*.json"):  # the renders already made (or they run: seconds)
        if entry.name.split(".")[1].startswith(render_cache.RENDER_KINDS):
            (folder / entry.parent.name).mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):  # pruned by another test worker meanwhile
                shutil.copyfile(entry, folder / entry.parent.name / entry.name)
    monkeypatch.setenv(CACHE_DIR_ENV, str(folder))
    monkeypatch.setattr(render_cache, "MAX_BYTES", bound)
    arguments = ["prod", "--quiet", "--no-base", "--out", str(tmp_path / "out")]
    assert main(arguments) == 0
    other = RenderCache(folder)  # then other work, all of it newer: renders and a few whole previews
    for index in range(28):
        other.put(f"{index:02d}".ljust(64, "f"), "documents", ["x" * 4 * 2**20])
        if index % 5 == 0:
            other.put(f"{index:02d}".ljust(64, "e"), "preview", {"files": {"x": "x" * 2**20}})

    def held() -> int:
        return sum(p.stat().st_size for p in folder.glob("??/*") if p.is_file())

    assert held() <= bound
    assert main(arguments) == 0
    assert program_runs == ["prod"], "the second preview was served whole"
    # And the renders it was made from are still there: a preview of it that runs the program renders nothing.
    monkeypatch.setenv(RESULT_CACHE_ENV, "off")

    def no_tools(job: rendered._Job, root: Path) -> rendered.Render:
        raise AssertionError(f"{job.shown} ran: its render was pruned")

    monkeypatch.setattr(rendered, "_run", no_tools)
    assert main(arguments) == 0
    assert held() <= bound


def test_a_changed_stack_file_previews_anew(tmp_path: Path, program_runs: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream", "mig-plans"):
        if (ROOT / name).exists():
            (project / name).symlink_to(ROOT / name)
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    (project / "Pulumi.prod.yaml").write_text(text)
    arguments = ["prod", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"]
    assert main(arguments) == 0
    (project / "Pulumi.prod.yaml").write_text(text.replace("name: ml-prod", "name: ml-prod-b"))
    assert main(arguments) == 0
    assert program_runs == ["prod", "prod"]
    assert '"id": "ml-prod-b"' in (tmp_path / "out" / "prod" / "outputs.json").read_text()


def test_two_previews_of_one_stack_are_stored_as_one_lineage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variant of a stack previewed into the same folder takes the earlier preview's place among the previews the
    cache keeps (its lineage), and another stack is a lineage of its own."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    project = tmp_path / "project"
    project.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream", "mig-plans", "Pulumi.dev.yaml"):
        if (ROOT / name).exists():
            (project / name).symlink_to(ROOT / name)
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    (project / "Pulumi.prod.yaml").write_text(text)
    assert main(["prod", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    (project / "Pulumi.prod.yaml").write_text(text.replace("name: ml-prod", "name: ml-prod-b"))
    assert main(["prod", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    records = [json.loads(path.read_text()) for path in (tmp_path / "cache").rglob(f"*{render_cache.USES_SUFFIX}")]
    assert len(records) == 2
    assert records[0]["lineage"] == records[1]["lineage"]
    assert records[0]["lineage"].startswith("prod\0")


def test_a_refused_stack_is_never_stored(tmp_path: Path, program_runs: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream"):
        (project / name).symlink_to(ROOT / name)
    text = (ROOT / "Pulumi.prod.yaml").read_text().replace("gpuModel: H100-80GB", "gpuModel: H999-80GB", 1)
    (project / "Pulumi.prod.yaml").write_text(text)
    arguments = ["prod", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"]
    assert main(arguments) == 2
    assert main(arguments) == 2
    assert program_runs == ["prod", "prod"]


def _repository(folder: Path) -> Path:
    for tree in ("components", "policies", "preview"):
        (folder / tree).mkdir(parents=True)
        (folder / tree / "module.py").write_text("VALUE = 1\n")
    (folder / "Pulumi.dev.yaml").write_text("config: {}\n")
    return folder


def test_the_key_changes_with_the_code_the_stack_file_the_environment_and_the_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = _repository(tmp_path / "repo")
    out = tmp_path / "out"

    def key() -> str:
        return preview_key("dev", repository, out, repository, ["helm v3.17.0"])

    first = key()
    assert key() == first, "the same inputs give the same key"
    (repository / "components" / "module.py").write_text("VALUE = 2\n")
    second = key()
    assert second != first
    (repository / "Pulumi.dev.yaml").write_text("config: {a: 1}\n")
    third = key()
    assert third != second
    monkeypatch.setenv("GPU_PLATFORM_SOMETHING", "x")
    assert key() != third
    assert preview_key("dev", repository, out, repository, ["helm v3.18.0"]) != key()
    (repository / "components" / "__pycache__").mkdir()
    (repository / "components" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"\0")
    assert key() == preview_key("dev", repository, out, repository, ["helm v3.17.0"]), "bytecode is not an input"
