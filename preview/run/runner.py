"""Runs the real ``__main__.py`` under mocks and returns what it registered and exported."""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import os
import runpy
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import set_all_config

from components.base.problems import StackConfigError
from components.base.runtime_mode import drain_notices
from components.catalog.names import OFFLINE_ENV
from components.stack.config import PROJECT, parse_stack_config
from preview.run.mocks import PlatformMocks, mocked_engine
from preview.run.registration import SECRET_MASK, Registration
from preview.run.stack_file import StackFile, load_stack_file, offline_dummy

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ProgramRun:
    """The result of one offline run of the program."""

    stack: str
    root: Path = REPO_ROOT
    registrations: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)  # secrets masked
    plain_outputs: dict[str, Any] = field(default_factory=dict)  # for tests and consumers; never written
    secret_output_names: list[str] = field(default_factory=list)
    config_error: StackConfigError | None = None
    notices: list[str] = field(default_factory=list)
    stack_file: StackFile | None = None

    def by_type(self, resource_type: str) -> list[Registration]:
        """Registrations of one resource type, in registration order."""
        return [r for r in self.registrations if r.type == resource_type]

    def one(self, resource_type: str, name: str) -> Registration:
        """The registration of ``name`` of ``resource_type``; KeyError when absent."""
        for registration in self.registrations:
            if registration.type == resource_type and registration.name == name:
                return registration
        raise KeyError(f"{resource_type} {name} was not registered")


def _secret_keys_named_by_config(stack_file: StackFile) -> set[str]:
    """Secret config keys the stack config names (absent ones get offline dummies)."""
    prefix = f"{PROJECT}:"
    raw = {}
    for key, value in stack_file.config.items():
        if key.startswith(prefix):
            try:  # read as the program reads config (components.stack.load): JSON, else the plain string
                raw[key[len(prefix) :]] = json.loads(value)
            except json.JSONDecodeError:
                raw[key[len(prefix) :]] = value
    try:
        return parse_stack_config(raw).secret_keys()
    except StackConfigError:
        return set()


async def _resolve(value: Any, masked: bool) -> tuple[Any, bool]:
    """Resolve Outputs inside ``value``; with ``masked``, secrets become "[secret]"."""
    if isinstance(value, pulumi.Output):
        secret = await value.is_secret()
        inner = await value.future()
        if secret and masked:
            return SECRET_MASK, True
        resolved, nested_secret = await _resolve(inner, masked)
        return resolved, secret or nested_secret
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        any_secret = False
        for key in sorted(value):
            result[key], secret = await _resolve(value[key], masked)
            any_secret = any_secret or secret
        return result, any_secret
    if isinstance(value, list | tuple):
        items = [await _resolve(item, masked) for item in value]
        return [item for item, _ in items], any(secret for _, secret in items)
    return value, False


@functools.cache
def scratch_project(root: Path) -> Path:
    """A folder that mirrors ``root`` entry by entry (symbolic links), with a ``build`` folder of its own.

    Why: the program writes into its project folder (the Kubeflow overlay under ``build/kubeflow/<stack>``, which
    its kustomize Directories then read). A run of an overridden config (a test's variation of a stack) is not the
    project's stack, and writing its overlay there raced with a preview of the real stack reading its own: two
    previews of one tree differed. One mirror per project and process; the process's runs are sequential.
    """
    mirror = Path(tempfile.mkdtemp(prefix="gpu-platform-run-"))
    atexit.register(shutil.rmtree, mirror, True)  # the links and the mirror's own build folder only
    for entry in root.iterdir():
        if entry.name != "build":
            (mirror / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
    return mirror


def run_program(
    stack: str,
    root: Path = REPO_ROOT,
    overrides: dict[str, Any] | None = None,
) -> ProgramRun:
    """Run ``<root>/__main__.py`` for ``stack`` under mocks (a preview: ``is_dry_run()`` is True)."""
    stack_file = load_stack_file(root, stack, overrides)
    config = dict(stack_file.config)
    secret_keys = list(stack_file.secret_keys)
    run = ProgramRun(stack=stack, root=root, stack_file=stack_file)
    for key in sorted(_secret_keys_named_by_config(stack_file)):
        full_key = f"{PROJECT}:{key}"
        if full_key not in config:
            config[full_key] = offline_dummy(full_key)
            secret_keys.append(full_key)
            run.notices.append(
                f"secret {full_key} is not in the stack file; the offline preview uses a dummy "
                f"(pulumi up needs `pulumi config set --secret {key} ...`)"
            )

    previous_mode = os.environ.get(OFFLINE_ENV)
    os.environ[OFFLINE_ENV] = "1"
    drain_notices()
    order: dict[tuple[str, str], int] = {}

    def record_order(args: pulumi.ResourceTransformationArgs) -> None:
        order.setdefault((args.type_, args.name), len(order))
        return None

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        pulumi.runtime.register_stack_transformation(record_order)
        runpy.run_path(str(root / "__main__.py"), run_name="__main__")
        root_resource = pulumi.runtime.get_root_resource()
        outputs: dict[str, Any] = dict(getattr(root_resource, "outputs", None) or {})

        async def collect() -> None:
            for name in sorted(outputs):
                run.outputs[name], secret = await _resolve(outputs[name], masked=True)
                run.plain_outputs[name], _ = await _resolve(outputs[name], masked=False)
                if secret:
                    run.secret_output_names.append(name)

        return pulumi.Output.from_input(asyncio.ensure_future(collect()))

    previous_cwd = Path.cwd()
    with mocked_engine(PlatformMocks(), project=PROJECT, stack=stack) as monitor:
        set_all_config(config, secret_keys=secret_keys)
        # The engine runs a program in its project folder; a config that is not the stack file's runs in a mirror of it.
        os.chdir(root if overrides is None else scratch_project(root))
        try:
            program()
        except StackConfigError as error:
            run.config_error = error
        finally:
            os.chdir(previous_cwd)
            run.notices.extend(drain_notices())
            if previous_mode is None:
                os.environ.pop(OFFLINE_ENV, None)
            else:
                os.environ[OFFLINE_ENV] = previous_mode
    run.registrations = sorted(monitor.registrations, key=lambda r: order.get((r.type, r.name), len(order)))
    return run
