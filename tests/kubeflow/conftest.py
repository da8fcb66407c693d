"""The example stacks' Kubeflow Directories, rendered once per test session with the real kustomize.

Rendering the real v1.10.2 tree takes seconds per Directory (about 10 s of CPU for ``platform/``), so
every test that looks at what a stack deploys shares these renders instead of building its own.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from preview.run.runner import ProgramRun, run_program
from tests.kubeflow.kustomize import Obj, kustomize_build

STACKS = ("dev", "prod")
DIRECTORY = "kubernetes:kustomize/v2:Directory"


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
    runs = {stack: run_program(stack) for stack in STACKS}
    jobs = [(stack, name, path) for stack, run in runs.items() for name, path in directory_paths(run).items()]
    with ThreadPoolExecutor(max_workers=2) as pool:  # the machine's two cores; kustomize is mostly single-threaded
        rendered = list(pool.map(lambda job: kustomize_build(job[2]), jobs))
    directories: dict[str, dict[str, list[Obj]]] = {stack: {} for stack in STACKS}
    for (stack, name, _path), objects in zip(jobs, rendered, strict=True):
        directories[stack][name] = objects
    return {stack: StackRender(runs[stack], directories[stack]) for stack in STACKS}
