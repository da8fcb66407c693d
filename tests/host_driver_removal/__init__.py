"""Tests of host driver removal (mirrors the package layout)."""
