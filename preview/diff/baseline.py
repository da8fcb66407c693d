"""The preview of a git revision, made once per commit and kept outside ``build/``.

A diff compares the working tree with a base revision (``make diff BASE=main``; ``make preview``
compares with ``HEAD``). The base's preview is made by the base's own code on the base's own stack
files, in a temporary folder holding that commit's tree (``git archive``, not ``git worktree add``:
nothing is registered in the repository, so an interrupted run leaves no stale worktree behind),
and it is cached by commit id under ``.cache/preview/<commit>/<stack>/`` (``PREVIEW_CACHE`` moves
it): a commit's preview never changes, because the commit pins the program, the stack files, the
policy config, the chart and the Kubeflow tree. ``make clean`` removes the cache with the other
caches; it is rebuilt on the next diff.

The base runs with this checkout's virtualenv when its ``requirements*.txt`` are the same, else with
a virtualenv of its own under ``.cache/preview/venvs/<digest of its pins>/`` (created once, needs
the package index or a mirror ``pip`` is configured for). It reads the pinned upstream trees and
tools through links to this checkout's ``.upstream`` and ``.tools``.

When the working tree is clean, the preview just made *is* the preview of ``HEAD``: ``seed`` stores
it, so ``make preview`` on a clean checkout (CI) costs no second preview.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from preview.render.cache import CACHE_DIR_ENV, project_cache

CACHE_ENV = "PREVIEW_CACHE"
NO_BASE_ENV = "PREVIEW_NO_BASE"  # set for the base's own preview: it never looks for a base itself
ABSENT_MARK = ".absent"  # the stack has no Pulumi.<stack>.yaml at that commit
FAILED_MARK = ".failed"  # the base preview of the stack wrote nothing (invalid config, a bug): its message
_REQUIREMENTS = ("requirements.txt", "requirements-dev.txt")
_LINKED = (".upstream", ".tools")
TIMEOUT_SECONDS = 900


class BaselineError(RuntimeError):
    """The base revision cannot be previewed (not a git checkout, an unknown ref): the message says why."""


@dataclass(frozen=True)
class Baseline:
    """The base preview of one stack: a folder, or why there is none."""

    stack: str
    commit: str
    label: str  # "main (3f2c1ab)"
    folder: Path | None
    missing: str = ""  # why there is no folder


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise BaselineError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result.stdout.strip()


def is_checkout(root: Path) -> bool:
    """Whether ``root`` is the top of a git work tree (a copied project folder is not)."""
    if not (root / ".git").exists():  # a folder, or a file in a linked worktree
        return False
    try:
        return Path(_git(root, "rev-parse", "--show-toplevel")).resolve() == root.resolve()
    except (BaselineError, OSError):
        return False


def resolve(root: Path, ref: str) -> str:
    """The commit id ``ref`` names; ``BaselineError`` for a ref git does not know."""
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except BaselineError:
        raise BaselineError(f"base {ref!r} is not a commit of this repository (git rev-parse found nothing)") from None


def is_clean(root: Path) -> bool:
    """No change against ``HEAD``: nothing modified, staged or untracked (ignored files do not count)."""
    return _git(root, "status", "--porcelain") == ""


def cache_root(root: Path) -> Path:
    """``$PREVIEW_CACHE`` or ``<root>/.cache/preview``."""
    return Path(os.environ.get(CACHE_ENV) or root / ".cache" / "preview")


def _label(ref: str, commit: str) -> str:
    return commit[:7] if commit.startswith(ref.lower()) else f"{ref} ({commit[:7]})"


def _cached(folder: Path, stack: str) -> bool:
    return (folder / stack / "resources.json").exists() or any(
        (folder / f"{stack}{mark}").exists() for mark in (ABSENT_MARK, FAILED_MARK)
    )


def _result(folder: Path, stack: str, commit: str, label: str) -> Baseline:
    if (folder / stack / "resources.json").exists():
        return Baseline(stack, commit, label, folder / stack)
    if (folder / f"{stack}{ABSENT_MARK}").exists():
        return Baseline(stack, commit, label, None, f"stack {stack} does not exist at {label}")
    failed = folder / f"{stack}{FAILED_MARK}"
    if not failed.exists():
        return Baseline(stack, commit, label, None, f"no preview of {stack} at {label} was stored")
    message = failed.read_text().strip()
    return Baseline(stack, commit, label, None, f"the preview of {stack} at {label} failed: {message}")


def _export(root: Path, commit: str, target: Path) -> None:
    """Write ``commit``'s tree into ``target`` (``git archive``) and link the shared upstream trees and tools."""
    archive = target.parent / f"{target.name}.tar"
    with archive.open("wb") as out:
        result = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", commit], stdout=out, timeout=300)
    if result.returncode != 0:
        raise BaselineError(f"git archive {commit} failed")
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="tar")  # our own commit; "tar" keeps links the tree may hold
    except tarfile.TarError as error:
        raise BaselineError(f"could not unpack {commit}: {error}") from error
    finally:
        archive.unlink()
    for name in _LINKED:
        source = root / name
        if source.exists() and not (target / name).is_symlink() and not (target / name).exists():
            (target / name).symlink_to(source.resolve())


def _python_for(root: Path, tree: Path, cache: Path) -> str:
    """This interpreter when the base pins the same packages; else a virtualenv for its pins (made once)."""
    pins = [(tree / name).read_bytes() if (tree / name).exists() else b"" for name in _REQUIREMENTS]
    ours = [(root / name).read_bytes() if (root / name).exists() else b"" for name in _REQUIREMENTS]
    if pins == ours:
        return sys.executable
    digest = hashlib.sha256(b"\0".join(pins)).hexdigest()[:16]
    venv = cache / "venvs" / digest
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        requirements = tree / _REQUIREMENTS[-1] if (tree / _REQUIREMENTS[-1]).exists() else tree / _REQUIREMENTS[0]
        install = [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(requirements),
        ]
        if subprocess.run(install, timeout=TIMEOUT_SECONDS).returncode != 0:
            raise BaselineError(f"could not install the base's pinned packages into {venv}")
        (venv / ".installed").touch()
    return str(python)


class PendingBaseline:
    """A base preview being made in the background (``start``), collected with ``wait``."""

    def __init__(self, root: Path, ref: str, stacks: Iterable[str]) -> None:
        self.root, self.ref = root, ref
        self.commit = resolve(root, ref)
        self.label = _label(ref, self.commit)
        self.cache = cache_root(root)
        self.folder = self.cache / self.commit
        self.stacks = list(stacks)
        self._process: subprocess.Popen[bytes] | None = None
        self._work: Path | None = None
        self._todo = [s for s in self.stacks if not _cached(self.folder, s)]
        self._waited = False

    def start(self) -> PendingBaseline:
        """Begin previewing the stacks not cached yet (returns at once)."""
        if not self._todo:
            return self
        if self.commit == resolve(self.root, "HEAD") and is_clean(self.root):
            return self  # the working tree is HEAD: the preview about to be made is stored by ``seed``
        self.cache.mkdir(parents=True, exist_ok=True)
        self._work = Path(tempfile.mkdtemp(prefix=f".{self.commit[:12]}.", dir=self.cache))
        tree = self._work / "tree"
        tree.mkdir()
        _export(self.root, self.commit, tree)
        present = [s for s in self._todo if (tree / f"Pulumi.{s}.yaml").exists()]
        for stack in self._todo:
            if stack not in present:
                (self._work / f"{stack}{ABSENT_MARK}").touch()
        if not present:
            return self
        python = _python_for(self.root, tree, self.cache)
        # The base shares the project's render cache (its entries are safe across revisions).
        env = {**os.environ, NO_BASE_ENV: "1", CACHE_DIR_ENV: str(project_cache(self.root).folder.resolve())}
        log = (self._work / "preview.log").open("wb")
        command = [python, "-m", "preview", "--quiet", "--out", str(self._work / "out"), *present]
        self._process = subprocess.Popen(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
        return self

    def get(self, stack: str) -> Baseline:
        """The baseline of ``stack`` (waits for the base preview the first time; read when asked, so a
        stack ``seed`` stored after an earlier stack's summary is found)."""
        if not self._waited:
            self.wait()
        return _result(self.folder, stack, self.commit, self.label)

    def wait(self) -> dict[str, Baseline]:
        """Wait for the base preview, store it in the cache, and return each stack's baseline."""
        self._waited = True
        if self._work is not None:
            try:
                if self._process is not None:
                    self._process.wait(timeout=TIMEOUT_SECONDS)
                self._store()
            finally:
                shutil.rmtree(self._work, ignore_errors=True)
        return {stack: _result(self.folder, stack, self.commit, self.label) for stack in self.stacks}

    def _store(self) -> None:
        assert self._work is not None
        log = (self._work / "preview.log").read_text(errors="replace") if (self._work / "preview.log").exists() else ""
        self.folder.mkdir(parents=True, exist_ok=True)
        for stack in self._todo:
            made, absent = self._work / "out" / stack, self._work / f"{stack}{ABSENT_MARK}"
            if absent.exists():
                (self.folder / f"{stack}{ABSENT_MARK}").touch()
            elif (made / "resources.json").exists():
                _move_into(made, self.folder / stack)
            else:
                lines = [line for line in log.splitlines() if stack in line or line.startswith("error")]
                (self.folder / f"{stack}{FAILED_MARK}").write_text(
                    (lines[-1] if lines else "no preview written") + "\n"
                )


def _move_into(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` unless another run stored the same commit's preview first."""
    try:
        source.rename(target)
    except OSError:  # already there: both were made from the same commit, so they are the same
        shutil.rmtree(source, ignore_errors=True)


class FolderBaseline:
    """Previews already on disk (``--base-dir DIR``: ``DIR/<stack>/``), e.g. an artifact of another run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, stack: str) -> Baseline:
        """``DIR/<stack>``, or why it is not there."""
        if (self.folder / stack / "resources.json").exists():
            return Baseline(stack, "", str(self.folder), self.folder / stack)
        return Baseline(stack, "", str(self.folder), None, f"{self.folder / stack} holds no preview")


def seed(root: Path, preview_dir: Path, stack: str) -> None:
    """Store the preview just made of a clean checkout as ``HEAD``'s (no-op when cached or not clean)."""
    if not is_checkout(root) or not is_clean(root):
        return
    commit = resolve(root, "HEAD")
    folder = cache_root(root) / commit
    if _cached(folder, stack) or not (preview_dir / "resources.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{stack}.", dir=folder))
    shutil.copytree(preview_dir, staging / stack)
    _move_into(staging / stack, folder / stack)
    shutil.rmtree(staging, ignore_errors=True)
