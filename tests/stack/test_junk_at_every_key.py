"""No input reaches an uncaught exception: every config key of both stacks fed a 0 byte, a 100,000-character string,
a value of the wrong type and an empty value is accepted or refused at that key, never a traceback.

The keys are every leaf of both stack files' surface (``tests/stack/test_config_surface.py``: each key a stack
sets and each key the sections it has could set). A refusal names the key (or a key below it), and names no key
the mutated file does not have, except to say that one is required. A value the stack accepts runs the whole
program under mocks (``preview.run.runner``) once per key kind, which must register its resources without an
exception either. The three crashes of issue #39 are kept as tests of their own, through the preview's entry point.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.base.merge import spells_out
from components.base.problems import Problem, StackConfigError, join_path
from preview.__main__ import preview_stack_guarded
from tests.helpers import ROOT, as_overrides, plan_raw, set_path, stack_raw
from tests.stack.test_config_surface import STACKS, SURFACE

#: The four junk values: (name, the value written at a key that holds a scalar, at one that holds a collection).
JUNK: dict[str, tuple[Any, Any]] = {
    "a 0 byte": ("gpu\x00platform", ["gpu\x00platform"]),
    "100,000 characters": ("a" * 100_000, ["a" * 100_000]),
    "a wrong type": ({"wrong": ["type"]}, "wrong type"),
    "an empty value": ("", ""),
}


#: Each stack file's config as written (read once; every mutation works on a copy).
WRITTEN = {stack: stack_raw(stack, expand_defaults=False) for stack in STACKS}


def _collection(stack: str, path: tuple[Any, ...]) -> bool:
    node: Any = WRITTEN[stack]
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return isinstance(node, dict | list)


def _outcome(stack: str, path: tuple[Any, ...], value: Any) -> tuple[dict[str, Any], list[Problem] | None]:
    raw = set_path(WRITTEN[stack], path, value)  # a copy
    try:
        plan_raw(raw)
    except StackConfigError as error:
        return raw, list(error.problems)
    return raw, None  # any other exception fails the test with its traceback: that is the bug


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("junk", list(JUNK))
def test_junk_at_every_key_is_accepted_or_refused_at_that_key(stack: str, junk: str) -> None:
    wrong: list[str] = []
    accepted: list[str] = []
    for leaf_stack, path in SURFACE:
        if leaf_stack != stack:
            continue
        scalar, collection = JUNK[junk]
        value = collection if _collection(stack, path) else scalar
        raw, problems = _outcome(stack, path, value)
        key = join_path(*path)
        if problems is None:
            accepted.append(key)
            continue
        parent, _, last = key.rpartition(".")
        if not any(
            p.path == key or p.path.startswith((f"{key}.", f"{key}[")) or (p.path == parent and last in p.message)
            for p in problems
        ):  # at the key, below it, or at the block whose rule it breaks (``mig``: "exactly one of layout, custom")
            wrong.append(f"{key}: refused, but not at the key: {problems}")
        absent = [
            p
            for p in problems
            if not spells_out(raw, p.path)
            and not p.message.startswith("is required")
            and f"set {p.path}" not in p.message
        ]
        if absent:
            wrong.append(f"{key}: refusals name keys the file does not have: {absent}")
    assert wrong == [], "\n".join(wrong)
    # Only free text takes a long string (what it is written to bounds it nowhere near); nothing takes a 0 byte.
    if junk == "a 0 byte":
        assert accepted == []
    if junk == "a wrong type":
        assert accepted == [], accepted


#: Keys that take any text, with a long value: the whole program must run with it.
FREE_TEXT = {"dev": ("environment", "owner"), "prod": ("observability", "dashboards", "folder")}


@pytest.mark.parametrize("stack", STACKS)
def test_a_long_free_text_runs_the_whole_program(stack: str) -> None:
    from preview.run.runner import run_program

    raw = set_path(stack_raw(stack, expand_defaults=False), FREE_TEXT[stack], "a" * 100_000)
    plan_raw(raw)
    run = run_program(stack, overrides=as_overrides(raw))
    assert run.config_error is None, run.config_error
    assert run.registrations


# --------------------------------------------------------------------------------------------------------
# The three crashes of issue #39, through the preview's entry point: each is now a refusal that names the key.


def _preview(tmp_path: Path, stack: str, edit: Any) -> tuple[int, str]:
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    edit(document["config"])
    root = tmp_path / "project"
    root.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "policies", ".upstream"):
        (root / name).symlink_to(ROOT / name)
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = preview_stack_guarded(stack, root / "out", True, root)
    return code, out.getvalue() + err.getvalue()


def test_a_custom_mig_layout_of_zero_counts_is_refused_at_its_key(tmp_path: Path) -> None:
    def edit(config: dict[str, Any]) -> None:
        config["gpu-platform:nodeGroups"]["a100"]["mig"] = {"custom": {"1g.10gb": 0}}
        del config["gpu-platform:kubeflow"]["profiles"][0]["resourceQuota"]["requests.nvidia.com/mig-1g.10gb"]

    code, output = _preview(tmp_path, "dev", edit)
    assert code == 2, output
    assert "Traceback" not in output and "StopIteration" not in output, output
    assert "  nodeGroups.a100.mig.custom: every count is 0 (mig-parted MigConfig.AssertValidFormat" in output, output


def test_a_chart_path_longer_than_the_file_system_allows_is_refused_at_its_key(tmp_path: Path) -> None:
    code, output = _preview(
        tmp_path, "prod", lambda config: config["gpu-platform:gpuOperator"].update(chartPath="x" * 300)
    )
    assert code == 2, output
    assert "OSError" not in output and "internal error" not in output, output
    assert "  gpuOperator.chartPath: 'xxxx" in output and "NAME_MAX (255 bytes)" in output, output


def test_a_containerd_config_with_a_0_byte_is_refused_at_its_key(tmp_path: Path) -> None:
    def edit(config: dict[str, Any]) -> None:
        config["gpu-platform:bareMetal"]["hostPreparation"]["containerdConfig"] = "/etc/containerd/config\x00.toml"

    code, output = _preview(tmp_path, "prod", edit)
    assert code == 2, output
    assert "HostPrepInputError" not in output and "internal error" not in output, output
    assert "  bareMetal.hostPreparation.containerdConfig: holds the control character '\\x00'" in output, output


def test_the_legal_all_enabled_layout_previews(tmp_path: Path) -> None:
    """MIG on without instances (NVIDIA's all-enabled): the pool advertises nothing, and the outputs say so."""

    def edit(config: dict[str, Any]) -> None:
        config["gpu-platform:nodeGroups"]["a100"]["mig"] = {"layout": "all-enabled"}
        del config["gpu-platform:kubeflow"]["profiles"][0]["resourceQuota"]["requests.nvidia.com/mig-1g.10gb"]

    code, output = _preview(tmp_path, "dev", edit)
    assert code in (0, 3), output
    outputs = yaml.safe_load((tmp_path / "project" / "out" / "dev" / "outputs.json").read_text())
    assert outputs["gpuPools"]["a100"]["podResources"] is None
    assert outputs["gpuPools"]["v100"]["podResources"] == {"limits": {"nvidia.com/gpu": 1}}


# --------------------------------------------------------------------------------------------------------
# The catch-all: a check or a planning step that raises instead of explaining is still a refusal at a key.


def test_a_check_that_raises_is_reported_at_the_key_whose_value_it_quotes(monkeypatch: pytest.MonkeyPatch) -> None:
    import components.gpu_operator.config as operator_config

    def raises(path: Path, version: str) -> str | None:
        raise OSError(36, "File name too long", str(path))

    monkeypatch.setattr(operator_config, "chart_path_problem", raises)
    raw = set_path(stack_raw("prod"), "gpuOperator.chartPath", "charts/gpu-operator-v26.7.0.tgz")
    with pytest.raises(StackConfigError) as refused:
        plan_raw(raw)
    (problem,) = refused.value.problems
    assert problem.path == "gpuOperator.chartPath"
    assert problem.message.startswith("could not be checked (OSError: [Errno 36] File name too long")


def test_a_planning_step_that_raises_is_reported_at_the_section_it_was_planning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import components.stack.plan as plan_module

    def raises(config: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(plan_module, "build_values", raises)
    with pytest.raises(StackConfigError) as refused:
        plan_raw(stack_raw("dev"))
    (problem,) = refused.value.problems
    assert problem.path == "gpuOperator"
    assert "could not be checked (ZeroDivisionError: division by zero)" in problem.message


def test_an_inherited_value_a_check_chokes_on_is_reported_where_the_file_writes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import components.yandex.config as yandex_config

    def raises(value: str) -> str | None:
        raise RuntimeError(f"cannot read {value}")

    monkeypatch.setattr(yandex_config, "yandex_id_problem", raises)
    with pytest.raises(StackConfigError) as refused:
        plan_raw(stack_raw("dev", expand_defaults=False))
    paths = {problem.path for problem in refused.value.problems}
    assert "nodeGroupDefaults.location.subnetId" in paths, paths
