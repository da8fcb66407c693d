"""The preview folder is replaced whole, and a file whose text did not change is not rewritten."""

from __future__ import annotations

from pathlib import Path

from preview.run.output_folder import write_files


def test_only_changed_files_are_written_and_stale_ones_go(tmp_path: Path) -> None:
    out = tmp_path / "dev"
    write_files({"same.yaml": "a: 1\n", "changed.yaml": "b: 1\n", "gone.yaml": "c: 1\n"}, out)
    before = {name: (out / name).stat() for name in ("same.yaml", "changed.yaml")}
    write_files({"same.yaml": "a: 1\n", "changed.yaml": "b: 2\n", "new/x.yaml": "d: 1\n"}, out)
    assert (out / "same.yaml").stat().st_ino == before["same.yaml"].st_ino, "an unchanged file is kept"
    assert (out / "same.yaml").stat().st_mtime_ns == before["same.yaml"].st_mtime_ns
    assert (out / "changed.yaml").read_text() == "b: 2\n"
    assert (out / "new" / "x.yaml").read_text() == "d: 1\n"
    assert not (out / "gone.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"], "no staging or retired folder is left"
