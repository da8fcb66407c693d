"""``make upstream``: archives from a mirror, checked against content pins, moved into place whole."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from components.catalog.upstream import ARTIFACTS, UpstreamArtifact, archive_digest, tree_digest
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
