"""Builds the whole platform from the plan, in dependency order.

Each capability is one ComponentResource; this module only wires them together, reading the plan
(nothing is re-derived here), so ``__main__.py`` stays a few lines and tests build the same platform
under mocks. What gives the cluster its GPU nodes is the stack's platform's (``plan.platform``, picked by
``cluster.kind``): this module calls it without knowing which it is.

Registration stays linear in the fleet: a resource depends on the resources it waits for (each
component's ``ready``, and for a smoke Job only its own node's NodePatch), never on a component (the SDK
expands that to every child), and never on what it already waits for through another dependency; the
SDK's cycle check is answered without walking the graph where it can be (``base.dependency_graph``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from components.base import dependency_graph
from components.base.runtime_mode import warning
from components.cluster.access import ClusterAccess
from components.gpu_operator.component import GpuOperator, GpuOperatorArgs
from components.gpu_operator.drivers import DriverGroup
from components.gpu_operator.nvidia_drivers import GpuDrivers, GpuDriversArgs
from components.kubeflow.component import Kubeflow, KubeflowArgs
from components.node_agent.component import NodeAgent, NodeAgentArgs
from components.observability.component import Observability, ObservabilityArgs
from components.smoke_test.component import GpuSmokeTest, SmokeTestArgs
from components.smoke_test.proof import GpuProof, GpuProofAccess, ProofAccessArgs, ProofArgs
from components.smoke_test.targets import SmokeTarget
from components.stack.load import StackSecrets
from components.stack.plan import Plan
from components.stack.platforms.base import NodeLabelling, PlatformNodes

if TYPE_CHECKING:
    import pulumi_kubernetes as k8s


@dataclass
class Platform:
    """Everything the program created, for the outputs module."""

    plan: Plan
    access: ClusterAccess
    #: What the stack's platform created for its nodes (node groups, host preparation; nothing on an existing
    #: cluster), and the NodePatches it labels them with after the release.
    nodes: PlatformNodes = field(default_factory=PlatformNodes)
    labelling: NodeLabelling = field(default_factory=NodeLabelling)
    gpu_operator: GpuOperator | None = None
    kubeflow: Kubeflow | None = None
    node_agent: NodeAgent | None = None
    smoke_test: GpuSmokeTest | None = None
    #: Per-pool drivers: the canaries' NVIDIADriver resources and smoke Jobs, then the rest's.
    canary_drivers: GpuDrivers | None = None
    canary_smoke_test: GpuSmokeTest | None = None
    drivers: GpuDrivers | None = None
    #: The per-node proof of each driver step (step name -> its awaited Job), and their shared access.
    proofs: dict[str, GpuProof] = field(default_factory=dict)
    proof_access: GpuProofAccess | None = None
    observability: Observability | None = None


def build_platform(plan: Plan, secrets: StackSecrets) -> Platform:
    """Register every resource the plan declares."""
    dependency_graph.install()
    stack = plan.config
    for message in plan.warnings:
        warning(message)
    access_args = plan.platform.cluster_access(plan, secrets.platform)
    platform = Platform(plan=plan, access=ClusterAccess(stack.cluster.name, access_args))
    provider = platform.access.provider
    platform.nodes = plan.platform.create_nodes(plan, platform.access.cluster_id, secrets.platform)
    operator_plan = plan.operator
    if operator_plan is not None:
        platform.gpu_operator = GpuOperator(
            "gpu-operator",
            GpuOperatorArgs(
                config=stack.gpu_operator,
                values=operator_plan.values,
                driver_owner=operator_plan.driver.owner,
                driver_version=operator_plan.driver.version,
                gpu_models=sorted({pool.model.key for pool in plan.pools}),
                provider=provider,
                depends_on=platform.nodes.ready,
            ),
        )
    operator_ready = platform.gpu_operator.ready if platform.gpu_operator is not None else []
    platform.labelling = plan.platform.label_nodes(plan, provider, operator_ready)
    agent_pools = plan.node_agent_pools
    if agent_pools and platform.gpu_operator is not None:
        platform.node_agent = NodeAgent(
            "node-agent",
            NodeAgentArgs(
                config=stack.node_agent,
                pool_budgets=plan.node_agent_budgets,
                # The counts too: the controller proves a MIG change by the node's allocatable.
                mig_resources={
                    pool.name: plan.mig.resources_per_node(pool) for pool in agent_pools if pool.name in plan.mig.pools
                },
                provider=provider,
                depends_on=platform.gpu_operator.ready,
                operator_namespace=stack.gpu_operator.namespace,
                runtime_class=plan.node_agent_runtime_class,
                declarations=plan.pool_declarations,
            ),
        )
    if platform.gpu_operator is not None:
        _drivers_and_smoke_tests(plan, platform)
    if plan.observability is not None and platform.gpu_operator is not None:
        platform.observability = Observability(
            "observability",
            ObservabilityArgs(plan=plan.observability, provider=provider, depends_on=platform.gpu_operator.ready),
        )
    kubeflow = stack.kubeflow
    if kubeflow is not None and kubeflow.enabled and secrets.dex_password_hash is not None:
        platform.kubeflow = Kubeflow(
            "kubeflow",
            KubeflowArgs(
                config=kubeflow,
                stack=pulumi.get_stack(),
                provider=provider,
                dex_password_hash=secrets.dex_password_hash,
                oidc_client_secret=secrets.oidc_client_secret,
                gpus=plan.kubeflow_gpus,
            ),
        )
    return platform


def _drivers_and_smoke_tests(plan: Plan, platform: Platform) -> None:
    """The smoke Jobs, the proof of each driver step, and with per-pool drivers the NVIDIADriver resources.

    canary pools' NVIDIADriver -> the canary step's proof Job (every node of the canary pools on the declared
    driver, CUDA on each) -> their smoke Jobs -> every other pool's NVIDIADriver -> that step's proof -> their smoke
    Jobs. A lagging canary node fails ``pulumi up`` (the proof names it) before Pulumi touches the other pools'
    drivers: they depend on the canary's proof and smoke Jobs, never on an NVIDIADriver's status. Every Job waits
    for the release (which waits for node groups and host preparation) and for its own node's NodePatch (whose MIG
    label names a config the release defines); an NVIDIADriver waits for the patches of the nodes it selects.
    """
    stack, operator_plan, operator = plan.config, plan.operator, platform.gpu_operator
    if operator_plan is None or operator is None:
        return
    provider = platform.access.provider
    smoke = stack.smoke_test.enabled
    driver_plan = operator_plan.driver
    canary_pools = {p.pool for g in driver_plan.canary_groups for p in g.pools}
    node_labels: dict[str, list[pulumi.Resource]] = {
        node: [patch] for node, patch in platform.labelling.patches.items()
    }
    smoke_prerequisites: list[pulumi.Resource] = operator.ready
    later_prerequisites: list[pulumi.Resource] = operator.ready
    if canary_pools:
        platform.canary_drivers = _gpu_drivers(
            plan,
            provider,
            "gpu-drivers-canary",
            driver_plan.canary_groups,
            [*operator.ready, *_selected_patches(plan, node_labels, driver_plan.canary_groups)],
        )
        canary_ready = _proof(plan, platform, "canary", driver_plan.canary_groups, platform.canary_drivers.ready)
        later_prerequisites = canary_ready
        if smoke:
            platform.canary_smoke_test = _smoke_test(
                plan,
                provider,
                "gpu-smoke-test-canary",
                [t for t in plan.smoke_targets if t.pool in canary_pools],
                canary_ready,
                node_labels,
            )
            later_prerequisites = [*later_prerequisites, *platform.canary_smoke_test.ready]
    if operator_plan.nvidia_drivers and driver_plan.later_groups:
        later_prerequisites = [*later_prerequisites, *_selected_patches(plan, node_labels, driver_plan.later_groups)]
        platform.drivers = _gpu_drivers(plan, provider, "gpu-drivers", driver_plan.later_groups, later_prerequisites)
        smoke_prerequisites = platform.drivers.ready
    if driver_plan.owner == "operator" and driver_plan.later_groups:
        step = "main"  # one name with and without canaries, in both driver modes: the same Job URN
        smoke_prerequisites = _proof(plan, platform, step, driver_plan.later_groups, smoke_prerequisites)
    elif driver_plan.owner == "host" and smoke:
        # The hosts own the driver: the proof closes the MIG layouts of the pools the program re-partitions.
        # The proof waits for every node's MIG label (linear: one edge each); each smoke Job waits for the proof
        # and its own node's label only. Without a proof the smoke Jobs keep waiting for the release as before.
        proven = _proof(plan, platform, "mig", (), [*operator.ready, *platform.labelling.ready])
        smoke_prerequisites = proven if "mig" in platform.proofs else smoke_prerequisites
    if smoke:
        targets = [t for t in plan.smoke_targets if t.pool not in canary_pools]
        platform.smoke_test = _smoke_test(plan, provider, "gpu-smoke-test", targets, smoke_prerequisites, node_labels)


def _selected_patches(
    plan: Plan, node_labels: dict[str, list[pulumi.Resource]], groups: tuple[DriverGroup, ...]
) -> list[pulumi.Resource]:
    """The NodePatches that give bare-metal nodes the driver-group label these groups' NVIDIADrivers select."""
    names = {group.name for group in groups}
    return [
        patch
        for node, patches in node_labels.items()
        if set(plan.driver_labels(node).values()) & names
        for patch in patches
    ]


def _proof(
    plan: Plan, platform: Platform, step: str, groups: tuple[DriverGroup, ...], depends_on: list[pulumi.Resource]
) -> list[pulumi.Resource]:
    """The proof Job of one step (``components.smoke_test.proof``); returns what the next step waits for.

    A driver step proves its ``groups``' pools; with no groups (the hosts own the driver) the step proves the MIG
    layouts of the pools the program re-partitions.

    Its CUDA pods use the smoke-test image and each pool's first smoke resource: with the smoke test off, or
    every pool of the step skipped, there is no proof and the next step waits for ``depends_on`` as before.
    """
    settings = plan.proof_settings(step, groups)
    if settings is None or platform.gpu_operator is None:
        return depends_on
    stack = plan.config
    provider = platform.access.provider
    if platform.proof_access is None:
        platform.proof_access = GpuProofAccess(
            "gpu-proof-access",
            ProofAccessArgs(stack.gpu_operator.namespace, provider, depends_on=platform.gpu_operator.ready),
        )
    platform.proofs[step] = GpuProof(
        f"gpu-proof-{step}", ProofArgs(settings, platform.proof_access, provider, depends_on=depends_on)
    )
    return platform.proofs[step].ready


def _gpu_drivers(
    plan: Plan,
    provider: k8s.Provider,
    name: str,
    groups: tuple[DriverGroup, ...],
    depends_on: list[pulumi.Resource],
) -> GpuDrivers:
    operator_plan = plan.operator
    if operator_plan is None:  # callers check; kept for the type checker
        raise ValueError("NVIDIADriver resources need the GPU Operator")
    return GpuDrivers(
        name,
        GpuDriversArgs(
            objects={g.name: operator_plan.nvidia_drivers[g.name] for g in groups},
            provider=provider,
            timeout_seconds=plan.config.gpu_operator.timeout_seconds,
            depends_on=depends_on,
        ),
    )


def _smoke_test(
    plan: Plan,
    provider: k8s.Provider,
    name: str,
    targets: list[SmokeTarget],
    depends_on: list[pulumi.Resource],
    pool_prerequisites: dict[str, list[pulumi.Resource]],
) -> GpuSmokeTest:
    stack = plan.config
    return GpuSmokeTest(
        name,
        SmokeTestArgs(
            config=stack.smoke_test,
            targets=targets,
            namespace=stack.gpu_operator.namespace,
            provider=provider,
            depends_on=depends_on,
            pool_prerequisites={t.pool: pool_prerequisites[t.pool] for t in targets if t.pool in pool_prerequisites},
        ),
    )
