"""Awaited GPU Jobs: the smoke test per pool and profile, and the per-node proof of each driver or MIG step."""
