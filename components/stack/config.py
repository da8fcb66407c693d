"""The typed model of a whole stack, read from ``Pulumi.<stack>.yaml``.

``load_stack_config()`` is the only place that reads program config. It validates everything that
needs no cloud before a single resource is registered; an invalid stack raises
``StackConfigError`` listing every problem with its config key path, the bad value and what is
allowed. Unknown keys are errors at every level, top level included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pulumi
from pydantic import Field, ValidationError

from components.bare_metal.config import BareMetalConfig
from components.catalog.drivers import CudaCheckMode, CudaVersionError, minimum_driver
from components.cluster.config import ClusterConfig
from components.base.config_model import ConfigModel, Problem, StackConfigError, join_path, problems_from_validation_error
from components.gpu_operator.config import GpuOperatorConfig
from components.host_driver_removal.config import HostDriverRemovalConfig
from components.kubeflow.config import KubeflowConfig
from components.mig.config import MigSettings
from components.yandex.config import NodeGroupConfig, node_group_name_problem
from components.smoke_test.config import SmokeTestConfig

PROJECT = "gpu-platform"


class EnvironmentConfig(ConfigModel):
    """What kind of stack this is; policies are stricter for production."""

    name: str = Field(min_length=1)
    production: bool = False
    owner: str | None = None


class CudaConfig(ConfigModel):
    """The CUDA level the stack's workloads are built with (their container images' CUDA)."""

    version: str
    check: CudaCheckMode = CudaCheckMode.STRICT

    def problems(self, path: str) -> Iterator[Problem]:
        """The CUDA version must be one the catalog knows a driver minimum for."""
        try:
            minimum_driver(self.version, self.check)
        except (CudaVersionError, ValueError) as error:
            yield Problem(join_path(path, "version"), str(error))


class StackConfig(ConfigModel):
    """Every program setting of one stack. Each key is one top-level ``gpu-platform:<key>``."""

    environment: EnvironmentConfig
    cluster: ClusterConfig
    cuda: CudaConfig
    node_groups: dict[str, NodeGroupConfig] = Field(default_factory=dict)
    bare_metal: BareMetalConfig | None = None
    gpu_operator: GpuOperatorConfig = GpuOperatorConfig()
    host_driver_removal: HostDriverRemovalConfig = HostDriverRemovalConfig()
    kubeflow: KubeflowConfig | None = None
    mig: MigSettings = MigSettings()
    smoke_test: SmokeTestConfig = SmokeTestConfig()

    def secret_keys(self) -> set[str]:
        """Config keys that hold secrets (read with ``require_secret``), named by this config."""
        keys: set[str] = set()
        if self.cluster.bare_metal is not None:
            keys.add(self.cluster.bare_metal.kubeconfig_secret)
        if self.kubeflow is not None and self.kubeflow.enabled:
            keys |= self.kubeflow.secret_keys()
        if self.bare_metal is not None:
            keys |= self.bare_metal.secret_keys()
        return keys

    def problems(self) -> Iterator[Problem]:
        """Every semantic problem of the stack, each with its key path."""
        yield from self.cluster.problems("cluster")
        yield from self.cuda.problems("cuda")
        if self.node_groups and self.cluster.kind != "yandex":
            yield Problem("nodeGroups", f"Yandex node groups need cluster.kind yandex, not {self.cluster.kind}")
        if self.cluster.kind == "bare-metal" and self.bare_metal is None:
            yield Problem("bareMetal", "is required when cluster.kind is bare-metal (the nodes and how to reach them)")
        if self.cluster.kind != "bare-metal" and self.bare_metal is not None:
            yield Problem("bareMetal", f"must not be set when cluster.kind is {self.cluster.kind}")
        if self.bare_metal is not None:
            yield from self.bare_metal.problems("bareMetal")
        for name, group in self.node_groups.items():
            path = join_path("nodeGroups", name)
            name_problem = node_group_name_problem(name)
            if name_problem:
                yield Problem(path, name_problem)
            yield from group.problems(path)
        yield from self.gpu_operator.problems("gpuOperator")
        if self.kubeflow is not None and self.kubeflow.enabled:
            yield from self.kubeflow.problems("kubeflow")

    def fleet_problems(self) -> Iterator[Problem]:
        """Checks across sections; they assume each section is valid on its own."""
        from components.gpu_operator.values import driver_problems, extra_values_problems
        from components.mig.plan import mig_problems

        yield from driver_problems(self)
        yield from extra_values_problems(self.gpu_operator)
        yield from mig_problems(self)


def top_level_keys() -> list[str]:
    """The config keys of the stack file, with their YAML (camelCase) names."""
    return sorted((field.alias or name) for name, field in StackConfig.model_fields.items())


def parse_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate a plain mapping of top-level keys (``{"cluster": {...}, ...}``) into a StackConfig."""
    try:
        stack = StackConfig.model_validate(raw)
    except ValidationError as error:
        raise StackConfigError(problems_from_validation_error(error, StackConfig)) from None
    problems = list(stack.problems())
    if not problems:
        problems = list(stack.fleet_problems())
    if problems:
        raise StackConfigError(problems)
    return stack


def _configured_project_keys() -> dict[str, str]:
    """All ``gpu-platform:*`` keys the engine (or the offline preview) passed, as raw strings."""
    values: dict[str, Any] = dict(pulumi.runtime.config.get_config_env())
    values.update(pulumi.runtime.config.CONFIG.get())
    prefix = f"{PROJECT}:"
    return {key[len(prefix) :]: value for key, value in values.items() if key.startswith(prefix)}


def _is_secret_key(key: str) -> bool:
    return bool(pulumi.runtime.config.is_config_secret(f"{PROJECT}:{key}"))


def load_stack_config() -> StackConfig:
    """Read and validate the stack's program config.

    Secret values (kubeconfigs, password hashes, SSH keys) live in their own keys, read later with
    ``require_secret``; the model names those keys, so they are not mistaken for unknown keys.
    """
    configured = _configured_project_keys()
    known = set(top_level_keys())
    raw: dict[str, Any] = {}
    for key in sorted(known & set(configured)):
        text = configured[key]
        try:
            raw[key] = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError:
            raw[key] = text  # a plain string; pydantic reports it against the expected shape
    problems: list[Problem] = []
    stack: StackConfig | None = None
    try:
        stack = parse_stack_config(raw)
    except StackConfigError as error:
        problems.extend(error.problems)
    # Before the model parses we cannot know which secret keys it names: skip keys the engine
    # marks secret then, and report them once the model is known.
    secret_keys = stack.secret_keys() if stack else {key for key in configured if _is_secret_key(key)}
    allowed = ", ".join(sorted(known))
    problems.extend(
        Problem(key, f"unknown config key; allowed: {allowed} (and the secret keys the config names)")
        for key in sorted(configured)
        if key not in known and key not in secret_keys
    )
    if problems or stack is None:
        raise StackConfigError(problems)
    return stack
