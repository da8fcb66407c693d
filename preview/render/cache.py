"""Helm and kustomize renders kept on disk, keyed by everything a render is a function of.

Why: a render is a pure function of what goes into it: the tool and its version, the pinned artifact
(chart or manifests tree, by its content digest), the command's arguments, and the release's values or
the overlay's files. Re-running ``helm template`` and ``kubectl kustomize`` over the real Kubeflow tree
on every preview costs seconds for output that cannot have changed, and the test suite previews the
same stacks hundreds of times. So each render's objects, and the masked YAML files written from them,
are stored under ``.cache/render/`` and re-used while the key is the same.

- **Key**: sha256 over the tool's name and version (``helm version``, ``kubectl version --client``; the
  version itself is remembered per binary, by path, size and modification time), every pinned upstream
  artifact's content digest (``make upstream`` checks each unpacked tree against it), the arguments
  (without the tool's own path) and the values, or the overlay folder's ``tree_digest``.
- **Bounded, keeping what the next preview needs** (issue #41): the folder holds at most ``MAX_BYTES``.
  Every read refreshes an entry's modification time: the cache's own record of use (``atime`` is not kept
  on ``noatime`` mounts). A whole preview (any kind the renders do not write: ``preview.run.result_cache``)
  is stored with a small record, ``<key>.<kind>.json.uses``: its *lineage* (``put(..., lineage=)``; a
  preview stored without one is a lineage of its own) and the renders it was made from, which are the
  render entries this process read or stored between looking the preview up (a miss) and storing it.
  After each store, while the folder is over its bound: (1) every entry outside the protected set goes,
  least recently used first whatever its kind, a record with its preview; (2) only if the protected set
  alone is over the bound, its groups go, least recently used first, a preview before its renders (a
  render shared with a later group stays with it), this process's own last. The protected set: per
  lineage, its most recently used whole preview with the renders it was made from, the most recently used
  lineages first while they fit in ``PROTECTED_SHARE`` of the bound (so whole previews never crowd out
  the renders of everything else); and this process's own group, the entry it just stored and the renders
  of the preview it is making. So a preview stored into a full folder stays (before, whole previews went
  first and each was deleted as it was stored: no warm preview was served whole), the bound always holds,
  and an entry larger than the bound alone is not kept.
  Why not ``diskcache``: it culls by one per-entry order (least recently stored or used, or least
  frequently used), with no notion of an entry keeping others (a preview its renders), so the protected
  set would have to live outside it anyway; and its SQLite index, written on every read, would be a second
  store to keep consistent with files that ``make clean`` removes and two test workers share. The standard
  library does it in about a hundred lines, and a warm preview imports nothing beyond it.
- **Safe under concurrent previews**: an entry (and a whole preview's record, written before it) goes to a
  temporary file in its folder and is renamed into place (atomic on POSIX), so a reader sees no entry or a
  whole one; an unreadable entry is a miss. Pruning only unlinks: a reader that opened an entry reads all
  of it, one that comes later finds none (a miss); two prunes at once only find some files gone. A
  temporary file is neither counted nor removed while it is younger than an hour (a write in flight,
  whose writer prunes once it is in place); older, it is a dead writer's and goes. ``make clean`` removes
  the folder.
- Failed renders are never stored: a failure is re-run, so its message is always the tool's current one.
- ``GPU_PLATFORM_RENDER_CACHE=off`` renders everything every time; ``GPU_PLATFORM_CACHE_DIR=<folder>``
  puts the cache elsewhere (a base preview of ``make diff``, exported under ``.cache/preview/``, shares
  the project's; so do the test suite's throw-away repositories). Entries are safe to share between
  revisions: an objects entry is the tool's output alone, a files entry is keyed by the code that writes it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.catalog.upstream import ARTIFACTS

CACHE_ENV = "GPU_PLATFORM_RENDER_CACHE"
CACHE_DIR_ENV = "GPU_PLATFORM_CACHE_DIR"
CACHE_DIR = Path(".cache") / "render"
MAX_BYTES = 512 * 1024 * 1024  #: the folder's bound; the dev and prod renders take about 30 MB together
#: The kinds of entry the renders write (``preview.render.rendered``); any other kind is a whole preview.
RENDER_KINDS = ("documents", "files-")
#: Beside a whole preview's entry ``<key>.<kind>.json``: its record, ``<key>.<kind>.json.uses``.
USES_SUFFIX = ".uses"
#: The most that whole previews and the renders they were made from may keep from other entries' reach: at
#: least half the folder is least recently used across kinds (the test suite's renders, superseded previews).
PROTECTED_SHARE = 0.5
_TEMPORARY_PREFIX = ".tmp-"
_STALE_TEMPORARY_NS = 3600 * 10**9  #: a temporary file this old belongs to a writer that died
_VERSION_COMMANDS = {"helm": ["version", "--short"], "kubectl": ["version", "--client", "--output=json"]}


def enabled(variable: str = CACHE_ENV) -> bool:
    """False when ``variable`` (by default ``GPU_PLATFORM_RENDER_CACHE``) is ``off``, ``0``, ``false`` or ``no``."""
    return os.environ.get(variable, "on").lower() not in ("off", "0", "false", "no")


def project_cache(project: Path) -> RenderCache:
    """The cache of ``project``: ``$GPU_PLATFORM_CACHE_DIR``, else ``<project>/.cache/render``."""
    shared = os.environ.get(CACHE_DIR_ENV)
    return RenderCache(Path(shared) if shared else project / CACHE_DIR)


class _InUse:
    """Per cache folder, the render entries this process read or wrote since it looked up a whole preview.

    Those are the renders the whole preview stored next is made from. Module-wide (the renderers and the
    result cache each make their own ``RenderCache`` of one folder) and locked (the renders run in
    threads). Nothing is noted in a process that looks up no whole preview (the result cache is off).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[Path, set[str]] = {}

    def start(self, folder: Path) -> None:
        """A whole preview was looked up: note its renders from now on."""
        with self._lock:
            self._names[folder] = set()

    def note(self, folder: Path, name: str) -> None:
        with self._lock:
            if folder in self._names:
                self._names[folder].add(name)

    def take(self, folder: Path) -> set[str]:
        """The renders noted since the lookup; noting stops until the next one."""
        with self._lock:
            return self._names.pop(folder, set())

    def peek(self, folder: Path) -> set[str]:
        with self._lock:
            return set(self._names.get(folder, ()))


_IN_USE = _InUse()


class RenderCache:
    """One cache folder of renders (and, through ``preview.run.result_cache``, of whole previews)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    # -- keys ------------------------------------------------------------------------------------

    def key(self, tool: str, arguments: list[str], inputs: str) -> str | None:
        """The key of a render by ``tool`` (a path) with ``arguments`` over ``inputs``; None: do not cache."""
        version = self.tool_version(tool)
        if version is None:
            return None
        material = {
            "tool": Path(tool).name,
            "version": version,
            "upstream": {artifact.name: artifact.content_sha256 for artifact in ARTIFACTS},
            "arguments": arguments,
            "inputs": inputs,
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def tool_version(self, tool: str) -> str | None:
        """The version text of the tool at ``tool`` (a path), remembered per binary; None if it cannot be read."""
        try:
            status = Path(tool).resolve().stat()
        except OSError:
            return None
        return _tool_version(str(Path(tool).resolve()), status.st_size, status.st_mtime_ns, self.folder)

    # -- entries ---------------------------------------------------------------------------------

    def get(self, key: str, kind: str) -> Any | None:
        """The stored value of ``kind`` (``documents``, ``files-<digest>``, another user's) under ``key``, or None.

        A whole preview (a kind the renders do not write) looked up and missing is made next: the renders
        read or stored from then on in this process are the ones it is made from (``put`` records them).
        """
        path = self._path(key, kind)
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError):
            if not _is_render_kind(kind):
                _IN_USE.start(self._folder_id())  # a miss: the preview is made now, from what is read next
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: the cache's own access time
        if _is_render_kind(kind):
            _IN_USE.note(self._folder_id(), _name(path))
        else:
            _IN_USE.take(self._folder_id())  # served whole: nothing is made
        return value

    def put(self, key: str, kind: str, value: Any, *, lineage: str | None = None) -> None:
        """Store ``value`` atomically, then keep the folder within ``MAX_BYTES``; a full disk only skips it.

        A whole preview is stored with its record: ``lineage`` (a later preview of the same lineage takes
        its place in the protected set; default: the entry alone) and the renders it was made from.
        """
        path = self._path(key, kind)
        folder = self._folder_id()
        record = None
        if _is_render_kind(kind):
            _IN_USE.note(folder, _name(path))
        else:
            record = {"lineage": lineage or _name(path), "renders": sorted(_IN_USE.take(folder))}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if record is not None:  # the record first: an entry is never seen without it
                _write_atomically(_uses_path(path), json.dumps(record))
            _write_atomically(path, json.dumps(value, separators=(",", ":")))
        except OSError:
            if record is not None:
                with contextlib.suppress(OSError):
                    _uses_path(path).unlink()
            return
        self._prune(stored=_name(path))

    def _path(self, key: str, kind: str) -> Path:
        return self.folder / key[:2] / f"{key}.{kind}.json"

    def _folder_id(self) -> Path:
        return Path(os.path.abspath(self.folder))

    def _prune(self, stored: str = "") -> None:
        """Keep the folder within ``MAX_BYTES``: unprotected entries first, then protected groups (see above)."""
        files = _scan(self.folder)
        stale = time.time_ns() - _STALE_TEMPORARY_NS
        for name in [n for n, item in files.items() if item.role == "temporary" and item.used >= stale]:
            del files[name]  # a write in flight: its writer prunes once it is in place
        total = sum(item.size for item in files.values())
        if total <= MAX_BYTES:
            return

        def remove(name: str) -> None:
            """Remove an entry (a whole preview with its record), or a record or temporary file alone."""
            nonlocal total
            for each in (name, name + USES_SUFFIX) if files.get(name, _GONE).role == "entry" else (name,):
                item = files.pop(each, None)
                if item is None:
                    continue
                try:
                    item.path.unlink()
                except FileNotFoundError:
                    pass  # removed by another process's prune
                except OSError:
                    continue  # cannot be removed: it still counts
                total -= item.size

        for name in [n for n, item in files.items() if item.role == "temporary"]:
            remove(name)  # what a writer that died left behind (an hour old)
        groups = self._protected_groups(files, stored)
        protected = {name for group in groups for name in group.members}
        # 1. Everything else, least recently used first, whatever its kind; a record goes with its entry.
        unprotected = sorted(
            (n for n, item in files.items() if n not in protected and (item.role == "entry" or _orphan(n, files))),
            key=lambda n: files[n].used,
        )
        for name in unprotected:
            if total <= MAX_BYTES:
                return
            remove(name)
        # 2. The protected set alone is over the bound: its groups go, least recently used first, each
        #    preview before its renders, a render only with the last group made from it; this process's last.
        for index, group in enumerate(groups):
            later = {name for other in groups[index + 1 :] for name in other.members}
            for name in group.members:
                if total <= MAX_BYTES:
                    return
                if name not in later:
                    remove(name)

    def _protected_groups(self, files: dict[str, _File], stored: str) -> list[_Group]:
        """The protected groups, least recently used first (see ``PROTECTED_SHARE``).

        Per lineage its most recently used whole preview with the renders it was made from, the most recently
        used lineages first while they fit in their share of the bound (a render counts once); last, this
        process's own group: the renders of the preview it is making and the entry just stored.
        """
        newest: dict[str, _Group] = {}
        for name, item in files.items():
            if item.role != "entry" or _is_render_kind(_kind_of(name)):
                continue
            lineage, renders = _read_record(files.get(name + USES_SUFFIX))
            group = _Group(item.used, [name, name + USES_SUFFIX, *renders])
            if newest.get(lineage or name, group).used <= group.used:
                newest[lineage or name] = group
        kept: list[_Group] = []
        counted: set[str] = set()
        room = int(MAX_BYTES * PROTECTED_SHARE)
        for group in sorted(newest.values(), key=lambda group: group.used, reverse=True):
            members = {name for name in group.members if name in files} - counted
            room -= sum(files[name].size for name in members)
            if room < 0:
                break  # this lineage and every less recently used one: ordinary entries
            kept.append(group)
            counted |= members
        making = sorted((n for n in _IN_USE.peek(self._folder_id()) if n in files), key=lambda n: files[n].used)
        own = _Group(time.time_ns(), [*making, stored])  # what was just stored goes last of all
        return [*reversed(kept), own]


@dataclass
class _File:
    path: Path
    size: int
    used: int  #: modification time in ns: the entry's last store or read, set by this cache
    role: str  #: ``entry``, ``record`` (a whole preview's ``.uses``) or ``temporary`` (a write in flight)


@dataclass
class _Group:
    """A whole preview, its record and the renders it was made from (in the order they go)."""

    used: int
    members: list[str]


_GONE = _File(Path(), 0, 0, "gone")


def _scan(folder: Path) -> dict[str, _File]:
    """Every file of the cache's entry folders, by name (``ab/<key>.<kind>.json``)."""
    files = {}
    for path in folder.glob("??/*"):
        if path.name.startswith(_TEMPORARY_PREFIX):
            role = "temporary"
        elif path.name.endswith(".json"):
            role = "entry"
        elif path.name.endswith(USES_SUFFIX):
            role = "record"
        else:
            continue
        with contextlib.suppress(OSError):
            status = path.stat()
            files[_name(path)] = _File(path, status.st_size, status.st_mtime_ns, role)
    return files


def _orphan(name: str, files: dict[str, _File]) -> bool:
    """A record whose whole preview is gone."""
    return files[name].role == "record" and name.removesuffix(USES_SUFFIX) not in files


def _read_record(record: _File | None) -> tuple[str, list[str]]:
    """A whole preview's lineage and renders; none (the preview is its own lineage) when unreadable."""
    if record is None:
        return "", []
    try:
        stored = json.loads(record.path.read_text())
        lineage, renders = stored["lineage"], stored["renders"]
    except (OSError, ValueError, TypeError, KeyError):
        return "", []
    if not isinstance(lineage, str) or not isinstance(renders, list):
        return "", []
    return lineage, [name for name in renders if isinstance(name, str) and _is_render_kind(_kind_of(name))]


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place (``OSError`` on failure)."""
    handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _name(path: Path) -> str:
    """An entry's name in its cache: ``<first two hex digits>/<file name>``."""
    return f"{path.parent.name}/{path.name}"


def _kind_of(name: str) -> str:
    """The kind of the entry ``ab/<key>.<kind>.json``."""
    parts = name.rsplit("/", 1)[-1].split(".")
    return parts[1] if len(parts) >= 3 else ""


def _is_render_kind(kind: str) -> bool:
    """Whether ``kind`` is one the renders write (``RENDER_KINDS``)."""
    return kind.startswith(RENDER_KINDS)


def _uses_path(path: Path) -> Path:
    return path.with_name(path.name + USES_SUFFIX)


@functools.cache
def _tool_version(tool: str, size: int, mtime_ns: int, folder: Path) -> str | None:
    """The tool's version text, remembered on disk per binary (path, size, mtime): one run per new binary."""
    arguments = _VERSION_COMMANDS.get(Path(tool).name)
    if arguments is None:
        return None
    identity = hashlib.sha256(f"{tool}\0{size}\0{mtime_ns}".encode()).hexdigest()
    remembered = folder / "tools" / identity
    with contextlib.suppress(OSError):
        return remembered.read_text()
    try:
        done = subprocess.run([tool, *arguments], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    version = done.stdout.strip()
    with contextlib.suppress(OSError):
        remembered.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(remembered, version)
    return version
