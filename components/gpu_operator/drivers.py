"""The driver decision: who owns the driver, which version each pool runs, and what is wrong with it.

One function, ``plan_driver``, answers all of it once per run: the stack plan passes the pools, each
pool's own driver settings (``PoolDriverRequest``) and the few facts from other sections the checks
need (``DriverContext``) and gets back either a ``DriverPlan`` or the problems, never both to reconcile
later. Each pool's driver is its own keys over ``gpuOperator.driver``'s; pools that end up with the
same driver share a ``DriverGroup`` (one ``NVIDIADriver`` resource when there is more than one group,
otherwise the ClusterPolicy's driver, exactly as a stack without per-pool drivers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from components.base.merge import deep_merge
from components.base.problems import Problem, join_path
from components.catalog import gpu_operator_chart as chart
from components.catalog.drivers import (
    OPERATOR_DRIVER_ROOT,
    CudaCheckMode,
    architecture_problem,
    cuda_problem,
    max_cuda_for_driver,
    two_drivers_on_node,
)
from components.catalog.gpus import Architecture
from components.catalog.nvidia_driver import nodes_per_wave, resource_name, upgrade_waves
from components.catalog.pools import GpuPool
from components.catalog.versions import parse_version
from components.gpu_operator.config import GpuOperatorConfig
from components.gpu_operator.pool_config import PoolDriverConfig, UpgradePolicy

OPERATOR_PATH = "gpuOperator"


@dataclass(frozen=True)
class PoolDriverRequest:
    """What one pool's config says about its driver: the ``driver`` key's path and value (None: unset)."""

    path: str
    config: PoolDriverConfig | None


@dataclass(frozen=True)
class PoolDriver:
    """The operator-managed driver one pool runs, each setting resolved (the pool's, else the stack's)."""

    pool: str
    version: str
    version_key: str  # the config key that set the version (the pool's, gpuOperator.driver.version, the chart)
    explicit: bool  # False: the chart's default version
    kernel_module_type: str
    kernel_module_key: str
    use_precompiled: bool
    upgrade_policy: UpgradePolicy
    upgrade_policy_key: str
    cuda: str  # the CUDA level the pool's workloads need
    cuda_key: str
    canary: bool
    nodes: int  # the most nodes the pool can have (what an upgrade walks through)

    @property
    def max_cuda(self) -> str:
        """The newest CUDA level this pool's driver runs."""
        return max_cuda_for_driver(self.version)

    @property
    def auto_upgrade_key(self) -> str:
        """The config key of the pool's ``autoUpgrade`` (the pool's own policy, else the stack's)."""
        return self.upgrade_policy_key.rsplit(".", 1)[0] + ".autoUpgrade"

    @property
    def inherits_version_for_own_cuda(self) -> bool:
        """The pool sets its own CUDA level but takes the version from the stack (or the chart)."""
        own_cuda = self.cuda_key != "cuda.version"
        return own_cuda and self.version_key.rsplit(".", 1)[0] != self.cuda_key.rsplit(".", 1)[0]

    def spec_key(self) -> str:
        """What makes two pools' drivers the same resource (a canary pool is always its own)."""
        key = {
            "version": self.version,
            "kernelModuleType": self.kernel_module_type,
            "usePrecompiled": self.use_precompiled,
            "upgradePolicy": self.upgrade_policy.model_dump(mode="json"),
            "canary": self.pool if self.canary else "",
        }
        return json.dumps(key, sort_keys=True)


@dataclass(frozen=True)
class DriverGroup:
    """Pools that run the same driver: one ``NVIDIADriver`` resource, named after its first pool.

    The name (and the node label value) stays put when the group's version changes, so a version
    change is an in-place update the operator's upgrade controller rolls out node by node.
    """

    name: str
    pools: tuple[PoolDriver, ...]

    @property
    def driver(self) -> PoolDriver:
        """The group's driver settings (every pool of the group has the same)."""
        return self.pools[0]

    @property
    def canary(self) -> bool:
        """Whether this is a canary pool's resource."""
        return self.driver.canary

    @property
    def cuda(self) -> str:
        """The newest CUDA level any pool of the group needs."""
        return max((p.cuda for p in self.pools), key=parse_version)

    @property
    def nodes(self) -> int:
        """The nodes one upgrade budget covers: every node of every pool of the group (at their maximum).

        The operator counts per NVIDIADriver (or cluster-wide for the ClusterPolicy's driver), over every node
        it manages, cordoned and NotReady ones included (``components.catalog.nvidia_driver``, Waves): two
        pools on one driver share one budget.
        """
        return sum(p.nodes for p in self.pools)

    @property
    def nodes_per_wave(self) -> int:
        """Nodes the upgrade controller takes at once under the group's own ``upgradePolicy``."""
        policy = self.driver.upgrade_policy
        return nodes_per_wave(self.nodes, policy.max_parallel_upgrades, policy.max_unavailable)

    @property
    def waves(self) -> int | None:
        """Rounds a driver change of the group takes: ``ceil(nodes / nodes per wave)`` (None: ``maxUnavailable``
        resolves to 0 nodes, so it cannot progress)."""
        policy = self.driver.upgrade_policy
        return upgrade_waves(self.nodes, policy.max_parallel_upgrades, policy.max_unavailable)


@dataclass(frozen=True)
class DriverPlan:
    """Who owns the driver and which version runs, with the config key that set it.

    ``version`` is the stack-wide driver (``gpuOperator.driver.version`` or the chart default; the
    host's for owner host). ``pools`` and ``groups`` are the operator-managed driver of each pool; with
    more than one group the operator runs ``NVIDIADriver`` resources (``per_pool``).
    """

    owner: str
    version: str
    config_key: str
    explicit: bool
    pools: tuple[PoolDriver, ...] = ()
    groups: tuple[DriverGroup, ...] = field(default=())

    @property
    def max_cuda(self) -> str:
        """The newest CUDA level this driver runs."""
        return max_cuda_for_driver(self.version)

    @property
    def per_pool(self) -> bool:
        """True when pools run different drivers: one NVIDIADriver resource per group."""
        return len(self.groups) > 1

    def group_of(self, pool: str) -> DriverGroup | None:
        """The driver group of ``pool`` (None: the operator does not manage its driver)."""
        return next((g for g in self.groups if any(p.pool == pool for p in g.pools)), None)

    @property
    def canary_groups(self) -> tuple[DriverGroup, ...]:
        """Groups that change first (per-pool mode only)."""
        return tuple(g for g in self.groups if g.canary) if self.per_pool else ()

    @property
    def later_groups(self) -> tuple[DriverGroup, ...]:
        """Groups that wait for the canaries (every group when there is no canary)."""
        return tuple(g for g in self.groups if not (self.per_pool and g.canary))


@dataclass(frozen=True)
class DriverContext:
    """What the driver checks need from other sections of the stack (computed by the stack plan)."""

    #: The hosts' driver is declared stack-wide by ``gpuOperator.driver.owner`` (the program prepares the hosts:
    #: bare metal), not per pool by what the nodes come with.
    owner_declares_hosts: bool
    cuda_version: str
    cuda_check: CudaCheckMode
    host_configures_containerd: bool = False
    smoke_image_cuda: str | None = None  # None when the smoke test is off


def driver_owner(operator: GpuOperatorConfig, pools: Sequence[GpuPool], owner_declares_hosts: bool) -> str:
    """The configured owner, or the default: operator when any pool is driverless, else host."""
    if operator.driver.owner is not None:
        return operator.driver.owner
    if owner_declares_hosts:
        return "host"
    operator_needed = any(not pool.preinstalled_driver or pool.host_driver_removal for pool in pools)
    return "operator" if operator_needed else "host"


def driverless_hosts(operator: GpuOperatorConfig, owner_declares_hosts: bool) -> bool:
    """Bare-metal hosts without a host driver: ``gpuOperator.driver.owner: operator`` on a bare-metal stack says so.

    Why the owner says it and no second key: on bare metal an operator-owned driver is only safe on hosts
    that have none (two drivers on one node fight), so the one choice implies the other; host preparation
    then checks that no host driver is there instead of checking its version.
    """
    return owner_declares_hosts and operator.driver.owner == "operator"


def toolkit_enabled(operator: GpuOperatorConfig, host_configures_containerd: bool) -> bool:
    """The operator's toolkit runs unless the hosts configure containerd (both would fight over it)."""
    return (not host_configures_containerd) if operator.toolkit is None else operator.toolkit


def plan_driver(
    operator: GpuOperatorConfig,
    pools: Sequence[GpuPool],
    context: DriverContext,
    requests: Mapping[str, PoolDriverRequest] | None = None,
) -> tuple[DriverPlan | None, list[Problem]]:
    """The driver the GPU nodes will run, or the problems that stop it (None and no problems: no operator)."""
    if not operator.enabled or not pools:
        return None, []
    requests = requests or {}
    problems = list(_ownership_problems(operator, pools, context))
    owner = driver_owner(operator, pools, context.owner_declares_hosts)
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
    if plan.owner == "host":
        problems.extend(_host_pool_problems(pools, requests))
        problems.extend(_version_problems(operator, pools, context, plan))
        return (None, problems) if problems else (plan, [])
    pool_drivers = tuple(_pool_driver(operator, pool, requests.get(pool.name), plan, context) for pool in pools)
    problems.extend(_pool_problems(operator, pools, pool_drivers, context))
    groups = _groups(pool_drivers)
    problems.extend(_budget_problems(groups))
    if problems:
        return None, problems
    return DriverPlan(plan.owner, plan.version, plan.config_key, plan.explicit, pool_drivers, groups), []


def _pool_driver(
    operator: GpuOperatorConfig,
    pool: GpuPool,
    request: PoolDriverRequest | None,
    stack: DriverPlan,
    context: DriverContext,
) -> PoolDriver:
    """One pool's driver: each key the pool sets, else the stack's."""
    own = request.config if request is not None else None
    path = request.path if request is not None else ""
    stack_driver = operator.driver
    policy = stack_driver.upgrade_policy
    if own is not None and own.upgrade_policy is not None:
        changes = own.upgrade_policy.model_dump(by_alias=True, exclude_unset=True)
        policy = UpgradePolicy.model_validate(deep_merge(policy.model_dump(by_alias=True), changes))
    version_set = own is not None and own.version is not None
    return PoolDriver(
        pool=pool.name,
        version=own.version if own is not None and own.version is not None else stack.version,
        version_key=join_path(path, "version") if version_set else stack.config_key,
        explicit=version_set or stack.explicit,
        kernel_module_type=(own.kernel_module_type if own and own.kernel_module_type else None)
        or stack_driver.kernel_module_type,
        kernel_module_key=join_path(path, "kernelModuleType")
        if own is not None and own.kernel_module_type
        else join_path(OPERATOR_PATH, "driver", "kernelModuleType"),
        use_precompiled=own.use_precompiled
        if own is not None and own.use_precompiled is not None
        else stack_driver.use_precompiled,
        upgrade_policy=policy,
        upgrade_policy_key=join_path(path, "upgradePolicy", "maxUnavailable")
        if own is not None and own.upgrade_policy is not None
        else join_path(OPERATOR_PATH, "driver", "upgradePolicy", "maxUnavailable"),
        cuda=own.cuda if own is not None and own.cuda is not None else context.cuda_version,
        cuda_key=join_path(path, "cuda") if own is not None and own.cuda is not None else "cuda.version",
        canary=bool(own and own.canary),
        nodes=pool.max_nodes,
    )


def _groups(pool_drivers: Sequence[PoolDriver]) -> tuple[DriverGroup, ...]:
    """Pools with the same driver together, each group named after its first pool (pools are sorted)."""
    by_key: dict[str, list[PoolDriver]] = {}
    for driver in pool_drivers:
        by_key.setdefault(driver.spec_key(), []).append(driver)
    return tuple(DriverGroup(members[0].pool, tuple(members)) for members in by_key.values())


def _host_pool_problems(pools: Sequence[GpuPool], requests: Mapping[str, PoolDriverRequest]) -> Iterator[Problem]:
    for pool in pools:
        request = requests.get(pool.name)
        if request is not None and request.config is not None:
            yield Problem(
                request.path,
                "sets a pool's own driver, but the hosts own the driver (gpuOperator.driver.owner: host), so the "
                "GPU Operator installs none; remove it, or set gpuOperator.driver.owner: operator",
            )


def _pool_problems(
    operator: GpuOperatorConfig,
    pools: Sequence[GpuPool],
    drivers: Sequence[PoolDriver],
    context: DriverContext,
) -> Iterator[Problem]:
    """Each pool's driver against its GPUs, its CUDA level and the smoke image; the stack's rules once.

    Pools that share the version key are checked together, so a stack without per-pool drivers gets
    exactly the messages it always got (one per architecture, naming every pool that uses it).
    """
    by_pool = {pool.name: pool for pool in pools}
    by_key: dict[tuple[str, str], list[PoolDriver]] = {}
    for driver in drivers:
        by_key.setdefault((driver.version_key, driver.version), []).append(driver)
    seen: set[tuple[str, str]] = set()
    for (key, version), members in by_key.items():
        members_pools = [by_pool[d.pool] for d in members]
        note = "" if members[0].explicit else f" (the chart {operator.chart_version} default; set {key})"
        for architecture in sorted({p.model.architecture for p in members_pools}, key=list(Architecture).index):
            problem = architecture_problem(version, architecture)
            if problem:
                users = ", ".join(p.config_path for p in members_pools if p.model.architecture == architecture)
                yield Problem(key, f"{problem}{note}; used by {users}")
        for driver in members:
            cuda = cuda_problem(version, driver.cuda, context.cuda_check)
            if not cuda:
                continue
            if driver.inherits_version_for_own_cuda:
                # The conflict is the pool's own: its CUDA against a version it inherits. The stack default
                # suits the other pools, so the pool's key is the one to change (and the one the user wrote).
                yield Problem(
                    driver.cuda_key,
                    f"{cuda}; pool {driver.pool} inherits the driver from {key}{note}: set "
                    f"{driver.cuda_key.rsplit('.', 1)[0]}.version for this pool, or lower its cuda",
                )
            elif (key, driver.cuda) not in seen:
                seen.add((key, driver.cuda))
                where = (
                    "the workloads' CUDA is set in cuda.version"
                    if driver.cuda_key == "cuda.version"
                    else f"{driver.cuda_key} asks for it"
                )
                yield Problem(key, f"{cuda}{note}; {where}")
    for driver in drivers:
        if driver.cuda_key != "cuda.version" and parse_version(driver.cuda) < parse_version(context.cuda_version):
            yield Problem(
                driver.cuda_key,
                f"{driver.cuda} is below cuda.version {context.cuda_version}: the stack-wide level applies to every "
                f"pool; set {context.cuda_version} or newer, or leave it unset",
            )
        if driver.kernel_module_type == "open" and by_pool[driver.pool].model.architecture == Architecture.VOLTA:
            yield Problem(
                driver.kernel_module_key,
                "open kernel modules need Turing or newer; Volta (V100) needs proprietary or auto",
            )
    yield from _smoke_and_toolkit_problems(operator, drivers, context)


def _budget_problems(groups: Sequence[DriverGroup]) -> Iterator[Problem]:
    """Each upgrade budget (an NVIDIADriver, or the ClusterPolicy's one driver) must let a node go, and with
    NVIDIADriver resources the upgrade controller must be on for each of them.

    ``autoUpgrade: false`` on an NVIDIADriver: nothing replaces a driver pod (the DaemonSet is ``OnDelete``),
    and on the move from the ClusterPolicy the old, orphaned pod keeps the node while the new one stays Pending
    on the pods' anti-affinity, so the step's proof could never pass (``components.catalog.nvidia_driver``).
    """
    per_pool = len(groups) > 1
    for group in groups:
        driver = group.driver
        budget = f"NVIDIADriver {resource_name(group.name)}" if per_pool else "the ClusterPolicy's driver"
        pools = ", ".join(p.pool for p in group.pools)
        if per_pool and not driver.upgrade_policy.auto_upgrade:
            yield Problem(
                driver.auto_upgrade_key,
                f"false leaves {budget} (pools {pools}) without the operator's upgrade controller: with NVIDIADriver "
                "resources nothing else replaces a driver pod, and on the move from the ClusterPolicy driver the old "
                "pod keeps the node while the new one stays Pending (pod anti-affinity), so the driver change never "
                "completes; set true (maxParallelUpgrades and maxUnavailable pace it)",
            )
        elif group.waves is None and driver.upgrade_policy.auto_upgrade:
            yield Problem(
                driver.upgrade_policy_key,
                f"{driver.upgrade_policy.max_unavailable!r} allows no node of {budget} (pools {pools}; {group.nodes} "
                "nodes in one budget) to be upgraded at once, so a driver change could never progress; allow at "
                "least one node",
            )


def _smoke_and_toolkit_problems(
    operator: GpuOperatorConfig, drivers: Sequence[PoolDriver], context: DriverContext
) -> Iterator[Problem]:
    if context.smoke_image_cuda is not None:
        for version in sorted({d.version for d in drivers}, key=parse_version):
            smoke = cuda_problem(version, context.smoke_image_cuda, context.cuda_check)
            if smoke:
                yield Problem(
                    "smokeTest.imageCuda",
                    f"the smoke-test image cannot run: {smoke}; pick an image built with an older CUDA",
                )
    if operator.toolkit and context.host_configures_containerd:
        yield Problem(
            join_path(OPERATOR_PATH, "toolkit"),
            "true would make the operator's container toolkit and host preparation both rewrite containerd's "
            "config; leave it unset (false) or set bareMetal.hostPreparation.configureContainerd: false",
        )


def _ownership_problems(
    operator: GpuOperatorConfig, pools: Sequence[GpuPool], context: DriverContext
) -> Iterator[Problem]:
    owner = driver_owner(operator, pools, context.owner_declares_hosts)
    if owner == "operator" and context.owner_declares_hosts:
        yield from _driverless_host_problems(operator, context)
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
        if owner == "host" and not pool.preinstalled_driver and not context.owner_declares_hosts:
            yield Problem(
                join_path(pool.config_path, "gpuEnvironment"),
                "runc nodes have no driver, but gpuOperator.driver.owner is host; use owner operator "
                "or gpuEnvironment: runc_drivers_cuda",
            )


def _driverless_host_problems(operator: GpuOperatorConfig, context: DriverContext) -> Iterator[Problem]:
    """Driverless bare-metal hosts: no declared host driver, and one writer of containerd's config that knows the
    operator's driver root (the operator's toolkit; a host-installed toolkit looks for the driver under ``/``)."""
    if operator.host_driver is not None:
        yield Problem(
            join_path(OPERATOR_PATH, "hostDriver"),
            "must be absent with gpuOperator.driver.owner: operator on bare metal: the hosts are driverless and the "
            "GPU Operator installs the driver (host preparation checks that no host driver is there); remove it, "
            "or set gpuOperator.driver.owner: host",
        )
    if context.host_configures_containerd:
        yield Problem(
            "bareMetal.hostPreparation.configureContainerd",
            f"true registers the host's nvidia-container-runtime, which looks for the driver under /, but on "
            f"driverless hosts (gpuOperator.driver.owner: operator) the driver lives in {OPERATOR_DRIVER_ROOT}; set "
            "false so that the GPU Operator's toolkit configures containerd",
        )
    elif operator.toolkit is False:
        yield Problem(
            join_path(OPERATOR_PATH, "toolkit"),
            "false leaves containerd without the NVIDIA runtime: driverless hosts (gpuOperator.driver.owner: "
            "operator) need the GPU Operator's toolkit; leave it unset or set true",
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
