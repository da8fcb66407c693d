"""Tests of smoke test (mirrors the package layout)."""
