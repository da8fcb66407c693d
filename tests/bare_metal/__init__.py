"""Tests of bare metal (mirrors the package layout)."""
