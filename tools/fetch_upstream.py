"""``python -m tools.fetch_upstream [--mirror DIR]``: put the pinned upstream artifacts under ``.upstream/``.

With ``--mirror`` (``make upstream UPSTREAM_MIRROR=DIR``) the archives are read from a local folder:
the air-gapped path, and this project's CI. Without it they are downloaded from upstream (GitHub,
NGC). Either way every tree is checked against its pinned content digest before it is moved into
place; a tree already in place with the right digest is left alone. Standard library only.

A source subset (an artifact with ``paths``, ``components.catalog.upstream.SOURCES``) comes from GitHub as the
whole tag tarball; only the members under those paths are written to disk, while the archive is read, so the
rest of the repository never lands anywhere. A mirror's archive of the subset holds only those paths already:
the same filter keeps all of it, and both give the same tree and digest.

Exit codes: 0 every artifact in place; 1 a download, copy or digest check failed (nothing half-written
is left in ``.upstream/``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from components.catalog.upstream import ARTIFACTS, UPSTREAM_DIR, UpstreamArtifact, tree_digest

ROOT = Path(__file__).resolve().parents[1]


class FetchError(Exception):
    """An artifact could not be put in place; the message says which and why."""


def _obtain(artifact: UpstreamArtifact, mirror: Path | None, work: Path) -> Path:
    """The archive on local disk: the mirror's file itself, or upstream's downloaded into ``work``."""
    if mirror is not None:
        source = mirror / artifact.archive
        if not source.is_file():
            raise FetchError(f"{artifact.name}: {source} not found in the mirror (expected {artifact.archive})")
        return source
    target = work / artifact.archive
    try:
        with urllib.request.urlopen(artifact.url, timeout=120) as response, target.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        raise FetchError(
            f"{artifact.name}: download of {artifact.url} failed ({error}); without network, copy the archive "
            f"into a folder and run `make upstream UPSTREAM_MIRROR=<folder>`"
        ) from None
    return target


def _kept_members(artifact: UpstreamArtifact, tar: tarfile.TarFile, found: set[str]) -> Iterator[tarfile.TarInfo]:
    """The members under ``strip_prefix/`` that ``artifact.paths`` keep, in archive order; records which paths matched.

    A generator over the open archive, so ``extractall`` writes each kept member as the archive is read and skips
    the others without writing them.
    """
    for member in tar:
        parts = PurePosixPath(member.name).parts
        if len(parts) < 2 or parts[0] != artifact.strip_prefix:
            continue
        kept = artifact.kept_under("/".join(parts[1:]))
        if kept is None:
            continue
        found.add(kept)
        yield member


def _unpack(artifact: UpstreamArtifact, archive: Path, work: Path) -> Path:
    """The kept part of ``archive`` unpacked under ``work``; returns the tree (the top folder's content)."""
    unpacked = work / "unpacked"
    found: set[str] = set()
    try:
        # Read once, front to back: each kept member is written as the generator reaches it. (Not stream mode,
        # "r|*": CPython's stream reader misreads a gzip header with an extra field, which Helm's .tgz has.)
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, members=_kept_members(artifact, tar, found), filter="data")
    except (tarfile.TarError, OSError) as error:
        raise FetchError(f"{artifact.name}: {archive.name} is not a readable archive ({error})") from None
    tree = unpacked / artifact.strip_prefix
    if not tree.is_dir():
        raise FetchError(f"{artifact.name}: {archive.name} has no top folder {artifact.strip_prefix}/")
    missing = [path for path in artifact.paths if path not in found]
    if missing:
        raise FetchError(
            f"{artifact.name} {artifact.version}: {archive.name} has nothing under {artifact.strip_prefix}/ at "
            f"{', '.join(missing)}; if the tag moved them, change the artifact's paths (and its pin) in "
            "components/catalog/upstream.py"
        )
    return tree


def _mismatch(artifact: UpstreamArtifact, digest: str, source: str) -> str:
    """The refusal of a tree whose content is not the pinned one: which artifact, and what to do about it."""
    subset = f" (only {' '.join(artifact.paths)} of it)" if artifact.paths else ""
    return (
        f"{artifact.name} {artifact.version}: the content digest {digest} of the tree from {source}{subset} does "
        f"not match the pin {artifact.content_sha256} (components/catalog/upstream.py); refusing to use it, nothing "
        f"was written to {artifact.path}. A mirror's archive that differs from upstream's: replace it with "
        f"{artifact.url}. Moving the pin on purpose (a new tag): set content_sha256 to the new digest, then run "
        "`python -m components.catalog.upstream_facts` (or tests/catalog/test_upstream_facts.py) to list the "
        "catalog facts the new source no longer supports."
    )


def ensure(artifact: UpstreamArtifact, root: Path, mirror: Path | None) -> str:
    """Put one artifact in place; returns what was done, raises ``FetchError``."""
    destination = root / artifact.path
    if destination.is_dir() and tree_digest(destination) == artifact.content_sha256:
        return f"{artifact.name} {artifact.version}: in place ({artifact.path})"
    (root / UPSTREAM_DIR).mkdir(parents=True, exist_ok=True)
    source = f"mirror {mirror}" if mirror else artifact.url
    with tempfile.TemporaryDirectory(dir=root / UPSTREAM_DIR) as tmp:
        work = Path(tmp)
        tree = _unpack(artifact, _obtain(artifact, mirror, work), work)
        digest = tree_digest(tree)
        if digest != artifact.content_sha256:
            raise FetchError(_mismatch(artifact, digest, source))
        if destination.exists():
            shutil.rmtree(destination)
        tree.rename(destination)
    return f"{artifact.name} {artifact.version}: fetched from {source}, digest verified ({artifact.path})"


def main(argv: list[str] | None = None) -> int:
    """Fetch or copy every pinned artifact; print one line each."""
    parser = argparse.ArgumentParser(prog="python -m tools.fetch_upstream", description=__doc__)
    parser.add_argument("--mirror", type=Path, help="a folder holding the upstream archives (air-gapped)")
    parser.add_argument("--root", type=Path, default=ROOT, help="project folder")
    args = parser.parse_args(argv)
    mirror = args.mirror.resolve() if args.mirror else None
    try:
        for artifact in ARTIFACTS:
            print(ensure(artifact, args.root, mirror))
    except FetchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
