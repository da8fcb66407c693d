"""The typed model of a whole stack (``Pulumi.<stack>.yaml``): one model, each section's own.

Each section's model lives with its capability; this module composes them and checks each one on
its own. An invalid stack raises ``StackConfigError`` listing every problem with its config key
path, the bad value and what is allowed. Unknown keys are errors at every level, top level
included. Reading the engine's config is ``components.stack.load``'s job; the checks across
sections are ``components.stack.plan``'s.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from components.bare_metal.config import BareMetalConfig
from components.base.config_model import ConfigModel, problems_from_validation_error
from components.base.merge import inherited_key
from components.base.problems import Problem, StackConfigError, join_path
from components.catalog.drivers import CudaCheckMode, CudaVersionError, minimum_driver
from components.catalog.gpu_operator_chart import DEFAULT_DRIVER_VERSION
from components.catalog.names import PROJECT as PROJECT  # re-exported: the stack's readers import it here
from components.catalog.names import PROOF_NAMESPACE
from components.catalog.nvidia_driver import precompiled_problem
from components.cluster.config import ClusterConfig
from components.gpu_operator.config import GpuOperatorConfig
from components.kubeflow.config import KubeflowConfig
from components.mig.config import MigSettings
from components.node_agent.config import NodeAgentConfig, kubernetes_problems
from components.observability.config import ObservabilityConfig
from components.smoke_test.config import SmokeTestConfig
from components.stack.blame import problem_for
from components.stack.platforms.base import NamedSecret
from components.stack.platforms.existing_config import ExistingConfig
from components.stack.platforms.registry import platform_of, section_owners
from components.yandex.config import NodeGroupConfig, NodeGroupDefaults, with_defaults


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
    node_group_defaults: NodeGroupDefaults | None = None
    node_groups: dict[str, NodeGroupConfig] = Field(default_factory=dict)
    bare_metal: BareMetalConfig | None = None
    existing: ExistingConfig | None = None
    gpu_operator: GpuOperatorConfig = GpuOperatorConfig()
    kubeflow: KubeflowConfig | None = None
    mig: MigSettings = MigSettings()
    node_agent: NodeAgentConfig = NodeAgentConfig()
    smoke_test: SmokeTestConfig = SmokeTestConfig()
    observability: ObservabilityConfig = ObservabilityConfig()

    @model_validator(mode="before")
    @classmethod
    def _inherit_node_group_defaults(cls, raw: Any) -> Any:
        """Lay ``nodeGroupDefaults`` under every group, so stacks do not repeat location and taints per group."""
        if not isinstance(raw, Mapping):
            return raw
        defaults = raw.get("nodeGroupDefaults", raw.get("node_group_defaults"))
        groups = raw.get("nodeGroups", raw.get("node_groups"))
        if not isinstance(defaults, Mapping) or not isinstance(groups, Mapping):
            return raw
        key = "nodeGroups" if "nodeGroups" in raw else "node_groups"
        return {**raw, key: with_defaults(defaults, groups)}

    #: ``nodeGroupDefaults`` and ``nodeGroups`` as written in the file (set by ``parse_stack_config``).
    _written: tuple[Mapping[str, Any], Mapping[str, Any]] = PrivateAttr(default=({}, {}))

    def as_written(self, problems: Iterable[Problem]) -> list[Problem]:
        """``problems`` named at the key the file has: a value a group inherited is reported at its default.

        A group that sets no ``taints`` of its own runs on ``nodeGroupDefaults.taints``; a problem with them
        is reported there (with the groups that inherit it, once for all of them), never at
        ``nodeGroups.<group>.taints``, which is not in the file.
        """
        return _attributed(problems, *self._written)

    @property
    def gpu_node_groups(self) -> dict[str, NodeGroupConfig]:
        """The node groups that are GPU pools (a group with ``gpus: 0`` is a CPU group the program leaves alone)."""
        return {name: group for name, group in self.node_groups.items() if group.resources.gpus > 0}

    def secret_keys(self) -> set[str]:
        """Config keys that hold secrets (read with ``require_secret``), named by this config."""
        keys = {named.key for named in platform_of(self).named_secrets(self) if named.key}
        if self.kubeflow is not None and self.kubeflow.enabled:
            keys |= self.kubeflow.secret_keys()
        return keys

    def platform_namespaces(self) -> dict[str, str]:
        """Namespace -> what of the platform lives there, with the key that names it (no Profile may take one)."""
        namespaces = {PROOF_NAMESPACE: "the namespace of the driver steps' proof Jobs (gpu-platform's own)"}
        if self.observability.namespace:
            namespaces[self.observability.namespace] = "the observability namespace (observability.namespace)"
        if self.gpu_operator.kyverno.enabled:
            namespaces[self.gpu_operator.kyverno.namespace] = "Kyverno's namespace (gpuOperator.kyverno.namespace)"
        namespaces[self.node_agent.namespace] = "the node agent's namespace (nodeAgent.namespace)"
        namespaces[self.gpu_operator.namespace] = "the GPU Operator's namespace (gpuOperator.namespace)"
        return namespaces

    def problems(self) -> Iterator[Problem]:
        """Every semantic problem of the stack, each with its key path."""
        platform = platform_of(self)
        yield from self.cluster.problems("cluster")
        yield from self.cuda.problems("cuda")
        yield from self._other_platform_problems()
        yield from platform.problems(self)
        yield from self.gpu_operator.problems("gpuOperator")
        yield from kubernetes_problems(self.cluster.kubernetes_minor, self.node_agent, platform.handover_pools(self))
        yield from self.smoke_test.problems("smokeTest", platform.pool_names(self))
        if self.kubeflow is not None and self.kubeflow.enabled:
            yield from self.kubeflow.problems(
                "kubeflow", program_keys=top_level_keys(), taken_namespaces=self.platform_namespaces()
            )
        yield from self._secret_key_problems()
        yield from self._pool_driver_problems()

    def _other_platform_problems(self) -> Iterator[Problem]:
        """A section only another platform reads is a mistake, not something to ignore: the stack would silently
        lose what it declares (node groups on a bare-metal cluster, hosts on a Yandex one)."""
        kind = self.cluster.kind
        written = set(self.model_fields_set)
        for section, owner in section_owners().items():
            field_name = next((name for name, info in StackConfig.model_fields.items() if info.alias == section), "")
            if owner.kind != kind and field_name in written and getattr(self, field_name):
                yield Problem(
                    section,
                    f"is read only when cluster.kind is {owner.kind} ({owner.pool_noun}s), and this stack's cluster.kind "
                    f"is {kind}; remove it, or set cluster.kind: {owner.kind}",
                )

    def _pool_driver_problems(self) -> Iterator[Problem]:
        """Driver combinations that break a real cluster: all canaries, precompiled images."""
        platform = platform_of(self)
        requests = platform.driver_requests(self)
        operator_driver = platform.operator_driver_pools(self)
        canaries = [r.path for r in requests.values() if r.config is not None and r.config.canary]
        if len(requests) > 1 and len(canaries) == len(requests):
            for path in canaries:
                yield Problem(
                    join_path(path, "canary"),
                    "every GPU pool is a canary, so no pool waits for one and a bad driver reaches the whole fleet "
                    "at once; keep canary: true on one pool (or a few) and let the others wait",
                )
        stack_driver = self.gpu_operator.driver
        stack_version = stack_driver.version or DEFAULT_DRIVER_VERSION
        stack_wide = False
        for pool, request in requests.items():
            if not operator_driver.get(pool):
                continue
            driver = request.config
            own = driver.use_precompiled if driver is not None else None
            precompiled = own if own is not None else stack_driver.use_precompiled
            version = driver.version if driver is not None and driver.version else stack_version
            problem = precompiled_problem(version) if precompiled else None
            if problem and own is not None:
                yield Problem(join_path(request.path, "usePrecompiled"), problem)
            elif problem:
                stack_wide = True
        if stack_wide:
            yield Problem("gpuOperator.driver.usePrecompiled", precompiled_problem(stack_version) or "")

    def _secret_key_problems(self) -> Iterator[Problem]:
        """A key that names a secret must be a key of its own: not empty, not one of the program's settings, not a
        key another secret names. A clash is reported at the key the file writes: where one of the two is a default
        (not in the file), at the other."""
        named = platform_of(self).named_secrets(self)
        if self.kubeflow is not None and self.kubeflow.enabled:
            dex = self.kubeflow.dex
            written = "password_hash_secret" in dex.model_fields_set
            named.append(NamedSecret("kubeflow.dex.passwordHashSecret", dex.password_hash_secret, written))
            named.append(NamedSecret("kubeflow.oidcClientSecretKey", self.kubeflow.oidc_client_secret_key, True))
        program = set(top_level_keys())
        first: dict[str, tuple[str, bool]] = {}
        for path, key, written, may_share in ((n.path, n.key, n.written, n.may_share) for n in named):
            if key is not None and not key:
                yield Problem(path, "must name a secret config key (set with pulumi config set --secret <key>)")
            elif key in program and not path.startswith("kubeflow."):  # the Kubeflow section checks its own
                yield Problem(path, f"{key!r} is a program setting of its own, not a secret key; name another key")
            elif key is not None and key in first and not (may_share and first[key][0] == may_share):
                other, other_written = first[key]
                at, names = (path, other) if written or not other_written else (other, path)
                default = "" if (other_written if at == path else written) else " (its default)"
                yield Problem(
                    at,
                    f"{key!r} is already {names}{default}: one secret cannot be both (each is read as what its key says: a kubeconfig, an SSH key, a password hash); "
                    "name a key of its own",
                )
            if key:
                first.setdefault(key, (path, written))
        yield from self.observability.problems("observability")


def top_level_keys() -> list[str]:
    """The config keys of the stack file, with their YAML (camelCase) names."""
    return sorted((field.alias or name) for name, field in StackConfig.model_fields.items())


def parse_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate a plain mapping of top-level keys (``{"cluster": {...}, ...}``) into a StackConfig.

    Checks each section on its own; the checks across sections run once, in ``components.stack.plan``.
    """
    try:
        stack = StackConfig.model_validate(raw)
    except ValidationError as error:
        problems = problems_from_validation_error(error, StackConfig)
        raise StackConfigError(attribute_inherited(problems, raw)) from None
    except Exception as error:  # a validator that raised something else: a bug, still reported at its key
        raise StackConfigError(attribute_inherited([problem_for(error, raw)], raw)) from error
    stack._written = _as_written(raw)
    try:
        problems = list(stack.problems())
    except Exception as error:  # a check that raised instead of explaining: a bug, still reported at its key
        problems = [problem_for(error, raw, stack)]
    if problems:
        raise StackConfigError(stack.as_written(problems))
    return stack


def _with_merged_keys(problem: Problem, defaults: Mapping[str, Any], groups: Mapping[str, Any]) -> Problem:
    """A problem at a key a group wrote, where ``nodeGroupDefaults`` filled in what it clashes with (maps merge):
    the message names the inherited keys. A block (``nodeGroups.a.scale.auto`` refused for ``min > initial``, ``min``
    the default's): every key the defaults added to it; a value (``bootDisk.size`` against the default's
    ``bootDisk.type``): the inherited keys beside it whose value the message quotes."""
    for name, group in groups.items():
        head = join_path("nodeGroups", name)
        if not isinstance(group, Mapping) or not problem.path.startswith(f"{head}."):
            continue
        rest = problem.path[len(head) + 1 :].split(".")
        node, default = _at(group, rest), _at(defaults, rest)
        if isinstance(node, Mapping) and isinstance(default, Mapping):
            where, added = rest, [key for key in default if key not in node]
        else:
            where = rest[:-1]
            parent, default_parent = _at(group, where), _at(defaults, where)
            if not isinstance(parent, Mapping) or not isinstance(default_parent, Mapping):
                continue
            added = [
                key
                for key, value in default_parent.items()
                if key not in parent and isinstance(value, str | int) and str(value) in problem.message
            ]
        if added:
            keys = ", ".join(join_path("nodeGroupDefaults", *where, key) for key in added)
            return Problem(
                problem.path, f"{problem.message} (with {keys} inherited: a group's map merges with the default's)"
            )
    return problem


def _at(node: Any, parts: list[str]) -> Any:
    for part in parts:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _as_written(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """``nodeGroupDefaults`` and ``nodeGroups`` as the file wrote them (before the defaults are laid under)."""
    defaults = raw.get("nodeGroupDefaults", raw.get("node_group_defaults"))
    groups = raw.get("nodeGroups", raw.get("node_groups"))
    return (
        copy.deepcopy(defaults) if isinstance(defaults, Mapping) else {},
        copy.deepcopy(groups) if isinstance(groups, Mapping) else {},
    )


def attribute_inherited(problems: Iterable[Problem], raw: Mapping[str, Any]) -> list[Problem]:
    """Problems named at the key the user wrote: see ``StackConfig.as_written``."""
    defaults, groups = _as_written(raw)
    return _attributed(problems, defaults, groups)


def _attributed(problems: Iterable[Problem], defaults: Mapping[str, Any], groups: Mapping[str, Any]) -> list[Problem]:
    inherited: dict[tuple[str, str], list[str]] = {}
    kept: list[Problem] = []
    for problem in problems:
        found = inherited_key(problem.path, "nodeGroups", groups, "nodeGroupDefaults", defaults) if defaults else None
        if found is None:
            kept.append(_with_merged_keys(problem, defaults, groups))
        else:
            inherited.setdefault((found[0], problem.message), []).append(found[1])
    said = {(problem.path, problem.message) for problem in kept}
    for (path, message), names in inherited.items():
        if (path, message) in said:
            continue  # the default's own check said it already
        kept.append(Problem(path, f"{message} (inherited by nodeGroups {', '.join(sorted(set(names)))})"))
    return kept
