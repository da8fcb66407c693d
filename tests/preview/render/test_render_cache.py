"""The render cache: an unchanged render is read, not re-run; anything it depends on renders anew.

The renders are the real ones (helm over the pinned chart, kustomize over the real Kubeflow tree);
``preview.render.rendered._run`` is replaced only to count or forbid runs of the tools.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import preview.render.cache as render_cache
import preview.render.rendered as rendered
from components.catalog.names import HELM_RELEASE_TYPE
from preview.render.cache import RenderCache
from preview.render.rendered import render_registrations
from preview.run.registration import Registration
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_program("prod")


def _release(run: ProgramRun) -> Registration:
    (release,) = run.by_type(HELM_RELEASE_TYPE)
    return release


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The commands the tools actually ran."""
    ran: list[str] = []
    real = rendered._run

    def counting(job: rendered._Job, root: Path) -> rendered.Render:
        ran.append(job.shown)
        return real(job, root)

    monkeypatch.setattr(rendered, "_run", counting)
    yield ran


def test_an_unchanged_render_is_read_from_the_cache_with_the_same_objects_and_files(
    tmp_path: Path, prod: ProgramRun, runs: list[str]
) -> None:
    cache = RenderCache(tmp_path / "cache")
    cold = render_registrations([_release(prod)], ROOT, cache)
    warm = render_registrations([_release(prod)], ROOT, cache)
    assert len(runs) == 1, "the second render came from the cache"
    assert [o.manifest for o in warm.objects] == [o.manifest for o in cold.objects]
    assert len(cold.objects) > 30  # the real chart: CRDs, the operator, NFD
    assert warm.files() == cold.files()


def test_changed_values_render_anew(tmp_path: Path, prod: ProgramRun, runs: list[str]) -> None:
    cache = RenderCache(tmp_path / "cache")
    release = _release(prod)
    render_registrations([release], ROOT, cache)
    values = {**release.inputs["values"], "operator": {"logging": {"level": "debug"}}}
    changed = dataclasses.replace(release, inputs={**release.inputs, "values": values})
    again = render_registrations([changed], ROOT, cache)
    assert len(runs) == 2
    operator = next(
        o.manifest for o in again.objects if o.manifest["kind"] == "Deployment" and o.name.endswith("/gpu-operator")
    )
    assert "--zap-log-level=debug" in operator["spec"]["template"]["spec"]["containers"][0]["args"]


def test_another_tool_version_is_another_key(tmp_path: Path, prod: ProgramRun) -> None:
    cache = RenderCache(tmp_path / "cache")
    job = rendered._release_job(_release(prod), ROOT)
    assert isinstance(job, rendered._Job)
    other_helm = tmp_path / "bin" / "helm"
    other_helm.parent.mkdir()
    other_helm.write_text("#!/bin/sh\necho v3.99.0+gdeadbee\n")
    other_helm.chmod(0o755)
    real = cache.key(job.command[0], job.arguments, job.inputs)
    assert real is not None
    assert cache.key(str(other_helm), job.arguments, job.inputs) not in (None, real)
    # The same binary copied elsewhere reports the same version: the same key, so the same render.
    copied = tmp_path / "copy" / "helm"
    copied.parent.mkdir()
    shutil.copy(job.command[0], copied)
    assert cache.key(str(copied), job.arguments, job.inputs) == real


def test_a_failed_render_is_not_stored(tmp_path: Path, prod: ProgramRun, runs: list[str]) -> None:
    cache = RenderCache(tmp_path / "cache")
    overlay = tmp_path / "overlay" / "broken"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text("resources: [does-not-exist.yaml]\n")
    directory = dataclasses.replace(
        next(r for r in prod.registrations if r.type == rendered.KUSTOMIZE_DIRECTORY_TYPE),
        inputs={"directory": str(overlay)},
    )
    first = render_registrations([directory], tmp_path, cache)
    second = render_registrations([directory], tmp_path, cache)
    assert first.renders[0].mandatory and second.renders[0].mandatory
    assert "does-not-exist.yaml" in str(second.renders[0].problem)
    assert len(runs) == 2, "a failure is re-run, never read from the cache"


def test_an_unreadable_entry_is_a_miss(tmp_path: Path, prod: ProgramRun, runs: list[str]) -> None:
    cache = RenderCache(tmp_path / "cache")
    render_registrations([_release(prod)], ROOT, cache)
    for entry in cache.folder.glob("??/*.json"):
        entry.write_text('{"half a')
    again = render_registrations([_release(prod)], ROOT, cache)
    assert len(runs) == 2 and len(again.objects) > 30


def test_the_folder_is_kept_within_its_bound_oldest_used_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = RenderCache(tmp_path / "cache")
    monkeypatch.setattr(render_cache, "MAX_BYTES", 2500)
    for index in range(5):
        cache.put(f"{index:02d}" + "0" * 62, "objects", ["x" * 1000])
        os.utime(cache._path(f"{index:02d}" + "0" * 62, "objects"), ns=(index, index))
    assert cache.get("00" + "0" * 62, "objects") is None
    kept = sorted(p.name[:2] for p in cache.folder.glob("??/*.json"))
    assert kept == ["03", "04"]
    assert sum(p.stat().st_size for p in cache.folder.glob("??/*.json")) <= 2500


def test_whole_previews_go_before_the_renders_they_were_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of previews served whole reads no render: by age alone they would push the renders out."""
    cache = RenderCache(tmp_path / "cache")
    monkeypatch.setattr(render_cache, "MAX_BYTES", 3500)
    entries = [("01", "documents"), ("02", "files-abc"), ("03", "preview"), ("04", "preview")]
    for index, (prefix, kind) in enumerate(entries):
        cache.put(prefix + "0" * 62, kind, ["x" * 1000])
        os.utime(cache._path(prefix + "0" * 62, kind), ns=(index, index))
    cache.put("05" + "0" * 62, "preview", ["x" * 1000])
    kept = sorted(p.name.split(".")[1] + p.name[:2] for p in cache.folder.glob("??/*.json"))
    assert kept == ["documents01", "files-abc02", "preview05"]


def test_turned_off_it_renders_every_time(monkeypatch: pytest.MonkeyPatch, prod: ProgramRun, runs: list[str]) -> None:
    monkeypatch.setenv(render_cache.CACHE_ENV, "off")
    render_registrations([_release(prod)], ROOT)
    render_registrations([_release(prod)], ROOT)
    assert len(runs) == 2


def test_make_clean_empties_the_render_cache(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / ".cache" / "render" / "ab").mkdir(parents=True)
    (tmp_path / ".cache" / "render" / "ab" / "entry.json").write_text("[]")
    env = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "clean"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".cache" / "render").exists()
