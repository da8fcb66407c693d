"""Every decision across sections of the stack, computed once from the config: the ``Plan``.

"Parse once, pass typed results": the pools, the driver, the MIG plan, the GPU Operator values and
the smoke targets are decided here, before any resource exists, and every problem across sections
is reported at once as a ``StackConfigError``. The program and the outputs only read the plan;
nothing downstream re-derives or re-checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from components.base.merge import deep_merge
from components.base.problems import Problem, StackConfigError
from components.catalog.drivers import minimum_driver
from components.catalog.kubernetes import GO_DURATION_MAX_SECONDS
from components.catalog.names import DRIVER_GROUP_LABEL, MIG_CONFIG_LABEL, PROOF_NAMESPACE
from components.catalog.node_agent import works_on_pool
from components.catalog.pools import GpuPool, pool_scheduling
from components.gpu_operator.driver_objects import nvidia_driver_object
from components.gpu_operator.drivers import (
    DriverContext,
    DriverGroup,
    DriverPlan,
    driverless_hosts,
    plan_driver,
    toolkit_enabled,
)
from components.gpu_operator.values import build_values, extra_values_problems
from components.kubeflow.config import KubeflowConfig
from components.kubeflow.gpus import FleetPool, GpuFleet, quota_findings
from components.mig.decisions import MigPlanResult
from components.mig.plan import mig_values, plan_mig
from components.mig.recorded import RecordedPlan
from components.node_agent.desired import agent_mig_labels, operator_runtime_class, pool_budgets
from components.observability.plan import ObservabilityPlan, StackFacts, plan_observability
from components.proof.component import JOB_MARGIN_SECONDS
from components.proof.steps import mig_step_settings, pool_declarations, step_settings
from components.smoke_test.targets import SmokeTarget, smoke_targets
from components.stack.blame import problem_for
from components.stack.config import StackConfig
from components.stack.platforms.base import GpuPlatform
from components.stack.platforms.registry import platform_of
from components.stack.pools import driver_requests, gpu_pools, mig_requests
from components.stack.shared_budget import shared_budget_problems
from components.stack.wiring import DriverStep, driver_steps


@dataclass(frozen=True)
class OperatorPlan:
    """The GPU Operator release the stack installs: its driver and its finished Helm values."""

    driver: DriverPlan
    values: dict[str, Any]
    #: Driver group -> its NVIDIADriver object; empty unless pools run different drivers (driver.per_pool).
    nvidia_drivers: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class HostPreparationPlan:
    """What host preparation checks and leaves on each bare-metal host, decided from the stack's sections."""

    #: The oldest driver the stack's CUDA level runs on (the hosts' preinstalled driver is checked against it).
    required_min_driver: str
    #: The driver the hosts must carry when they own it (``gpuOperator.driver.owner: host``); "" otherwise.
    expected_driver_version: str
    #: Whether the hosts must be driverless because the operator installs the driver.
    driverless: bool


@dataclass(frozen=True)
class Plan:
    """The whole stack, decided: what the program builds and the outputs report."""

    config: StackConfig
    pools: tuple[GpuPool, ...]
    mig: MigPlanResult
    operator: OperatorPlan | None  # None: the operator is off, or there are no GPU pools
    smoke_targets: tuple[SmokeTarget, ...]
    observability: ObservabilityPlan | None = None  # None: off, or no operator (nothing to observe)
    #: Settings that are legal but risky, each with why; the program prints each once.
    warnings: tuple[str, ...] = ()
    #: The GPU pools as Kubeflow offers them (quotas checked against it, spawner entries, PodDefaults).
    kubeflow_gpus: GpuFleet = field(default_factory=GpuFleet)

    def driver_labels(self, pool: str) -> dict[str, str]:
        """The node label that puts ``pool`` under its driver group's NVIDIADriver (none: one driver)."""
        group = self.operator.driver.group_of(pool) if self.operator and self.operator.driver.per_pool else None
        return {DRIVER_GROUP_LABEL: group.name} if group else {}

    @property
    def platform(self) -> GpuPlatform:
        """The platform the stack's GPU nodes come from (``cluster.kind``)."""
        return platform_of(self.config)

    def pool(self, name: str) -> GpuPool:
        """The pool called ``name`` (a node group name or a bare-metal node name)."""
        return next(pool for pool in self.pools if pool.name == name)

    @property
    def host_driver_removal_pools(self) -> tuple[GpuPool, ...]:
        """Pools whose nodes are handed over from a preinstalled driver to the operator's."""
        return tuple(pool for pool in self.pools if pool.host_driver_removal) if self.operator else ()

    def node_labels(self, pool: str) -> dict[str, str]:
        """Every label the program decides for ``pool``'s nodes beyond the platform's own: the driver group's,
        and the MIG config (under the node agent's desired-config key when layouts go through the agent)."""
        mig = agent_mig_labels(self.mig.labels(pool), self.config.node_agent.mig_layout)
        return {**self.driver_labels(pool), **mig}

    @property
    def host_preparation(self) -> HostPreparationPlan:
        """The bare-metal hosts' driver expectations (the section's own settings stay in ``bareMetal``)."""
        stack = self.config
        host_driver = stack.gpu_operator.host_driver
        return HostPreparationPlan(
            required_min_driver=minimum_driver(stack.cuda.version, stack.cuda.check),
            expected_driver_version=host_driver.version if host_driver else "",
            driverless=driverless_hosts(stack.gpu_operator, owner_declares_hosts=self.platform.owner_declares_hosts),
        )

    @property
    def _mig_declarations(self) -> dict[str, tuple[str, dict[str, int]]]:
        """Pool -> (its mig-parted config, what a node advertises then), for the pools the program re-partitions."""
        return {
            pool.name: (self.mig.labels(pool.name)[MIG_CONFIG_LABEL], self.mig.resources_per_node(pool))
            for pool in self.pools
            if MIG_CONFIG_LABEL in self.mig.labels(pool.name)
        }

    @property
    def pool_declarations(self) -> dict[str, dict[str, Any]]:
        """Per pool, the driver and MIG layout the rollout controller proves each of its nodes against, all the
        time (``proof.steps.pool_declarations``); empty without the operator."""
        operator_plan = self.operator
        if operator_plan is None:
            return {}
        return pool_declarations(
            operator_plan.driver,
            self.pools,
            values=operator_plan.values,
            objects=operator_plan.nvidia_drivers,
            chart_version=self.config.gpu_operator.chart_version,
            mig=self._mig_declarations,
        )

    def proof_settings(self, step: str, groups: tuple[DriverGroup, ...]) -> dict[str, Any] | None:
        """The settings of one step's proof Job (``components.proof.component``), or None when there is none.

        A driver step proves its ``groups``' pools; with no groups (the hosts own the driver) the step proves
        the MIG layouts of the pools the program re-partitions. Its CUDA pods use the smoke-test image and each
        pool's first smoke resource: with the smoke test off, or every pool of the step skipped, there is none.
        """
        stack, operator_plan = self.config, self.operator
        if operator_plan is None or not stack.smoke_test.enabled:
            return None
        resources: dict[str, str] = {}
        for target in self.smoke_targets:
            resources.setdefault(target.pool, target.resource)
        mig = self._mig_declarations
        image, namespace = stack.smoke_test.image, stack.gpu_operator.namespace
        deadline = stack.gpu_operator.timeout_seconds
        if not groups:
            return mig_step_settings(
                step,
                self.pools,
                resources=resources,
                mig=mig,
                host_driver=operator_plan.driver.version,
                image=image,
                namespace=PROOF_NAMESPACE,
                operator_namespace=namespace,
                deadline_seconds=deadline,
            )
        return step_settings(
            step,
            groups,
            operator_plan.driver,
            self.pools,
            values=operator_plan.values,
            objects=operator_plan.nvidia_drivers,
            chart_version=stack.gpu_operator.chart_version,
            resources=resources,
            mig=mig,
            image=image,
            namespace=PROOF_NAMESPACE,
            operator_namespace=namespace,
            deadline_seconds=deadline,
        )

    @property
    def node_agent_budgets(self) -> dict[str, int]:
        """Slots per agent pool at its full size, keyed by the node-group label value its nodes carry (bare-metal
        hosts carry their ``pool``, so the hosts of one pool share a budget)."""
        return pool_budgets(self.config.node_agent, self.node_agent_pools, self.platform.budget_keys(self.config))

    @property
    def node_agent_runtime_class(self) -> str:
        """The RuntimeClass the node agent's smoke pods run under: the one the GPU Operator installs ("" none)."""
        return operator_runtime_class(self.operator.values) if self.operator else ""

    @property
    def node_agent_memberships(self) -> dict[str, dict[str, dict[str, str]]]:
        """Pool -> the selector that picks its nodes and the labels the node agent's labeller puts on them, where
        the platform labels no node itself (an existing cluster); empty elsewhere, and without the operator."""
        return self.platform.memberships(self) if self.operator else {}

    @property
    def node_agent_pools(self) -> tuple[GpuPool, ...]:
        """Pools the node agent works on: hand-over pools, and MIG pools when layouts go through it."""
        return _agent_pools(self.config, self.pools, self.mig) if self.operator else ()

    @property
    def node_agent_mig_resources(self) -> dict[str, dict[str, int]]:
        """Per agent pool the program re-partitions, what each node advertises then (the controller proves a MIG
        change by the node's allocatable)."""
        return {
            pool.name: self.mig.resources_per_node(pool)
            for pool in self.node_agent_pools
            if pool.name in self.mig.pools
        }

    # -- what the program wires (components.stack.program reads these and decides nothing itself) --------------
    @property
    def cluster_name(self) -> str:
        """The name of the stack's ClusterAccess component (``cluster.name``)."""
        return self.config.cluster.name

    @property
    def operator_namespace(self) -> str:
        """The GPU Operator's namespace (``gpuOperator.namespace``): the smoke Jobs, the node agent and the proof read
        the operator's pods there."""
        return self.config.gpu_operator.namespace

    @property
    def gpu_models(self) -> list[str]:
        """The fleet's GPU models, sorted (the operator's namespace records them for the policy pack)."""
        return sorted({pool.model.key for pool in self.pools})

    @property
    def kubeflow(self) -> KubeflowConfig | None:
        """The Kubeflow section when the stack installs Kubeflow (None: no section, or ``enabled: false``)."""
        kubeflow = self.config.kubeflow
        return kubeflow if kubeflow is not None and kubeflow.enabled else None

    @cached_property
    def driver_steps(self) -> tuple[DriverStep, ...]:
        """The driver steps in order (``components.stack.wiring``): each step's NVIDIADriver objects, proof and
        smoke Jobs, their names, and whose NodePatches its NVIDIADrivers wait for; none without the operator."""
        return driver_steps(self)


def plan_stack(stack: StackConfig, recorded_mig: RecordedPlan | None = None) -> Plan:
    """Decide everything; raises ``StackConfigError`` with every problem across sections.

    ``recorded_mig``: the layouts pools planned from demand got last time (the planner keeps them where it can).
    Any other error raised while planning is a bug; it too becomes a ``StackConfigError`` at the key it is about
    (``components.stack.blame``), never a traceback.
    """
    try:
        return _plan_stack(stack, recorded_mig)
    except StackConfigError:
        raise
    except Exception as error:
        written = stack.model_dump(mode="json", by_alias=True, exclude_unset=True)
        raise StackConfigError(stack.as_written([problem_for(error, written, stack)])) from error


def _plan_stack(stack: StackConfig, recorded_mig: RecordedPlan | None) -> Plan:
    platform = platform_of(stack)
    pools = gpu_pools(stack)
    problems: list[Problem] = []
    mig, mig_problems = plan_mig(pools, mig_requests(stack), stack.mig, recorded_mig)
    host_configures_containerd = platform.host_configures_containerd(stack)
    context = DriverContext(
        owner_declares_hosts=platform.owner_declares_hosts,
        cuda_version=stack.cuda.version,
        cuda_check=stack.cuda.check,
        host_configures_containerd=host_configures_containerd,
        smoke_image_cuda=stack.smoke_test.image_cuda if stack.smoke_test.enabled else None,
    )
    requests = driver_requests(stack)
    driver, driver_problems = plan_driver(stack.gpu_operator, pools, context, requests)
    problems.extend(driver_problems)
    if driver is not None:
        problems.extend(shared_budget_problems(stack, _agent_pools(stack, pools, mig), driver, requests))
        problems.extend(_proof_deadline_problems(stack, driver))
    problems.extend(extra_values_problems(stack.gpu_operator))
    problems.extend(mig_problems)
    # What the pools advertise is known only once every MIG layout and the strategy are valid.
    fleet = _kubeflow_fleet(pools, mig) if not mig_problems else GpuFleet()
    kubeflow_warnings: tuple[str, ...] = ()
    if stack.kubeflow is not None and stack.kubeflow.enabled and not mig_problems:
        findings = quota_findings(stack.kubeflow.profile_quotas(), fleet, stack.kubeflow.gpu_quota_check)
        problems.extend(findings.problems)
        kubeflow_warnings = findings.warnings
    if problems:
        raise StackConfigError(stack.as_written(problems))
    operator = None
    targets: tuple[SmokeTarget, ...] = ()
    observability = None
    if driver is not None:
        if stack.smoke_test.enabled:
            resources = {pool.name: mig.resources_per_node(pool) for pool in pools}
            versions = {p.pool: p.version for p in driver.pools} or {pool.name: driver.version for pool in pools}
            targets = tuple(smoke_targets(pools, resources, stack.smoke_test.skip_pools, versions))
        observability = _observability(stack, pools, mig, driver, targets)
        # The operator values of two capabilities, merged before the call (MIG's, then observability's).
        fragments = deep_merge(mig_values(stack.mig, mig), observability.operator_values if observability else {})
        values = build_values(
            stack.gpu_operator,
            pools,
            driver,
            toolkit=toolkit_enabled(stack.gpu_operator, host_configures_containerd),
            mig_values=fragments,
        )
        objects = {
            group.name: nvidia_driver_object(
                group,
                stack.gpu_operator,
                values,
                [pool.model.key for pool in pools if driver.group_of(pool.name) is group],
            )
            for group in (driver.groups if driver.per_pool else ())
        }
        operator = OperatorPlan(driver, values, objects)
    return Plan(
        config=stack,
        pools=pools,
        mig=mig,
        operator=operator,
        smoke_targets=targets,
        observability=observability,
        warnings=platform.warnings(stack) + kubeflow_warnings,
        kubeflow_gpus=fleet,
    )


def _proof_deadline_problems(stack: StackConfig, driver: DriverPlan) -> list[Problem]:
    """A driver step's proof waits ``gpuOperator.timeoutSeconds`` per upgrade wave (``Plan.proof_settings``); the
    Job's custom timeout is that as a Go ``time.Duration`` (an int64 of nanoseconds), which must not overflow."""
    if not stack.smoke_test.enabled:
        return []
    waves = max((group.waves or 1 for group in driver.groups), default=1)
    timeout = stack.gpu_operator.timeout_seconds
    longest = timeout * waves + JOB_MARGIN_SECONDS
    if longest <= GO_DURATION_MAX_SECONDS:
        return []
    most = (GO_DURATION_MAX_SECONDS - JOB_MARGIN_SECONDS) // waves
    return [
        Problem(
            "gpuOperator.timeoutSeconds",
            f"{timeout} seconds per upgrade wave times {waves} waves is longer than the longest timeout Pulumi can "
            f"hold (a Go time.Duration, about 292 years: {GO_DURATION_MAX_SECONDS} seconds); at most {most} with "
            "these pools",
        )
    ]


def _kubeflow_fleet(pools: tuple[GpuPool, ...], mig: MigPlanResult) -> GpuFleet:
    """Each pool's advertised resources (the MIG plan) and scheduling, as plain data for the Kubeflow capability."""
    offered = []
    for pool in pools:
        scheduling = pool_scheduling(pool)
        offered.append(
            FleetPool(
                name=pool.name,
                config_path=pool.config_path,
                model=pool.model.key,
                max_nodes=pool.max_nodes,
                resources_per_node=mig.resources_per_node(pool),
                node_selector=scheduling["nodeSelector"],
                tolerations=tuple(scheduling["tolerations"]),
            )
        )
    return GpuFleet(tuple(offered), mig.strategy)


def _agent_pools(stack: StackConfig, pools: tuple[GpuPool, ...], mig: MigPlanResult) -> tuple[GpuPool, ...]:
    """The one answer to "does the node agent run, and where": every pool where it labels the nodes (an existing
    cluster), hand-over pools, and MIG pools when layouts go through it (the plan's ``node_agent_pools`` and the
    observability facts both ask it)."""
    labelled = platform_of(stack).labels_through_agent
    return tuple(
        pool
        for pool in pools
        if labelled
        or works_on_pool(
            host_driver_removal=pool.host_driver_removal,
            mig_pool=pool.name in mig.pools,
            mig_layout=stack.node_agent.mig_layout,
        )
    )


def _observability(
    stack: StackConfig,
    pools: tuple[GpuPool, ...],
    mig: MigPlanResult,
    driver: DriverPlan,
    targets: tuple[SmokeTarget, ...],
) -> ObservabilityPlan | None:
    facts = StackFacts(
        cluster=stack.cluster.name,
        operator_namespace=stack.gpu_operator.namespace,
        prometheus_operator=stack.gpu_operator.prometheus_operator,
        operator_driver=driver.owner == "operator",
        node_agent=bool(_agent_pools(stack, pools, mig)),
        smoke_jobs=tuple(target.job_name for target in targets),
        node_agent_namespace=stack.node_agent.namespace,
    )
    return plan_observability(stack.observability, pools, facts)
