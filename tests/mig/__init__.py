"""Tests of mig (mirrors the package layout)."""
