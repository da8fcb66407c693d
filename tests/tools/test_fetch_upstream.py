"""``make upstream``: archives from a mirror or upstream, checked against content pins, moved into place whole.

Source subsets come as GitHub's whole tag tarball; only their listed paths are written, and the digest is theirs.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from components.catalog.upstream import ARTIFACTS, SOURCES, UpstreamArtifact, archive_digest, tree_digest
from tests.helpers import ROOT
from tools.fetch_upstream import FetchError, ensure


def _archive(folder: Path, name: str, files: dict[str, bytes]) -> None:
    with tarfile.open(folder / name, "w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"top/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _artifact(digest: str) -> UpstreamArtifact:
    return UpstreamArtifact(
        name="demo",
        version="v1",
        url="https://example.invalid/demo.tgz",
        archive="demo.tgz",
        strip_prefix="top",
        content_sha256=digest,
        unpacked="demo-v1",
    )


def _expected_digest(tmp_path: Path, files: dict[str, bytes]) -> str:
    tree = tmp_path / "expected"
    for path, data in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)
    return tree_digest(tree)


FILES = {"Chart.yaml": b"version: v1\n", "templates/a.yaml": b"kind: A\n"}


def test_an_archive_from_the_mirror_is_verified_and_unpacked(tmp_path: Path) -> None:
    mirror, root = tmp_path / "mirror", tmp_path / "project"
    mirror.mkdir()
    root.mkdir()
    _archive(mirror, "demo.tgz", FILES)
    artifact = _artifact(_expected_digest(tmp_path, FILES))
    assert "fetched from mirror" in ensure(artifact, root, mirror)
    assert (root / ".upstream" / "demo-v1" / "templates" / "a.yaml").read_bytes() == b"kind: A\n"
    assert "in place" in ensure(artifact, root, mirror), "a verified tree is not fetched again"


def test_a_tampered_archive_is_refused_and_nothing_is_left_behind(tmp_path: Path) -> None:
    mirror, root = tmp_path / "mirror", tmp_path / "project"
    mirror.mkdir()
    root.mkdir()
    _archive(mirror, "demo.tgz", {**FILES, "templates/a.yaml": b"kind: Evil\n"})
    artifact = _artifact(_expected_digest(tmp_path, FILES))
    with pytest.raises(FetchError, match="does not match the pin"):
        ensure(artifact, root, mirror)
    assert not (root / ".upstream" / "demo-v1").exists()
    assert [p.name for p in (root / ".upstream").iterdir()] == [], "no temporary folder survives"


def test_a_missing_mirror_file_names_the_expected_archive(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    with pytest.raises(FetchError, match=r"demo\.tgz"):
        ensure(_artifact("0" * 64), tmp_path, tmp_path / "mirror")


def test_the_tree_in_place_is_a_modified_copy_then_it_is_replaced(tmp_path: Path) -> None:
    mirror, root = tmp_path / "mirror", tmp_path / "project"
    mirror.mkdir()
    _archive(mirror, "demo.tgz", FILES)
    artifact = _artifact(_expected_digest(tmp_path, FILES))
    ensure(artifact, root, mirror)
    (root / ".upstream" / "demo-v1" / "Chart.yaml").write_text("version: edited\n")
    assert "fetched" in ensure(artifact, root, mirror)
    assert (root / ".upstream" / "demo-v1" / "Chart.yaml").read_text() == "version: v1\n"


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=lambda a: a.name)
def test_the_artifacts_the_stacks_use_match_their_pins(artifact: UpstreamArtifact) -> None:
    # `make test` runs `make upstream` first: the real trees are in place and unmodified.
    assert tree_digest(ROOT / artifact.path) == artifact.content_sha256


def test_pins_are_unique_per_artifact() -> None:
    assert len({a.path for a in ARTIFACTS}) == len(ARTIFACTS)
    assert all(len(a.content_sha256) == 64 for a in ARTIFACTS)


def test_an_archive_has_the_digest_of_its_unpacked_tree(tmp_path: Path) -> None:
    """archive_digest checks a mirrored .tgz in place (gpuOperator.chartPath) against the same pin."""
    files = {"a/b.txt": b"1", "a-b.txt": b"2", "a/c/d.yaml": b"3", "z": b""}
    _archive(tmp_path, "demo.tgz", files)
    assert archive_digest(tmp_path / "demo.tgz", "top") == _expected_digest(tmp_path, files)
    chart = next(artifact for artifact in ARTIFACTS if artifact.name == "gpu-operator-chart")
    with tarfile.open(tmp_path / "chart.tgz", "w:gz") as tar:
        tar.add(ROOT / chart.path, arcname="gpu-operator")
    assert archive_digest(tmp_path / "chart.tgz", "gpu-operator") == chart.content_sha256


# -- source subsets: GitHub's whole tag tarball, only the listed paths kept ---------------------------------
SUBSET_PATHS = ("api", "cmd/tool", "go.mod")
INSIDE = {"api/v1/types.go": b"package v1\n", "cmd/tool/main.go": b"package main\n", "go.mod": b"module x\n"}
#: What a whole repository has besides: siblings whose names start like a listed path, a file under a listed path's
#: parent, a nested vendor tree, docs.
OUTSIDE = {
    "apis/other.go": b"package apis\n",
    "cmd/other/main.go": b"package main\n",
    "go.mod.orig": b"module y\n",
    "go.sum": b"x v1 h1:\n",
    "README.md": b"# x\n",
    "vendor/github.com/other/lib/lib.go": b"package lib\n",
}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _tag_tarball(path: Path, top: str, files: dict[str, bytes]) -> None:
    """A tar.gz shaped like GitHub's tag tarball: a pax global header with the commit, one top folder, folders too."""
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": COMMIT}) as tar:
        folder = tarfile.TarInfo(f"{top}/")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _subset_artifact(digest: str, paths: tuple[str, ...] = SUBSET_PATHS) -> UpstreamArtifact:
    return UpstreamArtifact(
        name="demo-source",
        version="v1.2.3",
        url="https://github.com/example/demo/archive/refs/tags/v1.2.3.tar.gz",
        archive="demo-source-v1.2.3.tar.gz",
        strip_prefix="demo-1.2.3",
        content_sha256=digest,
        unpacked="demo-source-v1.2.3",
        paths=paths,
    )


def _files_under(tree: Path) -> set[str]:
    return {path.relative_to(tree).as_posix() for path in tree.rglob("*") if path.is_file()}


@pytest.fixture
def download(monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """``urlopen`` answered from local files: url -> archive (no network in tests)."""
    served: dict[str, Path] = {}

    def urlopen(url: str, timeout: float) -> io.BufferedReader:
        if url not in served:
            raise OSError(f"no network in tests ({url})")
        return served[url].open("rb")

    monkeypatch.setattr("tools.fetch_upstream.urllib.request.urlopen", urlopen)
    return served


def test_a_tag_tarball_keeps_only_the_listed_paths(tmp_path: Path, download: dict[str, Path]) -> None:
    artifact = _subset_artifact(_expected_digest(tmp_path, INSIDE))
    download[artifact.url] = tmp_path / "tag.tar.gz"
    _tag_tarball(download[artifact.url], artifact.strip_prefix, {**INSIDE, **OUTSIDE})
    root = tmp_path / "project"
    assert f"fetched from {artifact.url}" in ensure(artifact, root, None)
    tree = root / artifact.path
    assert _files_under(tree) == set(INSIDE), "nothing outside api/, cmd/tool/ and go.mod lands"
    assert (tree / "cmd" / "tool" / "main.go").read_bytes() == b"package main\n"
    assert [p.name for p in (root / ".upstream").iterdir()] == [artifact.unpacked], "no download or temp folder left"
    assert archive_digest(download[artifact.url], artifact.strip_prefix, artifact.paths) == artifact.content_sha256


def test_a_mirror_archive_of_the_subset_gives_the_same_tree(tmp_path: Path, download: dict[str, Path]) -> None:
    """The mirror holds only the listed paths already: the same filter keeps all of it, to the same digest."""
    artifact = _subset_artifact(_expected_digest(tmp_path, INSIDE))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _tag_tarball(mirror / artifact.archive, artifact.strip_prefix, INSIDE)
    from_mirror, from_github = tmp_path / "a", tmp_path / "b"
    assert "fetched from mirror" in ensure(artifact, from_mirror, mirror)
    download[artifact.url] = tmp_path / "tag.tar.gz"
    _tag_tarball(download[artifact.url], artifact.strip_prefix, {**INSIDE, **OUTSIDE})
    ensure(artifact, from_github, None)
    assert tree_digest(from_mirror / artifact.path) == tree_digest(from_github / artifact.path)
    assert _files_under(from_mirror / artifact.path) == set(INSIDE)


def test_a_tampered_file_in_the_subset_is_refused_by_name(tmp_path: Path, download: dict[str, Path]) -> None:
    artifact = _subset_artifact(_expected_digest(tmp_path, INSIDE))
    download[artifact.url] = tmp_path / "tag.tar.gz"
    _tag_tarball(download[artifact.url], artifact.strip_prefix, {**INSIDE, **OUTSIDE, "go.mod": b"module evil\n"})
    root = tmp_path / "project"
    with pytest.raises(FetchError) as refused:
        ensure(artifact, root, None)
    message = str(refused.value)
    assert message.startswith("demo-source v1.2.3: the content digest")
    assert "does not match the pin" in message
    assert artifact.url in message, "says where the right archive is"
    assert "set content_sha256" in message and "components.catalog.upstream_facts" in message, "says what to do"
    assert not (root / artifact.path).exists()
    assert list((root / ".upstream").iterdir()) == [], "nothing half-written stays"


def test_a_change_outside_the_listed_paths_does_not_matter(tmp_path: Path, download: dict[str, Path]) -> None:
    """The digest is over the kept paths only: the rest of a repository may differ (it is never written)."""
    artifact = _subset_artifact(_expected_digest(tmp_path, INSIDE))
    download[artifact.url] = tmp_path / "tag.tar.gz"
    _tag_tarball(download[artifact.url], artifact.strip_prefix, {**INSIDE, **OUTSIDE, "README.md": b"changed\n"})
    assert "digest verified" in ensure(artifact, tmp_path / "project", None)


def test_a_listed_path_missing_from_the_archive_is_named(tmp_path: Path, download: dict[str, Path]) -> None:
    artifact = _subset_artifact(_expected_digest(tmp_path, INSIDE), (*SUBSET_PATHS, "pkg/gone"))
    download[artifact.url] = tmp_path / "tag.tar.gz"
    _tag_tarball(download[artifact.url], artifact.strip_prefix, {**INSIDE, **OUTSIDE})
    with pytest.raises(FetchError, match=r"demo-source v1\.2\.3: .* has nothing under demo-1\.2\.3/ at pkg/gone"):
        ensure(artifact, tmp_path / "project", None)
    assert list((tmp_path / "project" / ".upstream").iterdir()) == []


def test_a_failed_download_says_how_to_use_a_mirror(tmp_path: Path, download: dict[str, Path]) -> None:
    with pytest.raises(FetchError, match=r"demo-source: download of .* failed .*UPSTREAM_MIRROR"):
        ensure(_subset_artifact("0" * 64), tmp_path, None)


@pytest.mark.parametrize("artifact", SOURCES, ids=lambda a: a.name)
def test_the_pinned_sources_from_a_whole_tag_tarball_give_their_pins(
    artifact: UpstreamArtifact, tmp_path: Path, download: dict[str, Path]
) -> None:
    """The real pinned trees, repacked as GitHub serves them (plus files outside the paths): the pinned digest.

    `.upstream/` holds what `make upstream` unpacked from the mirror's archives; packing it again under the tag's top
    folder with a repository's other files around it is the download path's input.
    """
    tarball = tmp_path / "tag.tar.gz"
    with tarfile.open(tarball, "w:gz", compresslevel=1, format=tarfile.PAX_FORMAT) as tar:
        tar.add(ROOT / artifact.path, arcname=artifact.strip_prefix)
        for name, data in OUTSIDE.items():
            info = tarfile.TarInfo(f"{artifact.strip_prefix}/zz-not-listed/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert archive_digest(tarball, artifact.strip_prefix) != artifact.content_sha256, "the extra files count"
    assert archive_digest(tarball, artifact.strip_prefix, artifact.paths) == artifact.content_sha256
    download[artifact.url] = tarball
    assert "digest verified" in ensure(artifact, tmp_path / "project", None)
    assert tree_digest(tmp_path / "project" / artifact.path) == artifact.content_sha256


@pytest.mark.parametrize("artifact", SOURCES, ids=lambda a: a.name)
def test_every_source_is_in_place_with_exactly_its_paths(artifact: UpstreamArtifact) -> None:
    tree = ROOT / artifact.path
    assert tree_digest(tree) == artifact.content_sha256, f"{artifact.path}: run `make upstream`"
    for path in artifact.paths:
        assert (tree / path).exists(), f"{artifact.name}: {path} listed but not in {artifact.path}"
    stray = [f for f in _files_under(tree) if artifact.kept_under(f) is None]
    assert stray == [], f"{artifact.path} holds files outside its paths"


def test_a_listed_path_keeps_itself_and_below_never_a_sibling() -> None:
    artifact = _subset_artifact("0" * 64)
    assert artifact.kept_under("api") == "api"
    assert artifact.kept_under("api/v1/types.go") == "api"
    assert artifact.kept_under("apis/other.go") is None
    assert artifact.kept_under("cmd/other/main.go") is None
    assert artifact.kept_under("go.mod.orig") is None
    assert _artifact("0" * 64).kept_under("anything/at/all") == "", "an artifact without paths keeps everything"
