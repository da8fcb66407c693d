"""The HTML review report in a real browser: headless Chromium (Debian's package) renders the scenario's page.

A harness page loads the report in an iframe and, once everything has loaded, writes what the browser
laid out (the visible text, each MIG instance's box) into its own DOM, which ``--dump-dom`` prints.
A screenshot of each report lands in ``build/artifacts/`` (CI uploads that folder). Without Chromium
the test fails and says how to install it (``make chromium``): it never skips.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.preview.diff.conftest import Reviewed
from tests.preview.diff.scenario import NODE

ARTIFACTS = ROOT / "build" / "artifacts"
_HARNESS = """<!DOCTYPE html><html><body>
<iframe id="report" src="{src}" width="1400" height="6000"></iframe><pre id="result">not loaded</pre>
<script>
window.addEventListener("load", () => {{
  const page = document.getElementById("report").contentDocument;
  const boxes = [];
  for (const item of page.querySelectorAll("section.pool .instance")) {{
    const box = item.getBoundingClientRect();
    const gpu = item.closest("[data-gpu]");
    boxes.push({{
      pool: item.closest("section.pool").dataset.pool, status: item.closest("section.pool").dataset.status,
      phase: item.closest("[data-phase]").dataset.phase,
      gpu: Number(gpu.dataset.gpu), profile: item.dataset.profile, start: Number(item.dataset.start),
      slices: Number(item.dataset.slices), left: box.left - gpu.querySelector("svg").getBoundingClientRect().left,
      width: box.width, visible: box.width > 0 && box.height > 0,
    }});
  }}
  document.getElementById("result").textContent = JSON.stringify({{text: page.body.innerText, boxes}});
}});
</script></body></html>
"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: run `make chromium` (Debian package chromium); this test never skips")
    return found


def _run(args: list[str], profile: Path) -> str:
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _laid_out(report: Path, tmp_path: Path) -> dict[str, Any]:
    harness = tmp_path / "harness.html"
    harness.write_text(_HARNESS.format(src=report.resolve().as_uri()))
    dom = _run(
        ["--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom", harness.as_uri()],
        tmp_path / "profile",
    )
    match = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    assert match and match.group(1) != "not loaded", dom[-2000:]
    result: dict[str, Any] = json.loads(match.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    return result


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """Width, height and how many distinct byte values its pixels hold (a blank page has very few)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


def test_the_browser_draws_the_repartitioned_gpus_where_the_plan_puts_them(reviewed: Reviewed, tmp_path: Path) -> None:
    laid_out = _laid_out(reviewed.repo / "build" / "diff" / "prod" / "diff.html", tmp_path)
    text = laid_out["text"]
    assert "GPUs 0-7 re-partitioned" in text
    assert "580.82.07 (host) → 580.95.05 (host)" in text
    assert "host-preparation-gpu-node-1-driver-check" in text
    after = sorted(
        (b["start"], b["profile"], b["slices"], b["left"], b["width"])
        for b in laid_out["boxes"]
        if b["pool"] == NODE and b["phase"] == "after" and b["gpu"] == 0
    )
    assert [(start, profile, slices) for start, profile, slices, _, _ in after] == [
        (0, "2g.20gb", 2),
        (2, "1g.10gb", 1),
        (3, "1g.10gb", 1),
        (4, "3g.40gb", 4),
    ]
    slice_width = after[1][4] + 2  # a 1-slice box, less its 1-pixel margins on both sides
    for start, _, slices, left, width in after:  # each box starts at its memory slice and spans its slices
        assert abs(left - (1 + start * slice_width + 1)) <= 1.5
        assert abs(width - (slices * slice_width - 2)) <= 1.5
    assert all(b["visible"] for b in laid_out["boxes"] if b["status"] != "unchanged")
    assert not any(b["visible"] for b in laid_out["boxes"] if b["status"] == "unchanged"), "collapsed"


def test_the_browser_shows_the_replacement_and_every_deletion(reviewed: Reviewed, tmp_path: Path) -> None:
    text = _laid_out(reviewed.repo / "build" / "diff" / "dev" / "diff.html", tmp_path)["text"]
    assert "replaced because: gpuEnvironment 'runc_drivers_cuda' -> 'runc'" in text
    assert "node-agent-daemonset" in text and "delete" in text


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_screenshot_of_each_report_is_kept(reviewed: Reviewed, tmp_path: Path, stack: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"review-diff-{stack}.png"
    shot.unlink(missing_ok=True)
    report = reviewed.repo / "build" / "diff" / stack / "diff.html"
    _run(
        ["--window-size=1400,2400", "--hide-scrollbars", f"--screenshot={shot}", report.resolve().as_uri()],
        tmp_path / "p",
    )
    width, height, colours = _png_size_and_colours(shot)
    assert (width, height) == (1400, 2400)
    assert colours > 50, "the screenshot is (nearly) blank"
