"""Tests of gpu operator (mirrors the package layout)."""
