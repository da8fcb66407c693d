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
- ``SOURCES``: the pinned source of the systems the catalog states facts about (GPU Operator, mig-parted,
  k8s-driver-manager, k8s-device-plugin, terraform-provider-yandex, pulumi-kubernetes), each a subset of GitHub's
  tag tarball (``paths``). ``components.catalog.upstream_facts`` checks every such fact against these trees.
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
    #: Only these paths (relative to ``strip_prefix``) are kept from the archive; empty keeps everything. A source
    #: subset: GitHub's tag tarball holds the whole repository, the mirror's archive only these paths, and the
    #: content digest is over the kept paths, so both give the same tree.
    paths: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        """The unpacked tree, relative to the project root."""
        return f"{UPSTREAM_DIR}/{self.unpacked}"

    def kept_under(self, relative: str) -> str | None:
        """The entry of ``paths`` that keeps the archive member at ``relative`` (below ``strip_prefix``), or None."""
        return kept_under(self.paths, relative)


def kept_under(paths: tuple[str, ...], relative: str) -> str | None:
    """The entry of ``paths`` that keeps the archive member at ``relative`` (below the top folder), or None.

    Why one rule for the fetcher and the digests: a path keeps itself (a file such as ``go.mod``) and everything
    below it (a folder), never a sibling that merely starts with the same letters (``api`` keeps ``api/x.go``,
    not ``apis/x.go``). Without ``paths`` every member is kept (returned as ``""``).
    """
    if not paths:
        return ""
    for kept in paths:
        if relative == kept or relative.startswith(f"{kept}/"):
            return kept
    return None


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


def _source(repo: str, tag: str, top: str, digest: str, unpacked: str, paths: str) -> UpstreamArtifact:
    """A subset of a GitHub tag tarball: the pinned source the catalog's facts about other systems are read from."""
    name = repo.split("/", 1)[1]
    return UpstreamArtifact(
        name=f"{name}-source",
        version=tag,
        url=f"https://github.com/{repo}/archive/refs/tags/{tag}.tar.gz",
        archive=f"{unpacked}.tar.gz",
        strip_prefix=top,
        content_sha256=digest,
        unpacked=unpacked,
        paths=tuple(paths.split()),
    )


#: NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3638b89e11e949412aafa5ba99279c3721): the operator, its state
#: manifests, its controllers and the vendored k8s-operator-libs ``pkg/upgrade``.
GPU_OPERATOR_SOURCE: Final = _source(
    "NVIDIA/gpu-operator",
    "v26.7.0",
    "gpu-operator-26.7.0",
    "0c105e82ca12a92be3df4eba3d8fb22778fb3a73fce9f87279e59d45035c4b90",
    "gpu-operator-source-v26.7.0",
    "api assets cmd controllers internal manifests docker deployments/gpu-operator "
    "vendor/github.com/NVIDIA/k8s-operator-libs go.mod",
)
#: NVIDIA/mig-parted v0.15.0 (commit e2d5ad1fc72b9d298ea6d04b885cf2d7dbe56941): mig-manager.
MIG_PARTED_SOURCE: Final = _source(
    "NVIDIA/mig-parted",
    "v0.15.0",
    "mig-parted-0.15.0",
    "71ad7e3f3ceab2105ce998800627b33ac7f11474aa47a936f1ed05371c87d1bd",
    "mig-parted-source-v0.15.0",
    "api cmd deployments internal pkg go.mod",
)
#: NVIDIA/k8s-driver-manager v0.12.0 (commit bd62ca7d4a25376a7edd67e2f247e124cd77cd9c).
DRIVER_MANAGER_SOURCE: Final = _source(
    "NVIDIA/k8s-driver-manager",
    "v0.12.0",
    "k8s-driver-manager-0.12.0",
    "34ceee46ca303c53423d3234bcfd02ff7a94233bc80719747fad53eded7c2ae3",
    "k8s-driver-manager-source-v0.12.0",
    "cmd deployments internal scripts go.mod",
)
#: NVIDIA/k8s-device-plugin v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6): the device plugin and GFD.
DEVICE_PLUGIN_SOURCE: Final = _source(
    "NVIDIA/k8s-device-plugin",
    "v0.20.0",
    "k8s-device-plugin-0.20.0",
    "4f189421701142d98ce4c15b5e847175223750d3e13944f11d2c3ba90eea5757",
    "k8s-device-plugin-source-v0.20.0",
    "api cmd deployments internal go.mod",
)
#: yandex-cloud/terraform-provider-yandex v0.161.0 (commit b47acf2ae2f2fde2aa707d053e49c6e3ea4c9d5b): what the
#: pulumi-yandex-marketmaker 0.161.6 bridge wraps.
YANDEX_PROVIDER_SOURCE: Final = _source(
    "yandex-cloud/terraform-provider-yandex",
    "v0.161.0",
    "terraform-provider-yandex-0.161.0",
    "9f153523e7673937337cb9d867af2fac8fc0a7e11b30c9ec90fdc1eda98c1880",
    "terraform-provider-yandex-source-v0.161.0",
    "yandex/resource_yandex_kubernetes_node_group.go yandex/resource_yandex_kubernetes_cluster.go "
    "yandex/data_source_yandex_kubernetes_cluster.go yandex/data_source_yandex_kubernetes_node_group.go "
    "docs/resources/kubernetes_node_group.md docs/resources/kubernetes_cluster.md "
    "docs/data-sources/kubernetes_cluster.md",
)
#: pulumi/pulumi-kubernetes v4.32.0 (commit a03ff6ba58d2f1ea68319dda4b2c982119489c71): the newest provider source
#: tag available (the pinned Python SDK is 4.34.2).
PULUMI_KUBERNETES_SOURCE: Final = _source(
    "pulumi/pulumi-kubernetes",
    "v4.32.0",
    "pulumi-kubernetes-4.32.0",
    "de5fff427eb6249ea682ded52f7e6186d17c3075086779d3b421e88991f1b14f",
    "pulumi-kubernetes-source-v4.32.0",
    "provider/pkg/await provider/pkg/metadata provider/pkg/ssa provider/pkg/provider provider/pkg/clients "
    "provider/pkg/kinds CHANGELOG.md",
)

SOURCES: Final = (
    GPU_OPERATOR_SOURCE,
    MIG_PARTED_SOURCE,
    DRIVER_MANAGER_SOURCE,
    DEVICE_PLUGIN_SOURCE,
    YANDEX_PROVIDER_SOURCE,
    PULUMI_KUBERNETES_SOURCE,
)
ARTIFACTS: Final = (KUBEFLOW_MANIFESTS, GPU_OPERATOR_CHART, *SOURCES)


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


def archive_digest(archive: Path, strip_prefix: str, paths: tuple[str, ...] = ()) -> str:
    """``tree_digest`` of the tree under ``strip_prefix/`` in a tar archive, without unpacking it.

    The same lines in the same order as ``tree_digest`` of the unpacked tree (paths sorted as
    ``pathlib`` sorts them, by component), so an archive and its unpacked copy have one digest.
    ``paths``: only the members an artifact with these ``paths`` keeps (``UpstreamArtifact.kept_under``), so
    GitHub's whole tag tarball and a mirror's subset of it have one digest too.
    Raises ``tarfile.TarError`` or ``OSError`` for an unreadable archive.
    """
    entries: dict[PurePosixPath, str] = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if not path.parts or path.parts[0] != strip_prefix or len(path.parts) == 1:
                continue
            relative = PurePosixPath(*path.parts[1:])
            if kept_under(paths, relative.as_posix()) is None:
                continue
            if member.issym():
                entries[relative] = f"{relative.as_posix()} link {member.linkname}"
            elif member.isfile():
                handle = tar.extractfile(member)
                content = handle.read() if handle is not None else b""
                entries[relative] = f"{relative.as_posix()} {hashlib.sha256(content).hexdigest()}"
    lines = [entries[key] for key in sorted(entries)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
