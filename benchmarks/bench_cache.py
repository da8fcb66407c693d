"""Benchmark: a warm preview with the render cache at its bound from other work, beside one with room to spare.

Issue #41: once the cache folder (``preview/render/cache.py``, bounded by ``MAX_BYTES``) was full, every
whole preview was pruned as soon as it was stored, so no warm preview was served whole: 5-5.7 CPU-s for
``dev`` (2.4x its import floor) and 8.3x the floor for ``prod``, against 0.33-0.53 CPU-s with room to spare.
Target: with the cache at its bound from other work, a warm preview of each stack costs at most 2x the
import floor of its kind (``benchmarks.bench_preview``), and the folder stays within its bound.

Two cache folders of their own (``GPU_PLATFORM_CACHE_DIR``), each seeded with a copy of the project's
renders so no render runs again:
- **room to spare**: each stack previewed once (stored whole), then the warm previews measured;
- **full**: filled to its bound with other work first (renders and whole previews that no stack here
  made), each stack previewed once, then as much other work again, all of it newer (the test suite's
  throw-away repositories, ``make diff``'s base previews), then the warm previews measured.

Each figure is the median CPU time of fresh interpreter runs (the process and its children).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_preview import FLOOR_RUNS, FLOORS, ROOT, WARM_TARGET, _cpu, _median, _stack_kind
from preview.render import cache as render_cache
from preview.render.cache import CACHE_DIR_ENV, RENDER_KINDS, RenderCache, project_cache

MB = 2**20
RENDER_BYTES = 8 * MB  #: the other work's renders (the Kubeflow tree's are 1-5 MB, the chart's 1-3 MB)
PREVIEW_BYTES = 11 * MB  #: and its whole previews (a stack's is about 11 MB)
OTHER_PREVIEWS = 2  #: whole previews per fill (a ``make diff`` base of each stack); the rest is renders


def _seeded(folder: Path) -> Path:
    """A cache folder holding a copy of the project's renders (whole previews left out)."""
    for entry in project_cache(ROOT).folder.glob("??/*.json"):
        if entry.name.split(".")[1].startswith(RENDER_KINDS):
            (folder / entry.parent.name).mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(entry, folder / entry.parent.name / entry.name)
            except OSError:
                continue  # pruned meanwhile by another preview
    return folder


def _other_work(folder: Path, amount: int, tag: str) -> None:
    """Store ``amount`` bytes of renders and whole previews no stack here uses, as other previews would."""
    cache = RenderCache(folder)
    stored, index = 0, 0
    while stored < amount:
        key = f"{tag}{index:06d}".encode().hex().ljust(64, "0")[:64]
        if index < OTHER_PREVIEWS:
            cache.put(key, "preview", {"files": {"other.yaml": "x" * PREVIEW_BYTES}})
            stored += PREVIEW_BYTES
        else:
            cache.put(key, "documents", [[{"kind": "ConfigMap"}, "x" * RENDER_BYTES]])
            stored += RENDER_BYTES
        index += 1


def _held(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.glob("??/*") if path.is_file())


def _warm(stacks: list[str], folder: Path, out: str) -> dict[str, float]:
    env = {**os.environ, CACHE_DIR_ENV: str(folder)}
    return {
        stack: _median([sys.executable, "-m", "preview", stack, "--quiet", "--no-base", "--out", out], env)
        for stack in stacks
    }


def main() -> None:
    """Print the floors, then each stack's warm preview with room to spare and with the cache full."""
    from preview.run.stack_file import available_stacks

    floors = {kind: _median([sys.executable, "-c", code], runs=FLOOR_RUNS) for kind, code in FLOORS.items()}
    for kind, seconds in floors.items():
        print(f"import floor {kind}: {seconds:.2f} CPU-s (median of {FLOOR_RUNS})")
    stacks = available_stacks(ROOT)
    bound = render_cache.MAX_BYTES
    work = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    try:
        out = str(work / "out")
        spare, full = _seeded(work / "spare"), _seeded(work / "full")
        _other_work(full, bound, "a")  # at its bound before the stacks are previewed
        for folder in (spare, full):
            for stack in stacks:  # each stack previewed once: stored whole
                _cpu(
                    [sys.executable, "-m", "preview", stack, "--quiet", "--no-base", "--out", out],
                    {**os.environ, CACHE_DIR_ENV: str(folder)},
                )
        _other_work(full, bound, "b")  # then as much other work again, all of it newer
        with_room, when_full = _warm(stacks, spare, out), _warm(stacks, full, out)
        print(
            f"cache folders: room to spare {_held(spare) / MB:.0f} MB; full {_held(full) / MB:.0f} MB "
            f"(bound {bound / MB:.0f} MB: {'holds' if _held(full) <= bound else 'EXCEEDED'}), filled twice to its "
            f"bound by other work ({OTHER_PREVIEWS} whole previews of {PREVIEW_BYTES // MB} MB and renders of "
            f"{RENDER_BYTES // MB} MB each time), before and after the stacks' previews were stored"
        )
        for stack in stacks:
            floor = floors[_stack_kind(stack)]
            verdict = "ok" if when_full[stack] <= WARM_TARGET * floor else "OVER TARGET"
            print(
                f"warm preview {stack}: cache full {when_full[stack]:.2f} CPU-s = {when_full[stack] / floor:.2f}x its "
                f"floor (target <= {WARM_TARGET:.1f}x) {verdict}; room to spare {with_room[stack]:.2f} CPU-s = "
                f"{with_room[stack] / floor:.2f}x; full / room to spare = {when_full[stack] / with_room[stack]:.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
