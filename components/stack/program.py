"""Builds the whole platform from the plan, in dependency order.

Each capability is one ComponentResource; this module only wires them together, reading the plan
(nothing is re-derived here), so ``__main__.py`` stays a few lines and tests build the same platform
under mocks. The Yandex SDK is imported only by a stack that has Yandex resources: a bare-metal
stack never pays for loading it.

Registration stays linear in the fleet: a resource depends on the resources it waits for (each
component's ``ready``, and for a smoke Job only its own node's NodePatch), never on a component (the SDK
expands that to every child), and never on what it already waits for through another dependency; the
SDK's cycle check is answered without walking the graph where it can be (``base.dependency_graph``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from components.bare_metal.host_preparation import HostPreparation, HostPreparationArgs
from components.bare_metal.node_labels import BareMetalNodeLabels, NodeLabelsArgs
from components.base import dependency_graph
from components.base.runtime_mode import warning
from components.cluster.access import ClusterAccess, ClusterAccessArgs
from components.cluster.config import YandexClusterConfig
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

if TYPE_CHECKING:
    import pulumi_kubernetes as k8s

    from components.yandex.node_group import GpuNodeGroup


@dataclass
class Platform:
    """Everything the program created, for the outputs module."""

    plan: Plan
    access: ClusterAccess
    node_groups: dict[str, GpuNodeGroup] = field(default_factory=dict)
    gpu_operator: GpuOperator | None = None
    kubeflow: Kubeflow | None = None
    host_preparation: HostPreparation | None = None
    node_agent: NodeAgent | None = None
    node_labels: BareMetalNodeLabels | None = None
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
    platform = Platform(plan=plan, access=_cluster_access(plan, secrets))
    provider = platform.access.provider
    operator_prerequisites: list[pulumi.Resource] = []
    if stack.node_groups:
        platform.node_groups = _node_groups(plan, platform.access)
        operator_prerequisites.extend(r for group in platform.node_groups.values() for r in group.ready)
    if stack.bare_metal is not None:
        operator_prerequisites.extend(_bare_metal(plan, platform, secrets))
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
                depends_on=operator_prerequisites,
            ),
        )
    if stack.bare_metal is not None:
        platform.node_labels = _bare_metal_labels(plan, platform)
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
    patches = platform.node_labels.patches if platform.node_labels is not None else {}
    node_labels: dict[str, list[pulumi.Resource]] = {node: [patch] for node, patch in patches.items()}
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
        mig_ready = platform.node_labels.ready if platform.node_labels is not None else []
        proven = _proof(plan, platform, "mig", (), [*operator.ready, *mig_ready])
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


def _cluster_access(plan: Plan, secrets: StackSecrets) -> ClusterAccess:
    cluster = plan.config.cluster
    if isinstance(cluster, YandexClusterConfig):
        # Imported here, not at the top: only a Yandex stack loads the Yandex SDK (seconds of import).
        from components.yandex.cluster import find_cluster

        found = find_cluster(cluster.name, cluster.cluster_id, cluster.endpoint)
        args = ClusterAccessArgs(cluster, found.kubeconfig, cluster_id=found.cluster_id, endpoint=found.endpoint)
    elif secrets.kubeconfig is not None:
        args = ClusterAccessArgs(cluster, secrets.kubeconfig)
    else:
        raise ValueError("bare-metal cluster access needs a kubeconfig")
    return ClusterAccess(cluster.name, args)


def _node_groups(plan: Plan, access: ClusterAccess) -> dict[str, GpuNodeGroup]:
    from components.yandex.node_group import GpuNodeGroup, GpuNodeGroupArgs  # Yandex stacks only (see above)

    stack = plan.config
    return {
        group_name: GpuNodeGroup(
            f"gpu-{group_name}",
            GpuNodeGroupArgs(
                group_name=group_name,
                group=group,
                cluster_id=access.cluster_id,
                cluster_name=stack.cluster.name,
                kubernetes_version=stack.cluster.kubernetes_version,
                extra_labels=plan.node_labels(group_name),
                environment=stack.environment.name,
                production=stack.environment.production,
            ),
        )
        for group_name, group in sorted(stack.node_groups.items())
    }


def _bare_metal(plan: Plan, platform: Platform, secrets: StackSecrets) -> list[pulumi.Resource]:
    """Host preparation over SSH; returns what the GPU Operator must wait for (the labels come after it)."""
    stack = plan.config
    bare_metal = stack.bare_metal
    if bare_metal is None:
        return []
    created: list[pulumi.Resource] = []
    if bare_metal.host_preparation.enabled and secrets.ssh_private_key is not None:
        hosts = plan.host_preparation
        platform.host_preparation = HostPreparation(
            "host-preparation",
            HostPreparationArgs(
                config=bare_metal,
                required_min_driver=hosts.required_min_driver,
                expected_driver_version=hosts.expected_driver_version,
                private_key=secrets.ssh_private_key,
                bastion_private_key=secrets.bastion_private_key,
                driverless=hosts.driverless,
            ),
        )
        created.extend(platform.host_preparation.ready)
    return created


def _bare_metal_labels(plan: Plan, platform: Platform) -> BareMetalNodeLabels:
    """One NodePatch per bare-metal node (``gpu-nodes-<node>``): the platform, driver-group and MIG labels.

    After the release: the MIG label names a config of the release's mig-parted ConfigMap, and mig-manager
    reads that file only when the label changes (NVIDIA/mig-parted ``cmd/nvidia-mig-manager/main.go``: the
    node informer's UpdateFunc fires on a changed ``nvidia.com/mig.config`` only; a failed apply waits for the
    next change), so a label applied before its config exists would never be applied. The operator needs
    nothing of ours before it starts: its NFD worker (selected by ``gpu-platform.io/gpu``) starts on a node
    when the node's patch lands, and each smoke Job and NVIDIADriver waits for the patches of its nodes.
    """
    return BareMetalNodeLabels(
        "gpu-nodes",
        NodeLabelsArgs(
            labels=plan.bare_metal_node_labels,
            annotations=plan.bare_metal_node_annotations,
            provider=platform.access.provider,
            depends_on=platform.gpu_operator.ready if platform.gpu_operator is not None else [],
        ),
    )
