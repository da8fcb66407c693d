"""Config model of an existing cluster's GPU pools (``existing`` in the stack file, with ``cluster.kind: existing``).

The cluster's GPU nodes are provisioned by someone else (kubeadm or kubespray on premises, another cloud's
managed node pools, a Yandex cluster whose node groups live in another stack). The program creates no node: each
pool names the nodes it is made of by a label selector they already carry (``nodeSelector``, matchLabels), and
declares what the program cannot look up at preview time: the GPU model, the GPUs per node, how many nodes the
pool can grow to, and whether the nodes come with a preinstalled driver.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from components.base.config_model import ConfigModel, gpu_node_taints_problems, label_problems
from components.base.problems import Problem, join_path
from components.catalog.gpus import gpu_model_problem, host_gpu_count_problem
from components.catalog.kubernetes import Taint, label_key_problem, label_value_problem, parse_taint
from components.gpu_operator.pool_config import PoolDriverConfig
from components.mig.config import MigConfig


class ExistingPool(ConfigModel):
    """One pool of identical GPU nodes the cluster already has, picked by the labels they carry."""

    node_selector: dict[str, str] = Field(
        description="matchLabels that pick exactly this pool's nodes (labels they already carry); at least one"
    )
    gpu_model: str
    gpus: int = Field(ge=1, le=16, description="GPUs per node")
    max_nodes: int = Field(ge=1, description="the most nodes the pool can have (quotas, MIG demand and budgets)")
    preinstalled_driver: bool = Field(
        description="the nodes come with an NVIDIA driver on the host (true), or have none and run the GPU "
        "Operator's (false)"
    )
    host_driver_removal: bool = Field(
        default=False,
        description="hand nodes with a preinstalled driver over to the GPU Operator's driver (preinstalledDriver only)",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="extra labels the nodes get from the program")
    taints: list[str] = Field(
        default_factory=list, description="taints the nodes carry (set by whoever provisions them); declared here"
    )
    allow_untainted: bool = Field(
        default=False, description="accept GPU nodes without a NoSchedule taint (any pod may then land on them)"
    )
    mig: MigConfig | None = None
    driver: PoolDriverConfig | None = Field(
        default=None, description="this pool's own driver; unset keys come from gpuOperator.driver"
    )

    @property
    def parsed_taints(self) -> list[Taint]:
        """Taints as objects (only valid after ``problems`` found none)."""
        return [parse_taint(text) for text in self.taints]


class ExistingConfig(ConfigModel):
    """The GPU pools of an existing cluster, by name (the name becomes a node label value)."""

    pools: dict[str, ExistingPool] = Field(min_length=1)

    def problems(self, path: str) -> Iterator[Problem]:
        """Names, selectors (each picks its own nodes), models, GPU counts, labels, taints, drivers."""
        selectors: dict[tuple[tuple[str, str], ...], str] = {}
        for name, pool in self.pools.items():
            pool_path = join_path(path, "pools", name)
            name_problem = label_value_problem(name) if name else "must not be empty"
            if name_problem:
                yield Problem(pool_path, f"the pool name {name!r}: {name_problem} (it becomes a node label value)")
            yield from _selector_problems(pool.node_selector, join_path(pool_path, "nodeSelector"))
            key = tuple(sorted(pool.node_selector.items()))
            if key in selectors:
                yield Problem(
                    join_path(pool_path, "nodeSelector"),
                    f"picks the same nodes as {join_path(path, 'pools', selectors[key])}: a node can be in one pool; "
                    "give each pool a selector of its own",
                )
            selectors.setdefault(key, name)
            model_problem = gpu_model_problem(pool.gpu_model)
            if model_problem:
                yield Problem(join_path(pool_path, "gpuModel"), model_problem)
            else:
                count_problem = host_gpu_count_problem(pool.gpu_model, pool.gpus)
                if count_problem:
                    yield Problem(join_path(pool_path, "gpus"), count_problem)
            yield from label_problems(pool.labels, join_path(pool_path, "labels"))
            for shared in sorted(set(pool.labels) & set(pool.node_selector)):
                yield Problem(
                    join_path(pool_path, "labels", shared),
                    "is a key of the pool's nodeSelector: the nodes carry it already (it picks them), and the program "
                    "never changes a label that decides which pool a node is in; remove it from labels",
                )
            yield from _taint_problems(pool, pool_path)
            if pool.host_driver_removal and not pool.preinstalled_driver:
                yield Problem(
                    join_path(pool_path, "hostDriverRemoval"),
                    "true is only for nodes with a preinstalled driver (preinstalledDriver: true); these have none to "
                    "remove",
                )
            if pool.driver is not None:
                yield from pool.driver.problems(join_path(pool_path, "driver"))


def _selector_problems(selector: dict[str, str], path: str) -> Iterator[Problem]:
    if not selector:
        yield Problem(
            path,
            "must name at least one label: an empty selector picks every node of the cluster, control plane included",
        )
    for key, value in selector.items():
        for found in (label_key_problem(key), label_value_problem(value)):
            if found:
                yield Problem(join_path(path, key), found)


def _taint_problems(pool: ExistingPool, pool_path: str) -> Iterator[Problem]:
    """The catalog's taint rules (form, one taint per key and effect, a NoSchedule one on a GPU node)."""
    yield from gpu_node_taints_problems(
        pool.taints,
        join_path(pool_path, "taints"),
        allow_untainted=pool.allow_untainted,
        fix="declare the NoSchedule taint the nodes carry, or set allowUntainted: true to accept any pod on them",
    )
