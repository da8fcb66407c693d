"""Tests of the proof (mirrors the package layout)."""
