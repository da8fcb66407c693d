"""The example stacks' Kubeflow Directories, rendered once per test session with the real kustomize.

Rendering the real v1.10.2 tree takes seconds per Directory (about 10 s of CPU for ``platform/``), so
every test that looks at what a stack deploys shares these renders instead of building its own. They
are the preview's own renders (``preview.render.rendered``): ``kubectl kustomize <path>`` of each
registered path, read from the render cache when the previews of this session (or an earlier one)
already ran it with the same tool over the same files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from components.catalog.names import KUSTOMIZE_DIRECTORY_TYPE as DIRECTORY
from preview.render.rendered import render_program
from preview.run.runner import ProgramRun, run_program
from tests.kubeflow.kustomize import Obj

STACKS = ("dev", "prod")


@dataclass(frozen=True)
class StackRender:
    """One stack's offline run and the real render of every Directory it registered."""

    run: ProgramRun
    directories: dict[str, list[Obj]]
    """Directory resource name -> the objects kustomize renders from its path."""

    @property
    def objects(self) -> list[Obj]:
        """Every object of every Directory, in registration order."""
        return [obj for objects in self.directories.values() for obj in objects]


def directory_paths(run: ProgramRun) -> dict[str, Path]:
    """Directory resource name -> the path the program registered (relative to the project)."""
    return {r.name: run.root / str(r.inputs["directory"]) for r in run.by_type(DIRECTORY)}


@pytest.fixture(scope="session")
def stack_renders() -> dict[str, StackRender]:
    """dev and prod: the program's registrations and the kustomize render of each registered Directory."""
    renders = {}
    for stack in STACKS:
        run = run_program(stack)
        directories: dict[str, list[Obj]] = {}
        for render in render_program(run).renders:
            if render.origin.type != DIRECTORY:
                continue
            assert render.problem is None, f"{render.command}: {render.problem}"
            directories[render.origin.name] = [obj.manifest for obj in render.objects]
        assert set(directories) == set(directory_paths(run)), "every registered Directory is rendered"
        renders[stack] = StackRender(run, directories)
    return renders
