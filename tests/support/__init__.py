"""Test support code."""
