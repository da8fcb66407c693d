"""The render cache: an unchanged render is read, not re-run; anything it depends on renders anew.

The renders are the real ones (helm over the pinned chart, kustomize over the real Kubeflow tree);
``preview.render.rendered._run`` is replaced only to count or forbid runs of the tools.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
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


# -- the bound: what goes, and what the next preview needs stays ----------------------------------------

ENTRY = ["x" * 1000]  #: 1,006 bytes stored
_NAMES = [f"{group}{index}" for group in ("r", "p", "o", "q") for index in range(40)]  #: renders, previews, other


def _key(name: str) -> str:
    return name.encode().hex().ljust(64, "0")[:64]


def _held(cache: RenderCache) -> list[str]:
    """The entries in the folder, as ``<name>.<kind>``, sorted."""
    named = {_key(name): name for name in _NAMES}
    return sorted(f"{named[p.name[:64]]}.{p.name.split('.')[1]}" for p in cache.folder.glob("??/*.json"))


def _bytes(cache: RenderCache) -> int:
    """What the folder holds, entries and the whole previews' records alike."""
    return sum(p.stat().st_size for p in cache.folder.glob("??/*") if p.is_file())


@pytest.fixture
def bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RenderCache]:
    """A cache of its own whose bound the test sets (``render_cache.MAX_BYTES``)."""
    monkeypatch.setattr(render_cache, "MAX_BYTES", 10**9)
    yield RenderCache(tmp_path / "cache")


def _store(cache: RenderCache, name: str, kind: str, used: int, lineage: str | None = None) -> None:
    """Store ``name``'s entry of ``kind``, last used at ``used`` (seconds)."""
    cache.put(_key(name), kind, ENTRY, lineage=lineage)
    os.utime(cache._path(_key(name), kind), ns=(used * 10**9, used * 10**9))


def _preview(cache: RenderCache, name: str, renders: list[str], used: int, lineage: str | None = None) -> None:
    """A whole preview made as ``preview.__main__`` makes one: looked up (a miss), its renders read, stored."""
    assert cache.get(_key(name), "preview") is None
    for render in renders:
        assert cache.get(_key(render), "documents") is not None
        os.utime(cache._path(_key(render), "documents"), ns=(used * 10**9, used * 10**9))  # read at ``used``
    _store(cache, name, "preview", used, lineage)


def test_the_folder_is_kept_within_its_bound_least_recently_used_first(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(5):
        _store(bounded, f"r{index}", "documents", used=index)
    assert bounded.get(_key("r0"), "documents") == ENTRY  # a read is a use: r0 is now the most recent
    monkeypatch.setattr(render_cache, "MAX_BYTES", 3100)
    _store(bounded, "r5", "documents", used=10**7)
    assert _held(bounded) == ["r0.documents", "r4.documents", "r5.documents"]
    assert _bytes(bounded) <= 3100


def test_a_preview_stored_into_a_full_folder_stays_with_the_renders_it_was_made_from(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #41: whole previews went first, so into a full folder a preview was deleted as it was stored."""
    for index in range(6):  # the folder at its bound from older work: renders and previews
        _store(bounded, f"o{index}", "documents", used=index)
        _store(bounded, f"q{index}", "preview", used=index)
    _store(bounded, "r1", "documents", used=100)
    _store(bounded, "r2", "files-abc", used=100)
    monkeypatch.setattr(render_cache, "MAX_BYTES", 12 * 1100)
    _preview(bounded, "p1", ["r1"], used=200)
    assert {"p1.preview", "r1.documents"} <= set(_held(bounded))
    # Then more work than the bound holds, all of it newer: renders, and previews of another stack.
    for index in range(20):
        _store(bounded, f"o{index + 10}", "documents", used=300 + index)
        _store(bounded, f"q{index + 10}", "preview", used=300 + index, lineage="another stack")
    held = _held(bounded)
    assert {"p1.preview", "r1.documents"} <= set(held), "the preview and its renders outlive newer work"
    assert "q29.preview" in held, "the other stack's latest preview is kept too"
    assert not {f"q{index}.preview" for index in range(10, 20)} & set(held), "its earlier ones went"
    assert "o0.documents" not in held, "the least recently used went first"
    assert bounded.get(_key("p1"), "preview") == ENTRY
    assert _bytes(bounded) <= 12 * 1100


def test_a_later_preview_of_the_same_lineage_takes_the_earlier_ones_place(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variants of a stack: only the latest is kept against newer work, with the renders it was made from."""
    for name in ("r1", "r2", "r3"):
        _store(bounded, name, "documents", used=1)
    _preview(bounded, "p1", ["r1", "r2"], used=10, lineage="dev")
    _preview(bounded, "p2", ["r2", "r3"], used=20, lineage="dev")
    monkeypatch.setattr(render_cache, "MAX_BYTES", 8 * 1100)
    for index in range(8):
        _store(bounded, f"o{index}", "documents", used=100 + index)
    held = _held(bounded)
    assert {"p2.preview", "r2.documents", "r3.documents"} <= set(held)
    assert not {"p1.preview", "r1.documents"} & set(held), "the earlier variant went before newer work"


def test_a_preview_read_whole_is_the_one_kept_of_its_lineage(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back to an earlier variant, served whole: it is the most recently used of its lineage now."""
    _preview(bounded, "p1", [], used=10, lineage="dev")
    _preview(bounded, "p2", [], used=20, lineage="dev")
    assert bounded.get(_key("p1"), "preview") == ENTRY
    monkeypatch.setattr(render_cache, "MAX_BYTES", 4 * 1100)
    for index in range(6):
        _store(bounded, f"o{index}", "documents", used=10**7 + index)
    assert "p1.preview" in _held(bounded) and "p2.preview" not in _held(bounded)


def test_past_their_share_of_the_bound_the_least_recently_used_previews_lose_their_protection(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole previews with their renders are kept from newer work while they fit in half the bound, the most
    recently used first; the others are ordinary entries, and a render a kept preview was made from stays."""
    for name in ("r1", "r2", "r3"):
        _store(bounded, name, "documents", used=1)
    _preview(bounded, "p1", ["r1", "r2"], used=10)
    _preview(bounded, "p2", ["r2"], used=20)
    _preview(bounded, "p3", ["r3"], used=30)
    monkeypatch.setattr(render_cache, "MAX_BYTES", 9000)  # p3, p2 and their renders fit in half of it; p1 not
    for index in range(6):
        _store(bounded, f"o{index}", "documents", used=100 + index)
    held = _held(bounded)
    assert {"p2.preview", "p3.preview", "r2.documents", "r3.documents"} <= set(held)
    assert not {"p1.preview", "r1.documents"} & set(held), "p1 went before newer work, as an ordinary entry"
    assert "o0.documents" not in held and "o5.documents" in held
    assert _bytes(bounded) <= 9000


def test_an_entry_larger_than_the_bound_is_not_kept(bounded: RenderCache, monkeypatch: pytest.MonkeyPatch) -> None:
    _preview(bounded, "p1", [], used=10, lineage="a")
    monkeypatch.setattr(render_cache, "MAX_BYTES", 1500)
    bounded.put(_key("p2"), "preview", ["x" * 2000], lineage="b")  # protected as its lineage's and as just stored
    assert bounded.get(_key("p2"), "preview") is None
    assert _bytes(bounded) <= 1500


def test_a_write_in_flight_is_left_alone_and_a_dead_writers_leftover_is_removed(
    bounded: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store(bounded, "r1", "documents", used=1)
    folder = bounded._path(_key("r1"), "documents").parent
    (folder / ".tmp-in-flight").write_text("x" * 5000)  # another process is writing it now
    (folder / ".tmp-dead").write_text("x" * 5000)
    os.utime(folder / ".tmp-dead", ns=(0, 0))  # its writer died long ago
    monkeypatch.setattr(render_cache, "MAX_BYTES", 3 * 1100)
    _store(bounded, "r2", "documents", used=2)
    assert (folder / ".tmp-in-flight").exists() and not (folder / ".tmp-dead").exists()
    assert _held(bounded) == ["r1.documents", "r2.documents"]


_WORKER = """
import json, os, sys
import preview.render.cache as render_cache
from preview.render.cache import RenderCache
render_cache.MAX_BYTES = int(sys.argv[2])
cache, worker, wrong, lost = RenderCache(render_cache.Path(sys.argv[1])), sys.argv[3], 0, 0
for index in range(150):
    key = f"{worker}{index:03d}".ljust(64, "0")
    value = [worker, index, "x" * (1000 + 997 * (index % 7))]
    cache.put(key, "documents", value)
    lost += cache.get(key, "documents") is None
    for other in range(max(0, index - 3), index):  # this worker's and the other's recent entries
        for name in (worker, "b" if worker == "a" else "a"):
            got = cache.get(f"{name}{other:03d}".ljust(64, "0"), "documents")
            wrong += got is not None and got[:2] != [name, other]
print(json.dumps([wrong, lost]))
"""


def test_two_processes_sharing_a_full_folder_read_whole_entries_and_keep_the_bound(tmp_path: Path) -> None:
    """The test suite's two workers share one cache: neither reads a half entry, nor loses what it just stored."""
    folder, bound = tmp_path / "cache", 100_000
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(folder), str(bound), name], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for name in ("a", "b")
    ]
    results = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers)
    assert results == [[0, 0], [0, 0]], "[entries read with another value, entries lost as they were stored]"
    assert sum(p.stat().st_size for p in folder.glob("??/*") if p.is_file()) <= bound


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
