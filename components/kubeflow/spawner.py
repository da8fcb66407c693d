"""The notebook spawner's config: upstream's ``spawner_ui_config.yaml`` with the fleet's MIG resources and pools.

kustomize cannot edit inside a ConfigMap value (the file is one string), so the overlay ships the whole
file through a ``configMapGenerator`` with ``behavior: merge`` over upstream's generator. The file is
upstream's own text from the pinned tree, changed in two places only and otherwise byte for byte (its
comments too): the MIG resources the fleet advertises are inserted after upstream's ``nvidia.com/gpu``
vendor, and ``affinityConfig.options`` gets one node-affinity option per GPU pool. Each edit must find its
anchor exactly once (``SPAWNER_*_TEXT``), and the result is parsed back and compared with upstream's
parsed file, so a changed upstream file fails loudly instead of being half-edited.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from components.base import yaml_text
from components.catalog.kubeflow.v1_10_2.spawner import (
    SPAWNER_AFFINITY_OPTIONS_TEXT,
    SPAWNER_CONFIG_KEY,
    SPAWNER_CONFIG_PATH,
    SPAWNER_NVIDIA_VENDOR_TEXT,
)
from components.kubeflow.gpus import GpuFleet, spawner_affinity_options, spawner_vendors


class SpawnerConfigError(RuntimeError):
    """Upstream's spawner config no longer has the shape the edit relies on (a changed pinned tree)."""


def read_upstream(manifests_path: str | Path) -> str | None:
    """Upstream's spawner config text from the tree, None when the tree is not there (the checkout check says so)."""
    path = Path(manifests_path) / SPAWNER_CONFIG_PATH
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise SpawnerConfigError(f"upstream {SPAWNER_CONFIG_KEY} no longer has exactly one {old.strip()!r}")
    return text.replace(old, new)


def spawner_config(upstream: str, fleet: GpuFleet) -> str:
    """Upstream's text with the fleet's MIG vendors and pool affinity options; upstream's text if there are none."""
    vendors = spawner_vendors(fleet)
    options = spawner_affinity_options(fleet)
    text = upstream
    if vendors:
        added = "".join(
            f"      - limitsKey: {_quoted(v['limitsKey'])}\n        uiName: {_quoted(v['uiName'])}\n" for v in vendors
        )
        text = _replace_once(text, SPAWNER_NVIDIA_VENDOR_TEXT, SPAWNER_NVIDIA_VENDOR_TEXT + added)
    if options:
        block = yaml_text.dump(options, sort_keys=False, default_flow_style=False, width=4096)
        indented = "".join(f"      {line}\n" for line in block.splitlines())
        comment = SPAWNER_AFFINITY_OPTIONS_TEXT.splitlines(keepends=True)[0]
        text = _replace_once(text, SPAWNER_AFFINITY_OPTIONS_TEXT, f"{comment}    options:\n{indented}")
    _check(upstream, text, vendors, options)
    return text


def _check(upstream: str, text: str, vendors: list[dict[str, str]], options: list[dict[str, Any]]) -> None:
    """The edited file parses to upstream's, plus exactly the added vendors and options."""
    expected: dict[str, Any] = copy.deepcopy(yaml_text.load(upstream))
    defaults = expected["spawnerFormDefaults"]
    listed = defaults["gpus"]["value"]["vendors"]
    at = next(i for i, v in enumerate(listed) if v["limitsKey"] == "nvidia.com/gpu") + 1
    listed[at:at] = vendors
    if options:
        defaults["affinityConfig"]["options"] = options
    if yaml_text.load(text) != expected:
        raise SpawnerConfigError(f"the edited {SPAWNER_CONFIG_KEY} does not parse to upstream's plus the additions")
