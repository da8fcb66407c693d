"""Tests of yandex (mirrors the package layout)."""
