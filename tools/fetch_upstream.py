"""``python -m tools.fetch_upstream [--mirror DIR]``: put the pinned upstream artifacts under ``.upstream/``.

With ``--mirror`` (``make upstream UPSTREAM_MIRROR=DIR``) the archives are copied from a local folder:
the air-gapped path, and this project's CI. Without it they are downloaded from upstream (GitHub,
NGC). Either way every tree is checked against its pinned content digest before it is moved into
place; a tree already in place with the right digest is left alone. Standard library only.

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
from pathlib import Path

from components.catalog.upstream import ARTIFACTS, UPSTREAM_DIR, UpstreamArtifact, tree_digest

ROOT = Path(__file__).resolve().parents[1]


class FetchError(Exception):
    """An artifact could not be put in place; the message says which and why."""


def _obtain(artifact: UpstreamArtifact, mirror: Path | None, work: Path) -> Path:
    target = work / artifact.archive
    if mirror is not None:
        source = mirror / artifact.archive
        if not source.is_file():
            raise FetchError(f"{artifact.name}: {source} not found in the mirror (expected {artifact.archive})")
        shutil.copyfile(source, target)
        return target
    try:
        with urllib.request.urlopen(artifact.url, timeout=120) as response, target.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        raise FetchError(
            f"{artifact.name}: download of {artifact.url} failed ({error}); without network, copy the archive "
            f"into a folder and run `make upstream UPSTREAM_MIRROR=<folder>`"
        ) from None
    return target


def _unpack(artifact: UpstreamArtifact, archive: Path, work: Path) -> Path:
    unpacked = work / "unpacked"
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
    except (tarfile.TarError, OSError) as error:
        raise FetchError(f"{artifact.name}: {archive.name} is not a readable archive ({error})") from None
    tree = unpacked / artifact.strip_prefix
    if not tree.is_dir():
        raise FetchError(f"{artifact.name}: {archive.name} has no top folder {artifact.strip_prefix}/")
    return tree


def ensure(artifact: UpstreamArtifact, root: Path, mirror: Path | None) -> str:
    """Put one artifact in place; returns what was done, raises ``FetchError``."""
    destination = root / artifact.path
    if destination.is_dir() and tree_digest(destination) == artifact.content_sha256:
        return f"{artifact.name} {artifact.version}: in place ({artifact.path})"
    (root / UPSTREAM_DIR).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root / UPSTREAM_DIR) as tmp:
        work = Path(tmp)
        tree = _unpack(artifact, _obtain(artifact, mirror, work), work)
        digest = tree_digest(tree)
        if digest != artifact.content_sha256:
            raise FetchError(
                f"{artifact.name} {artifact.version}: content digest {digest} does not match the pin "
                f"{artifact.content_sha256} (components/catalog/upstream.py); refusing to use it"
            )
        if destination.exists():
            shutil.rmtree(destination)
        tree.rename(destination)
    source = f"mirror {mirror}" if mirror else artifact.url
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
