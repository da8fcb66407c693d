"""The upstream artifacts the program deploys, pinned by version and content digest.

One place for each pin: ``make upstream`` (``python -m tools.fetch_upstream``) fetches them from
upstream, or copies them from a mirror folder (``UPSTREAM_MIRROR=<dir>``, the air-gapped path), checks
the digests, and unpacks them under ``.upstream/`` (which ``make clean`` keeps). The stacks and the
tests read them there.

Why a *content* digest (sha256 over every file's path and sha256, see ``tree_digest``) and not
the archive's: the same tree comes as different archives (GitHub's tag tarball and ``git archive``
differ in gzip headers; NGC's packaged chart and a ``helm package`` of the same tag differ in
timestamps), so only the content is the same everywhere.

Sources:
- kubeflow/manifests tag v1.10.2, commit d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39
  (https://github.com/kubeflow/manifests/releases/tag/v1.10.2).
- NVIDIA GPU Operator Helm chart v26.7.0, https://helm.ngc.nvidia.com/nvidia (repo ``nvidia``), from
  github.com/NVIDIA/gpu-operator tag v26.7.0 (commit 10ee5b3638b89e11e949412aafa5ba99279c3721),
  ``deployments/gpu-operator`` with its vendored node-feature-discovery 0.19.0 subchart.
"""

from __future__ import annotations

import hashlib
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

#: Where ``make upstream`` puts the artifacts, relative to the project root.
UPSTREAM_DIR: Final = ".upstream"


@dataclass(frozen=True)
class UpstreamArtifact:
    """One pinned upstream artifact: where it comes from, what it must contain, where it lands."""

    name: str
    version: str
    url: str  #: the archive upstream publishes
    archive: str  #: the archive's file name in a mirror folder
    strip_prefix: str  #: the archive's top folder, dropped when unpacking
    content_sha256: str  #: ``tree_digest`` of the unpacked tree
    unpacked: str  #: the folder under ``UPSTREAM_DIR`` the tree is unpacked into

    @property
    def path(self) -> str:
        """The unpacked tree, relative to the project root."""
        return f"{UPSTREAM_DIR}/{self.unpacked}"


KUBEFLOW_MANIFESTS: Final = UpstreamArtifact(
    name="kubeflow-manifests",
    version="v1.10.2",
    url="https://github.com/kubeflow/manifests/archive/refs/tags/v1.10.2.tar.gz",
    archive="kubeflow-manifests-v1.10.2.tar.gz",
    strip_prefix="manifests-1.10.2",
    content_sha256="385ce855e02681efaf6f958c1d2f8d30d10da98d12810c6956f1664774822db6",
    unpacked="kubeflow-manifests-v1.10.2",
)

GPU_OPERATOR_CHART: Final = UpstreamArtifact(
    name="gpu-operator-chart",
    version="v26.7.0",
    url="https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v26.7.0.tgz",
    archive="gpu-operator-v26.7.0.tgz",
    strip_prefix="gpu-operator",
    content_sha256="936d389c41382e245227c81dd8d58b7ba7efc0c972b89509c6a79980b273c491",
    unpacked="gpu-operator-v26.7.0",
)

ARTIFACTS: Final = (KUBEFLOW_MANIFESTS, GPU_OPERATOR_CHART)


def pinned_chart(version: str) -> UpstreamArtifact | None:
    """The pinned GPU Operator chart artifact of ``version``, or None when that version has no pin."""
    return GPU_OPERATOR_CHART if version == GPU_OPERATOR_CHART.version else None


def tree_digest(root: Path, *, ignore: frozenset[str] = frozenset()) -> str:
    """sha256 over ``<relative path> <sha256 of content>`` of every file under ``root``, sorted.

    Symbolic links contribute their target instead of content; folders and file modes contribute
    nothing (archivers disagree on modes, never on content). Top-level entries named in ``ignore``
    are left out (``.git``: a git checkout of the tag is the archive's tree plus its repository).
    """
    lines = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/", 1)[0] in ignore:
            continue
        if path.is_symlink():
            lines.append(f"{relative} link {path.readlink().as_posix()}")
        elif path.is_file():
            lines.append(f"{relative} {hashlib.sha256(path.read_bytes()).hexdigest()}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def archive_digest(archive: Path, strip_prefix: str) -> str:
    """``tree_digest`` of the tree under ``strip_prefix/`` in a tar archive, without unpacking it.

    The same lines in the same order as ``tree_digest`` of the unpacked tree (paths sorted as
    ``pathlib`` sorts them, by component), so an archive and its unpacked copy have one digest.
    Raises ``tarfile.TarError`` or ``OSError`` for an unreadable archive.
    """
    entries: dict[PurePosixPath, str] = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if not path.parts or path.parts[0] != strip_prefix or len(path.parts) == 1:
                continue
            relative = PurePosixPath(*path.parts[1:])
            if member.issym():
                entries[relative] = f"{relative.as_posix()} link {member.linkname}"
            elif member.isfile():
                handle = tar.extractfile(member)
                content = handle.read() if handle is not None else b""
                entries[relative] = f"{relative.as_posix()} {hashlib.sha256(content).hexdigest()}"
    lines = [entries[key] for key in sorted(entries)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
