"""An existing cluster: GPU nodes someone else provisions, picked per pool by a label selector they carry.

The program creates no node and prepares no host. Everything above the nodes works as on the other platforms;
what a Yandex node group gets at creation and a bare-metal host from its NodePatch (the pool, model and GPU
labels, the driver group, the MIG config), an existing node gets from the node agent: the program cannot know at
preview time which nodes a selector picks, and nodes join such pools later (another team's autoscaler), so the
node agent's pool labeller (``components/node_agent/agent/labeller``, its own account and admission policy) labels
every node a pool's selector picks, whenever it appears (``memberships``). The proof and smoke Jobs need no edge to
it: a pool whose nodes are not labelled yet is "no node yet" to the proof, which keeps looking until its deadline,
and a smoke pod stays Pending until its node carries the pool label.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pulumi

from components.base.problems import Problem, join_path
from components.catalog.gpus import gpu_model
from components.catalog.kubernetes import gpu_node_taint_problem
from components.catalog.names import (
    NODE_GROUP_LABEL,
)
from components.catalog.pools import GpuPool, gpu_node_labels
from components.cluster.access import ClusterAccessArgs
from components.gpu_operator.drivers import PoolDriverRequest
from components.mig.decisions import MigRequest
from components.stack.platforms.base import GpuPlatform, NamedSecret, json_section
from components.stack.platforms.kubeconfig import kubeconfig_access, kubeconfig_secret, kubeconfig_secrets

if TYPE_CHECKING:
    from components.stack.config import StackConfig
    from components.stack.plan import Plan
    from components.stack.platforms.existing_config import ExistingConfig


class ExistingPlatform(GpuPlatform):
    """``cluster.kind: existing``: each entry of ``existing.pools`` is a pool of the nodes its selector picks."""

    kind = "existing"
    sections = ("existing",)
    pool_source = "existing-nodes"
    pool_noun = "existing node pool"
    creates = ()
    labels_through_agent = True

    @staticmethod
    def _section(stack: StackConfig) -> ExistingConfig | None:
        return stack.existing

    def problems(self, stack: StackConfig) -> Iterator[Problem]:
        section = self._section(stack)
        if section is None:
            yield Problem("existing", "is required when cluster.kind is existing (the GPU pools and their selectors)")
            return
        yield from section.problems("existing")

    def named_secrets(self, stack: StackConfig) -> list[NamedSecret]:
        return [kubeconfig_secret(stack)]

    def handover_pools(self, stack: StackConfig) -> dict[str, bool]:
        section = self._section(stack)
        return {name: pool.host_driver_removal for name, pool in section.pools.items()} if section else {}

    def written_pool_names(self, config: Mapping[str, Any]) -> set[str]:
        section = json_section(config, "existing")
        pools = section.get("pools") if isinstance(section, dict) else None
        return set(pools) if isinstance(pools, dict) else set()

    def pool_names(self, stack: StackConfig) -> list[str]:
        section = self._section(stack)
        return list(section.pools) if section is not None else []

    def operator_driver_pools(self, stack: StackConfig) -> dict[str, bool]:
        section = self._section(stack)
        return {name: not pool.preinstalled_driver for name, pool in section.pools.items()} if section else {}

    def pools(self, stack: StackConfig) -> tuple[GpuPool, ...]:
        section = self._section(stack)
        if section is None:
            return ()
        return tuple(
            GpuPool(
                name=name,
                config_path=join_path("existing", "pools", name),
                model=gpu_model(pool.gpu_model),
                gpus_per_node=pool.gpus,
                max_nodes=pool.max_nodes,
                taints=tuple(pool.parsed_taints),
                preinstalled_driver=pool.preinstalled_driver,
                host_driver_removal=pool.host_driver_removal,
                labels=dict(pool.labels),
                source=self.pool_source,
                # Pods select the pool label the node agent puts on every node the selector picks: one label,
                # the same on every platform (the selector itself is the agent's and the status command's).
                node_selector={NODE_GROUP_LABEL: name},
                pool_label=name,
                gpu_counts=gpu_model(pool.gpu_model).host_gpu_counts,
            )
            for name, pool in sorted(section.pools.items())
        )

    def mig_requests(self, stack: StackConfig) -> dict[str, MigRequest]:
        section = self._section(stack)
        pools = section.pools if section is not None else {}
        return {
            name: MigRequest(join_path("existing", "pools", name, "mig"), pool.mig, True)
            for name, pool in pools.items()
        }

    def driver_requests(self, stack: StackConfig) -> dict[str, PoolDriverRequest]:
        section = self._section(stack)
        pools = section.pools if section is not None else {}
        return {
            name: PoolDriverRequest(join_path("existing", "pools", name, "driver"), pool.driver)
            for name, pool in pools.items()
        }

    def warnings(self, stack: StackConfig) -> tuple[str, ...]:
        section = self._section(stack)
        pools = section.pools if section is not None else {}
        return tuple(
            f"existing.pools.{name}.allowUntainted: its nodes have no NoSchedule taint, so any pod may take their GPUs"
            for name, pool in sorted(pools.items())
            if pool.allow_untainted and gpu_node_taint_problem(pool.parsed_taints)
        )

    def cluster_access(self, plan: Plan, secrets: Mapping[str, pulumi.Output[str]]) -> ClusterAccessArgs:
        return kubeconfig_access(plan, secrets)

    def read_secrets(self, stack: StackConfig, config: pulumi.Config) -> dict[str, pulumi.Output[str]]:
        return kubeconfig_secrets(stack, config)

    def declared_node_labels(self, plan: Plan) -> dict[str, dict[str, str]]:
        section = self._section(plan.config)
        pools = section.pools if section is not None else {}
        return {
            name: gpu_node_labels(
                name,
                pool.gpu_model,
                host_driver_removal=pool.host_driver_removal,
                labels=pool.labels,
                owned=plan.node_labels(name),
            )
            for name, pool in pools.items()
        }

    def memberships(self, plan: Plan) -> dict[str, dict[str, dict[str, str]]]:
        section = self._section(plan.config)
        labels = self.declared_node_labels(plan)
        return {
            name: {"selector": dict(sorted(pool.node_selector.items())), "labels": labels[name]}
            for name, pool in sorted((section.pools if section is not None else {}).items())
        }
