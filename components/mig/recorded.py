"""The recorded MIG plan: the layouts a stack's pools planned from demand got last time.

Layouts from demand must not re-partition GPUs on every change of ``mig.demand``: re-partitioning a
GPU evicts its workloads. The planner therefore takes the layouts in place as its stability input,
and the program needs to know them before any resource exists (at plan time, with no cluster to
ask). They are kept in ``mig-plans/<stack>.yaml`` in the project folder, like a lock file:
the preview writes the plan it computed to ``build/preview/<stack>/mig-plan.yaml`` and says when it
differs from the recorded one; the reviewer commits it with the change, so ``pulumi up`` plans the
same layouts the reviewer saw, and the next change is planned against them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from components.base.config_model import ConfigModel, problems_from_validation_error
from components.base.problems import Problem, join_path
from components.catalog import mig as catalog

RECORD_VERSION = 1


def record_file_name(stack: str) -> str:
    """Where the stack's recorded plan lives, relative to the project folder (not ``Pulumi.*.yaml``: that is a stack file)."""
    return f"mig-plans/{stack}.yaml"


class RecordedPool(ConfigModel):
    """One pool's layouts as planned: per GPU index (null: MIG disabled), the same on every node."""

    gpu_model: str
    nodes: int = Field(ge=0)
    gpus: list[dict[str, int] | None]


class RecordedPlan(ConfigModel):
    """Every pool planned from demand, by pool name."""

    version: Literal[1]
    pools: dict[str, RecordedPool] = Field(default_factory=dict)

    def layouts(self, pool: str, model: str, gpus_per_node: int) -> tuple[dict[str, int] | None, ...] | None:
        """The recorded layouts of ``pool`` if they still describe it (same model and GPU count), else None."""
        recorded = self.pools.get(pool)
        if recorded is None or recorded.gpu_model != model or len(recorded.gpus) != gpus_per_node:
            return None
        return tuple(dict(layout) if layout else None for layout in recorded.gpus)


def parse_recorded_plan(text: str, file_name: str) -> tuple[RecordedPlan | None, list[Problem]]:
    """The plan in ``text``; problems are keyed by the file name and the path inside it."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or type(error).__name__
        return None, [Problem(f"{file_name}{where}", f"not valid YAML: {reason}")]
    if not isinstance(document, dict):
        return None, [Problem(file_name, f"must be a mapping with version and pools, got {type(document).__name__}")]
    try:
        recorded = RecordedPlan.model_validate(document)
    except ValidationError as error:
        return None, problems_from_validation_error(error, RecordedPlan, prefix=(file_name,))
    problems = list(_layout_problems(recorded, file_name))
    return (None, problems) if problems else (recorded, [])


def _layout_problems(recorded: RecordedPlan, file_name: str) -> Iterator[Problem]:
    """Every recorded layout must fit its GPU: a hand-edited file is refused, not planned around."""
    for name, pool in recorded.pools.items():
        for index, layout in enumerate(pool.gpus):
            if not layout:
                continue
            try:
                catalog.place(pool.gpu_model, layout)
            except catalog.MigError as error:
                yield Problem(join_path(file_name, "pools", name, "gpus", index), f"{pool.gpu_model}: {error}")


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
