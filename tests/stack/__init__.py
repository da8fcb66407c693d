"""Tests of stack (mirrors the package layout)."""
