"""Real runs of the stacks with their renders, shared by the preview tests (each stack rendered once per session).

The stacks' own ``kubeflow.manifestsPath`` may name a checkout that is not there; these runs point it
at the pinned kubeflow/manifests tree in ``.upstream/`` (``make upstream``), so the Directories render
the real upstream with the real kustomize.
"""

from __future__ import annotations

import copy
import functools
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from components.catalog.upstream import KUBEFLOW_MANIFESTS
from preview.render.rendered import Rendered, render_program
from preview.run.output_folder import EXIT_MANDATORY_VIOLATION, REPORT_NAME
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT

KUBEFLOW_KEY = "gpu-platform:kubeflow"
OPERATOR_KEY = "gpu-platform:gpuOperator"


def stack_config(stack: str) -> dict[str, Any]:
    """The committed ``config`` block of ``Pulumi.<stack>.yaml``."""
    config: dict[str, Any] = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return config


def with_pinned_kubeflow(stack: str) -> dict[str, Any]:
    """Overrides that point the stack's Kubeflow checkout at the pinned tree."""
    kubeflow = copy.deepcopy(stack_config(stack)[KUBEFLOW_KEY])
    kubeflow["manifestsPath"] = KUBEFLOW_MANIFESTS.path
    return {KUBEFLOW_KEY: kubeflow}


@functools.cache
def real_stack(stack: str) -> tuple[ProgramRun, Rendered]:
    """The real program for ``stack`` (Kubeflow on the pinned tree) and what it renders."""
    run = run_program(stack, overrides=with_pinned_kubeflow(stack))
    assert run.config_error is None, run.config_error
    return run, render_program(run)


def project_copy(tmp_path: Path, stack: str, config: dict[str, Any], policy_config: Any = None) -> Path:
    """A project folder with the program and one stack file holding ``config`` (and a policy config)."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    for name in ("__main__.py", "Pulumi.yaml"):
        shutil.copy(ROOT / name, project / name)
    (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    if policy_config is not None:
        (project / "policies" / "config").mkdir(parents=True)
        (project / "policies" / "config" / f"{stack}.json").write_text(json.dumps(policy_config))
    return project


def expected_exit(out_dir: Path) -> int:
    """The exit code the preview owes for the report it wrote: 3 with a mandatory finding, else 0."""
    report = json.loads((out_dir / REPORT_NAME).read_text())
    return EXIT_MANDATORY_VIOLATION if any(entry["enforcement"] == "mandatory" for entry in report) else 0
