"""Project source files shipped into the cluster in a ConfigMap and mounted where a pod runs them.

The node agent and the proof checker run the project's own standard-library Python on a stock image: their
files travel as ConfigMap keys (which cannot hold ``/``) and come back to their paths through the volume's
``items``. One mapping for both, so the two never spell a path differently.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pulumi_kubernetes as k8s

REPO_ROOT = Path(__file__).resolve().parents[2]


def config_map_key(path: str) -> str:
    """ConfigMap keys cannot hold ``/``: ``components/catalog/names.py`` -> ``components.catalog.names.py``."""
    return path.replace("/", ".")


def shipped_sources(paths: Iterable[str]) -> dict[str, str]:
    """The ConfigMap data: each file's text under its key."""
    return {config_map_key(path): (REPO_ROOT / path).read_text() for path in paths}


def shipped_items(paths: Iterable[str]) -> list[k8s.core.v1.KeyToPathArgs]:
    """The volume items that put each key back at its path."""
    return [k8s.core.v1.KeyToPathArgs(key=config_map_key(path), path=path) for path in paths]
