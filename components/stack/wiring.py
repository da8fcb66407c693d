"""The driver steps the program wires, decided from the plan: which NVIDIADriver objects, proof and smoke Jobs each
step has, under which resource names, and whose NodePatches its NVIDIADrivers wait for.

A step is what changes together and is proven together before the next step starts: the canary pools' drivers,
then every other pool's (``main``); where the hosts own the driver, the one step proves the MIG layouts the program
re-partitions (``mig``). The program (``components.stack.program``) registers each step's pieces in order and makes
each wait for what came before: a step's NVIDIADrivers wait for the previous step (its proof, else its drivers, and
its smoke Jobs) and for the NodePatches of the nodes they select; its proof for its NVIDIADrivers (without any, for
the release, and for every node's labels where ``after_every_label``); its smoke Jobs for its proof (else its
drivers, else the release) and for their own node's patch. Which pieces a step has is decided here, so the program
holds no condition of its own beyond "is there one".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.gpu_operator.drivers import DriverGroup
from components.smoke_test.targets import SmokeTarget

if TYPE_CHECKING:
    from components.stack.plan import Plan

#: The step names: the canary pools' drivers, every other pool's, and the MIG proof where the hosts own the driver.
CANARY = "canary"
MAIN = "main"  # one name with and without canaries, in both driver modes: the same proof Job URN
MIG = "mig"


@dataclass(frozen=True)
class StepDrivers:
    """The NVIDIADriver resources of one step (``components.gpu_operator.nvidia_drivers.GpuDrivers``)."""

    #: The GpuDrivers component's name.
    name: str
    #: Driver group -> its NVIDIADriver object.
    objects: dict[str, dict[str, Any]]
    #: The nodes (pools) these NVIDIADrivers select by their driver-group label: they wait for the NodePatch that
    #: gives a node the label, where its platform applies one (a Yandex node group has the label from creation).
    nodes: tuple[str, ...]
    #: How long Pulumi waits for each NVIDIADriver (``gpuOperator.timeoutSeconds``).
    timeout_seconds: int


@dataclass(frozen=True)
class StepProof:
    """The awaited proof Job of one step (``components.proof.component.GpuProof``)."""

    #: The GpuProof component's name.
    name: str
    #: Its ``ProofSettings`` (``Plan.proof_settings``).
    settings: dict[str, Any]
    #: It also waits for every node's labels (the MIG proof: the layouts it proves are the labels' MIG configs).
    after_every_label: bool = False


@dataclass(frozen=True)
class StepSmokeTest:
    """The smoke Jobs of one step (``components.smoke_test.component.GpuSmokeTest``); there may be no target."""

    #: The GpuSmokeTest component's name.
    name: str
    targets: tuple[SmokeTarget, ...]


@dataclass(frozen=True)
class DriverStep:
    """One step: what it registers (None: that piece is absent), in the order the program registers them."""

    name: str  # CANARY, MAIN or MIG
    drivers: StepDrivers | None = None
    proof: StepProof | None = None
    smoke_test: StepSmokeTest | None = None


def driver_steps(plan: Plan) -> tuple[DriverStep, ...]:
    """The steps in order; none without the GPU Operator.

    The canary step (only where some pools are canaries) has the canaries' NVIDIADrivers, their proof and their
    smoke Jobs. The next step has every other pool's NVIDIADrivers where pools run different drivers, the proof of
    its pools where the operator owns the driver (of the MIG layouts where the hosts own it), and the smoke Jobs of
    every pool that is no canary. Proofs need the smoke test (its image and resources), as the smoke Jobs do.
    """
    operator = plan.operator
    if operator is None:
        return ()
    driver = operator.driver
    smoke = plan.config.smoke_test.enabled
    canary_pools = {p.pool for g in driver.canary_groups for p in g.pools}
    steps: list[DriverStep] = []
    if canary_pools:
        steps.append(
            DriverStep(
                CANARY,
                drivers=_drivers(plan, "gpu-drivers-canary", driver.canary_groups),
                proof=_proof(plan, CANARY, driver.canary_groups),
                smoke_test=_smoke_test(plan, "gpu-smoke-test-canary", lambda pool: pool in canary_pools)
                if smoke
                else None,
            )
        )
    later = driver.later_groups
    drivers = _drivers(plan, "gpu-drivers", later) if operator.nvidia_drivers and later else None
    if driver.owner == "operator" and later:
        name, proof = MAIN, _proof(plan, MAIN, later)
    elif driver.owner == "host" and smoke:
        # The hosts own the driver: the proof closes the MIG layouts of the pools the program re-partitions, after
        # every node's MIG label (linear: one edge each); each smoke Job waits for the proof and its own node's label.
        name, proof = MIG, _proof(plan, MIG, (), after_every_label=True)
    else:
        name, proof = MAIN, None
    smoke_test = _smoke_test(plan, "gpu-smoke-test", lambda pool: pool not in canary_pools) if smoke else None
    steps.append(DriverStep(name, drivers=drivers, proof=proof, smoke_test=smoke_test))
    return tuple(steps)


def _drivers(plan: Plan, name: str, groups: tuple[DriverGroup, ...]) -> StepDrivers:
    operator = plan.operator
    if operator is None:  # callers check; kept for the type checker
        raise ValueError("NVIDIADriver resources need the GPU Operator")
    names = {group.name for group in groups}
    return StepDrivers(
        name=name,
        objects={group.name: operator.nvidia_drivers[group.name] for group in groups},
        nodes=tuple(pool.name for pool in plan.pools if set(plan.driver_labels(pool.name).values()) & names),
        timeout_seconds=plan.config.gpu_operator.timeout_seconds,
    )


def _proof(
    plan: Plan, step: str, groups: tuple[DriverGroup, ...], *, after_every_label: bool = False
) -> StepProof | None:
    """The step's proof, or None where there is none (the smoke test off, or every pool of the step skipped)."""
    settings = plan.proof_settings(step, groups)
    if settings is None:
        return None
    return StepProof(f"gpu-proof-{step}", settings, after_every_label)


def _smoke_test(plan: Plan, name: str, includes: Callable[[str], bool]) -> StepSmokeTest:
    return StepSmokeTest(name, tuple(target for target in plan.smoke_targets if includes(target.pool)))
