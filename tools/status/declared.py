"""What the stack declares for each GPU node, decided by the stack's own plan, offline.

The stack file is read by the preview's strict reader (``preview.run.stack_file``), handed to the program's own
config loader (``components.stack.load.load_stack_config``) as the engine hands it to ``__main__.py``, and
planned by ``components.stack.plan.plan_stack``: no Pulumi CLI, no credentials, no engine. The loader reads the
Pulumi SDK's config ContextVars; they are set in a copied context, so nothing of it outlives the call.

What a node must show is what the proof of a driver step checks (``components.proof.steps``): the
declared driver version, the image its driver container runs and the NVIDIADriver that owns the node; the MIG
config and exactly the GPU resources the plan says a node advertises. A pool the stack proves (a proof Job step
covers it) is expected to carry a proof record.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pulumi.runtime import set_all_config

from components.base.problems import StackConfigError
from components.catalog.names import HOSTNAME_LABEL, MIG_CONFIG_LABEL
from components.proof.steps import step_settings
from components.stack.load import load_stack_config, recorded_mig_plan
from components.stack.plan import Plan, plan_stack
from preview.run.stack_file import load_stack_file


@dataclass(frozen=True)
class DriverDeclaration:
    """The driver a pool's nodes must run."""

    owner: str  #: "operator" (the GPU Operator's driver pods) or "host" (the hosts' own driver)
    version: str  #: what GPU Feature Discovery must report
    image: str = ""  #: what the driver container's image starts with (operator only)
    resource: str = ""  #: the NVIDIADriver that must own the node ("": the ClusterPolicy's driver, or host)


@dataclass(frozen=True)
class PoolDeclaration:
    """One ``gpuPools`` entry of the stack: what each of its nodes must show."""

    gpu_pool: str  #: the key in the ``gpuPools`` output: a node group's name, or a bare-metal node's name
    pool: str  #: the nodes' ``gpu-platform.io/node-group`` label: the group, or the bare-metal ``pool``
    config_path: str  #: where the config declares it (``nodeGroups.a100``, ``bareMetal.nodes[0]``)
    #: The labels that pick exactly its nodes (``GpuPool.node_selector``): a group's label, a host's name.
    node_selector: Mapping[str, str]
    labels: Mapping[str, str]  #: every label the program puts on the nodes (the MIG config label aside)
    driver: DriverDeclaration | None  #: None: the GPU Operator is off, nothing declares a driver
    mig_config: str | None  #: the ``nvidia.com/mig.config`` the nodes must have applied (None: no MIG layout)
    resources: Mapping[str, int]  #: the GPU resources a node advertises (allocatable), exactly
    proven: bool  #: a proof step of the stack covers the pool: its nodes are expected to carry a proof record


@dataclass(frozen=True)
class Declaration:
    """The whole stack, as the status command compares it with the cluster."""

    stack: str
    cluster: str
    kind: str
    operator_namespace: str | None  #: where the driver pods are (None: the GPU Operator is off)
    pools: tuple[PoolDeclaration, ...]
    #: Pools of the stack that are not GPU pools (a node group of ``gpus: 0``): their nodes are not reported as
    #: nodes of no pool.
    other_pools: frozenset[str] = field(default_factory=frozenset)

    def for_node(self, name: str, labels: Mapping[str, str]) -> PoolDeclaration | None:
        """The pool a live node belongs to: the first whose node selector the node's labels match (a host's
        name selector matches the node's name: a node that lost its hostname label is still that host)."""
        live = {HOSTNAME_LABEL: name, **labels}
        return next((p for p in self.pools if all(live.get(k) == v for k, v in p.node_selector.items())), None)

    @property
    def bare_metal_hosts(self) -> tuple[PoolDeclaration, ...]:
        """Pools of one named host (selected by its name): a host missing from the cluster is reported."""
        return tuple(pool for pool in self.pools if HOSTNAME_LABEL in pool.node_selector)


class DeclarationError(Exception):
    """The stack cannot be planned (no stack file, a refused config); ``str()`` says why, one problem a line."""


def load_plan(stack: str, root: Path) -> Plan:
    """The stack's plan, as ``pulumi up`` would compute it (secure values are the preview's offline dummies)."""
    try:
        stack_file = load_stack_file(root, stack)
    except (FileNotFoundError, ValueError) as error:  # StackFileError is a ValueError
        raise DeclarationError(str(error)) from None

    def plan_in_context() -> Plan:
        set_all_config(stack_file.config, secret_keys=stack_file.secret_keys)
        return plan_stack(load_stack_config(), recorded_mig_plan(root, stack))

    try:
        return contextvars.copy_context().run(plan_in_context)
    except StackConfigError as error:
        lines = [f"Pulumi.{stack}.yaml is refused (pulumi up would stop too):", *(str(p) for p in error.problems)]
        raise DeclarationError("\n  ".join(lines)) from None


def proven_pools(plan: Plan) -> frozenset[str]:
    """The pools a proof step of the program covers (``components.stack.program``: the canary and main driver
    steps where the operator owns the driver, the MIG step where the hosts do); none with the smoke test off."""
    operator = plan.operator
    if operator is None:
        return frozenset()
    driver = operator.driver
    if driver.owner == "operator":
        steps = [("canary", driver.canary_groups), ("main", driver.later_groups)]
    else:
        steps = [("mig", ())]
    proven: set[str] = set()
    for step, groups in steps:
        if step != "mig" and not groups:
            continue
        settings = plan.proof_settings(step, groups)
        proven.update(entry["pool"] for entry in (settings or {}).get("pools", []))
    return frozenset(proven)


def _drivers(plan: Plan) -> dict[str, DriverDeclaration]:
    """Pool -> its declared driver: the same entries the driver steps' proofs check (``step_settings``)."""
    operator = plan.operator
    if operator is None:
        return {}
    driver = operator.driver
    if driver.owner != "operator":
        return {pool.name: DriverDeclaration("host", driver.version) for pool in plan.pools}
    every_pool = {pool.name: "" for pool in plan.pools}
    settings = step_settings(
        "status",
        driver.groups,
        driver,
        plan.pools,
        values=operator.values,
        objects=operator.nvidia_drivers,
        chart_version=plan.config.gpu_operator.chart_version,
        resources=every_pool,
        mig={},
        image="",
        namespace="",
        operator_namespace="",
        deadline_seconds=0,
    )
    return {
        entry["pool"]: DriverDeclaration("operator", entry["driver_version"], entry["driver_image"], entry["owner"])
        for entry in (settings or {}).get("pools", [])
    }


def declaration(plan: Plan, stack: str) -> Declaration:
    """Every pool of ``plan`` with what its nodes must show."""
    config = plan.config
    drivers = _drivers(plan)
    proven = proven_pools(plan)
    declared_labels = plan.platform.declared_node_labels(plan)
    pools = []
    for pool in plan.pools:
        labels = dict(declared_labels[pool.name])
        mig_config = plan.mig.labels(pool.name).get(MIG_CONFIG_LABEL)
        labels.pop(MIG_CONFIG_LABEL, None)  # compared as the MIG layout, with mig-manager's answer
        pools.append(
            PoolDeclaration(
                gpu_pool=pool.name,
                pool=pool.pool_label,
                config_path=pool.config_path,
                node_selector=dict(pool.node_selector),
                labels=dict(sorted(labels.items())),
                driver=drivers.get(pool.name),
                mig_config=mig_config,
                resources=dict(sorted(plan.mig.resources_per_node(pool).items())),
                proven=pool.name in proven,
            )
        )
    return Declaration(
        stack=stack,
        cluster=config.cluster.name,
        kind=config.cluster.kind,
        operator_namespace=config.gpu_operator.namespace if plan.operator is not None else None,
        pools=tuple(pools),
        other_pools=frozenset(plan.platform.other_pools(config)),
    )


def load_declaration(stack: str, root: Path) -> Declaration:
    """The declaration of ``Pulumi.<stack>.yaml`` in ``root``; ``DeclarationError`` when it cannot be planned."""
    return declaration(load_plan(stack, root), stack)
