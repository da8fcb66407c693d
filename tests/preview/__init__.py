"""Tests of preview (mirrors the package layout)."""
