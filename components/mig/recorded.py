"""The recorded MIG plan: the layouts a stack's pools planned from demand got last time.

Layouts from demand must not re-partition GPUs on every change of ``mig.demand``: re-partitioning a
GPU evicts its workloads. The planner therefore takes the layouts in place as its stability input,
and the program needs to know them before any resource exists (at plan time, with no cluster to
ask). They are kept in ``mig-plans/<stack>.yaml`` in the project folder, like a lock file:
the preview writes the plan it computed to ``build/preview/<stack>/mig-plan.yaml`` and says when it
differs from the recorded one; the reviewer commits it with the change, so ``pulumi up`` plans the
same layouts the reviewer saw, and the next change is planned against them.

The file is read strictly (``components.base.strict_yaml``: a pool written twice is refused, where
YAML would keep one silently), and every problem is reported at ``mig-plans/<stack>.yaml:<line>``
with the key path the user wrote. A record is checked against the pool it names (``in_place``): a
record for another GPU model, or with a GPU count no node of the pool can have, is refused; a node
whose GPU count changed to another possible count keeps the layouts of the GPU indexes it still has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError

from components.base import strict_yaml
from components.base.config_model import ConfigModel, problems_from_validation_error
from components.base.problems import Problem, join_path
from components.catalog import mig as catalog
from components.catalog.pools import GpuPool

RECORD_VERSION = 1

Layout = dict[str, int] | None


def record_file_name(stack: str) -> str:
    """Where the stack's recorded plan lives, relative to the project folder (not ``Pulumi.*.yaml``: that is a stack file)."""
    return f"mig-plans/{stack}.yaml"


class RecordedPool(ConfigModel):
    """One pool's layouts as planned: per GPU index (null: MIG disabled), the same on every node."""

    gpu_model: str
    nodes: int = Field(ge=0)
    gpus: list[dict[str, int] | None]


class RecordedPlan(ConfigModel):
    """Every pool planned from demand, by pool name, and where in the file each key was written."""

    version: Literal[1]
    pools: dict[str, RecordedPool] = Field(default_factory=dict)
    _file_name: str = PrivateAttr(default="")
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def where(self, *path: str | int) -> str:
        """``mig-plans/<stack>.yaml:<line>`` of ``path`` (of its nearest written parent), for a Problem."""
        return _where(self._file_name, self._lines, join_path(*path))

    def in_place(self, pool: GpuPool) -> tuple[tuple[Layout, ...] | None, list[Problem]]:
        """What the record says each GPU index of ``pool``'s nodes holds now, or None when nothing is recorded.

        A record for another GPU model does not describe the pool, nor one with a GPU count no node of the
        pool can have (e.g. 9 layouts for an H100 host): both are refused at their line, not planned
        around. A node whose GPU count changed to another count it can have keeps the layouts of the GPU
        indexes it still has; GPUs it gained are taken as MIG-disabled, like an unrecorded GPU
        (``catalog.mig.pool_planner.in_place`` says why).
        """
        recorded = self.pools.get(pool.name)
        if recorded is None:
            return None, []
        key = ("pools", pool.name)
        if recorded.gpu_model != pool.model.key:
            return None, [
                Problem(
                    self.where(*key, "gpuModel"),
                    f"{join_path(*key, 'gpuModel')}: {recorded.gpu_model} is recorded, but {pool.config_path} has "
                    f"{pool.model.key} GPUs: the record does not describe its nodes; delete {join_path(*key)} "
                    "from the file (the pool's GPUs are then taken as MIG-disabled) and record the new plan",
                )
            ]
        count, gpus, possible_counts = len(recorded.gpus), pool.gpus_per_node, pool.gpu_counts
        if count != gpus and possible_counts is not None and count not in possible_counts:
            possible = ", ".join(map(str, possible_counts))
            return None, [
                Problem(
                    self.where(*key, "gpus"),
                    f"{join_path(*key, 'gpus')}: {count} GPU layouts recorded, but a node of {pool.config_path} "
                    f"({pool.model.key}) has {gpus} and cannot have {count} (possible: {possible}): the record "
                    f"does not describe its nodes; give {join_path(*key, 'gpus')} one entry per GPU",
                )
            ]
        layouts = tuple(dict(layout) if layout else None for layout in recorded.gpus[:gpus])
        return layouts + (None,) * (gpus - len(layouts)), []


def _where(file_name: str, lines: Mapping[str, int], path: str) -> str:
    """``file:line`` of ``path``, or of the longest written key path it starts with (a missing key: its parent)."""
    best = ""
    for written in lines:
        if (path == written or path.startswith((f"{written}.", f"{written}["))) and len(written) > len(best):
            best = written
    return f"{file_name}:{lines.get(best, 1)}"


def parse_recorded_plan(text: str, file_name: str) -> tuple[RecordedPlan | None, list[Problem]]:
    """The plan in ``text``; problems are keyed ``<file_name>:<line>`` and name the key path inside it."""
    try:
        document, written = strict_yaml.load_with_lines(text)
    except strict_yaml.StrictYamlError as error:
        key = strict_yaml.key_path_at(text, error.line) if error.line else None
        what = f"{join_path(*key)}: {error.message}" if key else f"not a recorded MIG plan: {error.message}"
        return None, [Problem(f"{file_name}:{error.line or 1}", what)]
    lines = {join_path(*path): line for path, line in written.items()}
    if not isinstance(document, dict):
        shown = type(document).__name__ if document is not None else "an empty file"
        return None, [Problem(f"{file_name}:1", f"must be a mapping with version and pools, got {shown}")]
    try:
        recorded = RecordedPlan.model_validate(document)
    except ValidationError as error:
        return None, [
            Problem(_where(file_name, lines, problem.path), f"{problem.path}: {problem.message}")
            for problem in problems_from_validation_error(error, RecordedPlan)
        ]
    recorded._file_name = file_name
    recorded._lines = lines
    problems = list(_layout_problems(recorded))
    return (None, problems) if problems else (recorded, [])


def _layout_problems(recorded: RecordedPlan) -> Iterator[Problem]:
    """Every recorded layout must fit its GPU: a hand-edited file is refused, not planned around."""
    for name, pool in recorded.pools.items():
        for index, layout in enumerate(pool.gpus):
            if not layout:
                continue
            try:
                catalog.place(pool.gpu_model, layout)
            except catalog.MigError as error:  # the catalog's message names the model already
                path = ("pools", name, "gpus", index)
                yield Problem(recorded.where(*path), f"{join_path(*path)}: {error}")


def render_recorded_plan(stack: str, pools: Sequence[Mapping[str, Any]]) -> str:
    """The file to record: pools as the ``mig.layoutsFromDemand`` output lists them (sorted, stable)."""
    document = {
        "version": RECORD_VERSION,
        "pools": {
            pool["pool"]: {"gpuModel": pool["gpuModel"], "nodes": pool["nodes"], "gpus": pool["gpuLayouts"]}
            for pool in sorted(pools, key=lambda p: str(p["pool"]))
        },
    }
    header = (
        f"# The MIG layouts stack {stack} planned from demand. Written by the preview "
        f"(build/preview/{stack}/mig-plan.yaml);\n# commit it with the change, so the next plan keeps these "
        "GPUs as they are where it can (docs/mig.md).\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
