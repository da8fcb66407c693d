"""The preview folder of a stack: its fixed file names, and writing it whole.

Kept apart from the renderers and the gate, with the standard library only, so a preview read from the
result cache (``preview.run.result_cache``) writes its folder without importing the SDKs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

REPORT_NAME = "policy-report.json"  #: the policy gate's report in the preview folder
EXIT_MANDATORY_VIOLATION = 3  #: the preview's exit code when the folder is written but a mandatory policy fails


def write_files(files: dict[str, str], out_dir: Path) -> None:
    """Replace ``out_dir`` with exactly ``files`` (stale files from earlier runs must not linger).

    The files are written to a fresh folder beside ``out_dir`` and swapped in by renames, so two
    previews of the same stack at once never see (or leave) a half-written or half-deleted folder:
    each run's folder appears whole, and the last one to finish wins.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    for relative, text in files.items():
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _kept(out_dir / relative, text, target):
            target.write_text(text)
    for _ in range(_SWAP_ATTEMPTS):
        retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=out_dir.parent))
        with contextlib.suppress(FileNotFoundError):  # no earlier preview, or another run is mid-swap
            out_dir.rename(retired / out_dir.name)
        try:
            staging.rename(out_dir)
        except OSError:  # another run put its folder in place between our two renames: retire it too
            continue
        finally:
            shutil.rmtree(retired, ignore_errors=True)
        return
    shutil.rmtree(staging, ignore_errors=True)
    raise OSError(f"could not move the preview into {out_dir}: other previews of this stack keep replacing it")


_SWAP_ATTEMPTS = 20


def _kept(previous: Path, text: str, target: Path) -> bool:
    """Link the earlier run's file into ``target`` when its text is unchanged: only changed files are written.

    A hard link keeps the file's identity and modification time, so tools that watch the preview folder
    (make, rsync, an editor) see only what changed; the swap above stays atomic either way.
    """
    try:
        if previous.stat().st_size != len(text.encode()) or previous.read_text() != text:
            return False
        os.link(previous, target)
    except OSError:  # no earlier file, another run retired it meanwhile, or no hard links here
        return False
    return True
