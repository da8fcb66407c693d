"""The fleet-wide driver decision: who owns the driver, which version runs, and what is wrong with it.

One function, ``plan_driver``, answers all of it once per run: the stack plan passes the pools and
the few facts from other sections the checks need (``DriverContext``) and gets back either a
``DriverPlan`` or the problems, never both to reconcile later.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from components.base.problems import Problem, join_path
from components.catalog import gpu_operator_chart as chart
from components.catalog.drivers import (
    CudaCheckMode,
    architecture_problem,
    cuda_problem,
    max_cuda_for_driver,
    two_drivers_on_node,
)
from components.catalog.gpus import Architecture
from components.catalog.pools import GpuPool
from components.gpu_operator.config import GpuOperatorConfig

OPERATOR_PATH = "gpuOperator"


@dataclass(frozen=True)
class DriverPlan:
    """Who owns the driver and which version runs, with the config key that set it."""

    owner: str
    version: str
    config_key: str
    explicit: bool

    @property
    def max_cuda(self) -> str:
        """The newest CUDA level this driver runs."""
        return max_cuda_for_driver(self.version)


@dataclass(frozen=True)
class DriverContext:
    """What the driver checks need from other sections of the stack (computed by the stack plan)."""

    bare_metal: bool
    cuda_version: str
    cuda_check: CudaCheckMode
    host_configures_containerd: bool = False
    smoke_image_cuda: str | None = None  # None when the smoke test is off


def driver_owner(operator: GpuOperatorConfig, pools: Sequence[GpuPool], bare_metal: bool) -> str:
    """The configured owner, or the default: operator when any pool is driverless, else host."""
    if operator.driver.owner is not None:
        return operator.driver.owner
    if bare_metal:
        return "host"
    operator_needed = any(not pool.preinstalled_driver or pool.host_driver_removal for pool in pools)
    return "operator" if operator_needed else "host"


def toolkit_enabled(operator: GpuOperatorConfig, host_configures_containerd: bool) -> bool:
    """The operator's toolkit runs unless the hosts configure containerd (both would fight over it)."""
    return (not host_configures_containerd) if operator.toolkit is None else operator.toolkit


def plan_driver(
    operator: GpuOperatorConfig, pools: Sequence[GpuPool], context: DriverContext
) -> tuple[DriverPlan | None, list[Problem]]:
    """The driver the GPU nodes will run, or the problems that stop it (None and no problems: no operator)."""
    if not operator.enabled or not pools:
        return None, []
    problems = list(_ownership_problems(operator, pools, context))
    owner = driver_owner(operator, pools, context.bare_metal)
    if owner == "operator" and context.bare_metal:
        return None, problems
    if owner == "operator":
        key = join_path(OPERATOR_PATH, "driver", "version")
        version = operator.driver.version or chart.release(operator.chart_version).default_driver_version
        plan = DriverPlan("operator", version, key, operator.driver.version is not None)
    elif operator.host_driver is not None:
        key = join_path(OPERATOR_PATH, "hostDriver", "version")
        plan = DriverPlan("host", operator.host_driver.version, key, True)
    else:
        missing = Problem(
            join_path(OPERATOR_PATH, "hostDriver", "version"),
            "is required when the hosts own the driver: declare the driver version the nodes run, e.g. 580.95.05",
        )
        return None, [*problems, missing]
    problems.extend(_version_problems(operator, pools, context, plan))
    return (None, problems) if problems else (plan, [])


def _ownership_problems(
    operator: GpuOperatorConfig, pools: Sequence[GpuPool], context: DriverContext
) -> Iterator[Problem]:
    owner = driver_owner(operator, pools, context.bare_metal)
    if owner == "operator" and context.bare_metal:
        yield Problem(
            join_path(OPERATOR_PATH, "driver", "owner"),
            "operator cannot own the driver on bare-metal nodes: their driver is installed on the host "
            "(checked by host preparation); use host and declare gpuOperator.hostDriver.version",
        )
        return
    for pool in pools:
        if owner == "host" and pool.host_driver_removal:
            yield Problem(
                join_path(pool.config_path, "hostDriverRemoval"),
                "removal hands the node to the GPU Operator's driver, but gpuOperator.driver.owner is host "
                "(driver.enabled=false), so nothing would replace the removed driver; set gpuOperator.driver.owner: operator",
            )
        if two_drivers_on_node(
            operator_installs_driver=owner == "operator",
            preinstalled=pool.preinstalled_driver,
            handed_over=pool.host_driver_removal,
        ):
            yield Problem(
                join_path(pool.config_path, "hostDriverRemoval"),
                "this group boots with a preinstalled driver while the GPU Operator owns the driver "
                "(gpuOperator.driver.owner: operator), so two drivers would fight; recreate the group with "
                "gpuEnvironment: runc (recommended) or set hostDriverRemoval: true",
            )
        if owner == "host" and not pool.preinstalled_driver and not context.bare_metal:
            yield Problem(
                join_path(pool.config_path, "gpuEnvironment"),
                "runc nodes have no driver, but gpuOperator.driver.owner is host; use owner operator "
                "or gpuEnvironment: runc_drivers_cuda",
            )


def _version_problems(
    operator: GpuOperatorConfig, pools: Sequence[GpuPool], context: DriverContext, plan: DriverPlan
) -> Iterator[Problem]:
    default_note = "" if plan.explicit else f" (the chart {operator.chart_version} default; set {plan.config_key})"
    for architecture in sorted({pool.model.architecture for pool in pools}, key=list(Architecture).index):
        problem = architecture_problem(plan.version, architecture)
        if problem:
            users = ", ".join(p.config_path for p in pools if p.model.architecture == architecture)
            yield Problem(plan.config_key, f"{problem}{default_note}; used by {users}")
    if context.smoke_image_cuda is not None:
        smoke = cuda_problem(plan.version, context.smoke_image_cuda, context.cuda_check)
        if smoke:
            yield Problem(
                "smokeTest.imageCuda",
                f"the smoke-test image cannot run: {smoke}; pick an image built with an older CUDA",
            )
    cuda = cuda_problem(plan.version, context.cuda_version, context.cuda_check)
    if cuda:
        yield Problem(plan.config_key, f"{cuda}{default_note}; the workloads' CUDA is set in cuda.version")
    if operator.toolkit and context.host_configures_containerd:
        yield Problem(
            join_path(OPERATOR_PATH, "toolkit"),
            "true would make the operator's container toolkit and host preparation both rewrite containerd's "
            "config; leave it unset (false) or set bareMetal.hostPreparation.configureContainerd: false",
        )
    if operator.driver.kernel_module_type == "open" and any(p.model.architecture == Architecture.VOLTA for p in pools):
        yield Problem(
            join_path(OPERATOR_PATH, "driver", "kernelModuleType"),
            "open kernel modules need Turing or newer; Volta (V100) needs proprietary or auto",
        )
