"""Builds the whole platform from the plan, in dependency order.

Each capability is one ComponentResource; this module only wires them together, reading the plan
(nothing is re-derived here), so ``__main__.py`` stays a few lines and tests build the same platform
under mocks. What gives the cluster its GPU nodes is the stack's platform's (``plan.platform``, picked by
``cluster.kind``): this module calls it without knowing which it is. Which driver steps there are, what each
registers and under which names is the plan's too (``Plan.driver_steps``, ``components.stack.wiring``).

Registration stays linear in the fleet: a resource depends on the resources it waits for (each
component's ``ready``, and for a smoke Job only its own node's NodePatch), never on a component (the SDK
expands that to every child), and never on what it already waits for through another dependency; the
SDK's cycle check is answered without walking the graph where it can be (``base.dependency_graph``).

``tools/wiring_guard.py`` (``make lint``) keeps this module to wiring: no import of a deciding function, no call
through an attribute, no comparison, no inline filter or computation, no setting read out of the stack config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from components.base import dependency_graph
from components.base.runtime_mode import warning
from components.cluster.access import ClusterAccess
from components.gpu_operator.component import GpuOperator, GpuOperatorArgs
from components.gpu_operator.nvidia_drivers import GpuDrivers, GpuDriversArgs
from components.kubeflow.component import Kubeflow, KubeflowArgs
from components.node_agent.component import NodeAgent, NodeAgentArgs
from components.observability.component import Observability, ObservabilityArgs
from components.proof.component import GpuProof, GpuProofAccess, ProofAccessArgs, ProofArgs
from components.smoke_test.component import GpuSmokeTest, SmokeTestArgs
from components.stack.load import StackSecrets
from components.stack.plan import Plan
from components.stack.platforms.base import NodeLabelling, PlatformNodes

if TYPE_CHECKING:
    from collections.abc import Mapping


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
    #: Per driver step (``canary``, ``main``, ``mig``: ``Plan.driver_steps``): its NVIDIADriver resources, its
    #: awaited proof Job and its smoke Jobs, where the step has them.
    drivers: dict[str, GpuDrivers] = field(default_factory=dict)
    proofs: dict[str, GpuProof] = field(default_factory=dict)
    smoke_tests: dict[str, GpuSmokeTest] = field(default_factory=dict)
    #: The proofs' shared namespace, ServiceAccount, RBAC and code (created with the first proof).
    proof_access: GpuProofAccess | None = None
    observability: Observability | None = None


def build_platform(plan: Plan, secrets: StackSecrets) -> Platform:
    """Register every resource the plan declares."""
    dependency_graph.install()
    stack = plan.config
    for message in plan.warnings:
        warning(message)
    access_args = plan.platform.cluster_access(plan, secrets.platform)
    platform = Platform(plan=plan, access=ClusterAccess(plan.cluster_name, access_args))
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
                gpu_models=plan.gpu_models,
                provider=provider,
                depends_on=platform.nodes.ready,
            ),
        )
    operator_ready = platform.gpu_operator.ready if platform.gpu_operator is not None else []
    platform.labelling = plan.platform.label_nodes(plan, provider, operator_ready)
    if plan.node_agent_pools and platform.gpu_operator is not None:
        platform.node_agent = NodeAgent(
            "node-agent",
            NodeAgentArgs(
                config=stack.node_agent,
                pool_budgets=plan.node_agent_budgets,
                mig_resources=plan.node_agent_mig_resources,
                provider=provider,
                depends_on=platform.gpu_operator.ready,
                operator_namespace=plan.operator_namespace,
                runtime_class=plan.node_agent_runtime_class,
                declarations=plan.pool_declarations,
                memberships=plan.node_agent_memberships,
            ),
        )
    if platform.gpu_operator is not None:
        _driver_steps(plan, platform, platform.gpu_operator)
    if plan.observability is not None and platform.gpu_operator is not None:
        platform.observability = Observability(
            "observability",
            ObservabilityArgs(plan=plan.observability, provider=provider, depends_on=platform.gpu_operator.ready),
        )
    if plan.kubeflow is not None and secrets.dex_password_hash is not None:
        platform.kubeflow = Kubeflow(
            "kubeflow",
            KubeflowArgs(
                config=plan.kubeflow,
                stack=pulumi.get_stack(),
                provider=provider,
                dex_password_hash=secrets.dex_password_hash,
                oidc_client_secret=secrets.oidc_client_secret,
                gpus=plan.kubeflow_gpus,
            ),
        )
    return platform


def _driver_steps(plan: Plan, platform: Platform, operator: GpuOperator) -> None:
    """Each driver step's NVIDIADriver resources, proof Job and smoke Jobs (``Plan.driver_steps``), in order.

    canary pools' NVIDIADriver -> the canary step's proof Job (every node of the canary pools on the declared
    driver, CUDA on each) -> their smoke Jobs -> every other pool's NVIDIADriver -> that step's proof -> their smoke
    Jobs. A lagging canary node fails ``pulumi up`` (the proof names it) before Pulumi touches the other pools'
    drivers: they depend on the canary's proof and smoke Jobs, never on an NVIDIADriver's status. Every Job waits
    for the release (which waits for node groups and host preparation) and for its own node's NodePatch (whose MIG
    label names a config the release defines); an NVIDIADriver waits for the patches of the nodes it selects. A step
    without NVIDIADrivers starts from the release; a step without a proof goes on from its NVIDIADrivers.
    """
    provider = platform.access.provider
    node_labels = {node: [patch] for node, patch in platform.labelling.patches.items()}
    previous: list[pulumi.Resource] = operator.ready
    for step in plan.driver_steps:
        ready: list[pulumi.Resource] = operator.ready
        if step.drivers is not None:
            platform.drivers[step.name] = GpuDrivers(
                step.drivers.name,
                GpuDriversArgs(
                    objects=step.drivers.objects,
                    provider=provider,
                    timeout_seconds=step.drivers.timeout_seconds,
                    depends_on=[*previous, *_patches(node_labels, step.drivers.nodes)],
                ),
            )
            ready = platform.drivers[step.name].ready
        if step.proof is not None:
            every_label = platform.labelling.ready if step.proof.after_every_label else []
            platform.proofs[step.name] = GpuProof(
                step.proof.name,
                ProofArgs(
                    step.proof.settings,
                    _proof_access(plan, platform, operator),
                    provider,
                    depends_on=[*ready, *every_label],
                ),
            )
            ready = platform.proofs[step.name].ready
        previous = ready
        if step.smoke_test is not None:
            platform.smoke_tests[step.name] = GpuSmokeTest(
                step.smoke_test.name,
                SmokeTestArgs(
                    config=plan.config.smoke_test,
                    targets=list(step.smoke_test.targets),
                    namespace=plan.operator_namespace,
                    provider=provider,
                    depends_on=ready,
                    pool_prerequisites=node_labels,
                ),
            )
            previous = [*ready, *platform.smoke_tests[step.name].ready]


def _patches(node_labels: Mapping[str, list[pulumi.Resource]], nodes: tuple[str, ...]) -> list[pulumi.Resource]:
    """The NodePatches of ``nodes`` (a node its platform labels at creation has none)."""
    return [patch for node in nodes for patch in node_labels.get(node, [])]


def _proof_access(plan: Plan, platform: Platform, operator: GpuOperator) -> GpuProofAccess:
    """The proofs' shared access, registered with the first proof."""
    if platform.proof_access is None:
        platform.proof_access = GpuProofAccess(
            "gpu-proof-access",
            ProofAccessArgs(plan.operator_namespace, platform.access.provider, depends_on=operator.ready),
        )
    return platform.proof_access
