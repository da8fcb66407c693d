"""Project source files shipped into the cluster in a ConfigMap and mounted where a pod runs them.

The node agent and the proof Job's runner run the project's own standard-library Python on a stock image: their
files travel as ConfigMap keys (which cannot hold ``/``) and come back to their paths through the volume's
``items``. One mapping for both, so the two never spell a path differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pulumi_kubernetes as k8s

from components.catalog.node_agent import AGENT_IMAGE, AGENT_PYTHON

REPO_ROOT = Path(__file__).resolve().parents[2]
CODE_VOLUME = "code"
#: The pure catalog modules every shipped program (the node agent, the proof Job's runner) reads its names, facts
#: and judging rules from: standard library only (the import-linter contracts), shipped beside the program.
SHIPPED_CATALOG: tuple[str, ...] = (
    "components/catalog/gpu_operator_upgrade.py",
    "components/catalog/names.py",
    "components/catalog/node_agent.py",
    "components/catalog/nvidia_driver.py",
    "components/catalog/objects.py",
    "components/catalog/proof.py",
)


def config_map_key(path: str) -> str:
    """ConfigMap keys cannot hold ``/``: ``components/catalog/names.py`` -> ``components.catalog.names.py``."""
    return path.replace("/", ".")


def shipped_sources(paths: Iterable[str]) -> dict[str, str]:
    """The ConfigMap data: each file's text under its key."""
    return {config_map_key(path): (REPO_ROOT / path).read_text() for path in paths}


def shipped_items(paths: Iterable[str]) -> list[k8s.core.v1.KeyToPathArgs]:
    """The volume items that put each key back at its path."""
    return [k8s.core.v1.KeyToPathArgs(key=config_map_key(path), path=path) for path in paths]


def code_volume(config_map: str, paths: Iterable[str]) -> k8s.core.v1.VolumeArgs:
    """The read-only volume that puts the ConfigMap's files back at their paths."""
    return k8s.core.v1.VolumeArgs(
        name=CODE_VOLUME,
        config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(
            name=config_map, default_mode=0o444, items=shipped_items(paths)
        ),
    )


def shipped_container(
    name: str,
    module: str,
    code_dir: str,
    *,
    env: Sequence[k8s.core.v1.EnvVarArgs],
    security_context: k8s.core.v1.SecurityContextArgs,
    resources: k8s.core.v1.ResourceRequirementsArgs,
    mounts: Sequence[k8s.core.v1.VolumeMountArgs] = (),
) -> k8s.core.v1.ContainerArgs:
    """A container that runs ``python -m module`` from the shipped code on the stock Python image
    (``catalog.node_agent.AGENT_IMAGE``), the code mounted read-only at ``code_dir`` after any other ``mounts``."""
    return k8s.core.v1.ContainerArgs(
        name=name,
        image=AGENT_IMAGE,
        command=[AGENT_PYTHON, "-m", module],
        working_dir=code_dir,
        env=list(env),
        security_context=security_context,
        resources=resources,
        volume_mounts=[*mounts, k8s.core.v1.VolumeMountArgs(name=CODE_VOLUME, mount_path=code_dir, read_only=True)],
    )
