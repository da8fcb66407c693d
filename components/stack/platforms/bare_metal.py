"""Bare metal: an existing cluster whose GPU hosts the program prepares over SSH and labels with NodePatches.

Each host is its own pool (``bareMetal.nodes[]``, its GPU model and count declared), and the hosts that share a
``pool`` value share the node agent's budget. Whether the hosts carry a driver is declared once for all of them,
by ``gpuOperator.driver.owner`` (an operator-owned driver is only safe on driverless hosts).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pulumi

from components.bare_metal.host_preparation import HostPreparation, HostPreparationArgs
from components.bare_metal.node_labels import (
    BareMetalNodeLabels,
    NodeLabelsArgs,
    bare_metal_labels,
    declared_taint_annotations,
)
from components.base.problems import Problem, join_path
from components.catalog.gpus import gpu_model
from components.catalog.kubernetes import gpu_node_taint_problem
from components.catalog.names import HOST_PREPARATION_TYPE, HOSTNAME_LABEL, NODE_LABELS_TYPE
from components.catalog.node_agent import GPU_DEPLOY_DRIVER_LABEL
from components.catalog.pools import GpuPool
from components.cluster.access import ClusterAccessArgs
from components.gpu_operator.drivers import PoolDriverRequest, driverless_hosts
from components.mig.decisions import MigRequest
from components.stack.platforms.base import GpuPlatform, NamedSecret, NodeLabelling, PlatformNodes, json_section
from components.stack.platforms.kubeconfig import kubeconfig_access, kubeconfig_secret, kubeconfig_secrets

if TYPE_CHECKING:
    from components.bare_metal.config import BareMetalConfig
    from components.stack.config import StackConfig
    from components.stack.plan import Plan

SSH_PRIVATE_KEY = "sshPrivateKey"
BASTION_PRIVATE_KEY = "bastionPrivateKey"


class BareMetalPlatform(GpuPlatform):
    """``cluster.kind: bare-metal``: each host of ``bareMetal.nodes`` is a pool of one node."""

    kind = "bare-metal"
    sections = ("bareMetal",)
    pool_source = "bare-metal-node"
    pool_noun = "bare-metal node"
    creates = (HOST_PREPARATION_TYPE, NODE_LABELS_TYPE)
    owner_declares_hosts = True

    @staticmethod
    def _section(stack: StackConfig) -> BareMetalConfig | None:
        return stack.bare_metal

    def problems(self, stack: StackConfig) -> Iterator[Problem]:
        section = self._section(stack)
        if section is None:
            yield Problem("bareMetal", "is required when cluster.kind is bare-metal (the nodes and how to reach them)")
            return
        yield from section.problems("bareMetal")
        if driverless_hosts(stack.gpu_operator, owner_declares_hosts=True):
            for index, node in enumerate(section.nodes):
                if node.labels.get(GPU_DEPLOY_DRIVER_LABEL) == "false":
                    yield Problem(
                        join_path("bareMetal", "nodes", index, "labels", GPU_DEPLOY_DRIVER_LABEL),
                        "'false' on a driverless host makes the GPU Operator skip its driver there: the node would "
                        "have no driver at all; remove the label",
                    )

    def named_secrets(self, stack: StackConfig) -> list[NamedSecret]:
        named = [kubeconfig_secret(stack)]
        section = self._section(stack)
        if section is not None:
            ssh = section.ssh
            nodes_key = "bareMetal.ssh.privateKeySecret"
            named.append(NamedSecret(nodes_key, ssh.private_key_secret, "private_key_secret" in ssh.model_fields_set))
            if ssh.bastion is not None:
                named.append(
                    NamedSecret(
                        "bareMetal.ssh.bastion.privateKeySecret", ssh.bastion.private_key_secret, True, nodes_key
                    )
                )
        return named

    def written_pool_names(self, config: Mapping[str, Any]) -> set[str]:
        section = json_section(config, "bareMetal")
        nodes = section.get("nodes", []) if isinstance(section, dict) else []
        return {str(node.get("name")) for node in nodes if isinstance(node, dict)} if isinstance(nodes, list) else set()

    def pool_names(self, stack: StackConfig) -> list[str]:
        section = self._section(stack)
        return [node.name for node in section.nodes] if section is not None else []

    def operator_driver_pools(self, stack: StackConfig) -> dict[str, bool]:
        driverless = driverless_hosts(stack.gpu_operator, owner_declares_hosts=True)
        return {name: driverless for name in self.pool_names(stack)}

    def pools(self, stack: StackConfig) -> tuple[GpuPool, ...]:
        section = self._section(stack)
        if section is None:
            return ()
        driverless = driverless_hosts(stack.gpu_operator, owner_declares_hosts=True)
        return tuple(
            GpuPool(
                name=node.name,
                config_path=join_path("bareMetal", "nodes", index),
                model=gpu_model(node.gpu_model),
                gpus_per_node=node.gpus,
                max_nodes=1,
                taints=tuple(node.parsed_taints),
                preinstalled_driver=not driverless,
                labels=dict(node.labels),
                source=self.pool_source,
                node_selector={HOSTNAME_LABEL: node.name},
                pool_label=node.pool,
                gpu_counts=gpu_model(node.gpu_model).host_gpu_counts,
            )
            for index, node in enumerate(section.nodes)
        )

    def mig_requests(self, stack: StackConfig) -> dict[str, MigRequest]:
        section = self._section(stack)
        nodes = section.nodes if section is not None else []
        return {
            node.name: MigRequest(join_path("bareMetal", "nodes", index, "mig"), node.mig, True)
            for index, node in enumerate(nodes)
        }

    def driver_requests(self, stack: StackConfig) -> dict[str, PoolDriverRequest]:
        section = self._section(stack)
        nodes = section.nodes if section is not None else []
        return {
            node.name: PoolDriverRequest(join_path("bareMetal", "nodes", index, "driver"), node.driver)
            for index, node in enumerate(nodes)
        }

    def host_configures_containerd(self, stack: StackConfig) -> bool:
        section = self._section(stack)
        prep = section.host_preparation if section is not None else None
        return bool(prep and prep.enabled and prep.configure_containerd)

    def warnings(self, stack: StackConfig) -> tuple[str, ...]:
        section = self._section(stack)
        nodes = section.nodes if section is not None else []
        return tuple(
            f"bareMetal.nodes[{index}].allowUntainted: {node.name} has no NoSchedule taint, so any pod may take its "
            "GPUs"
            for index, node in enumerate(nodes)
            if node.allow_untainted and gpu_node_taint_problem(node.parsed_taints)
        )

    def cluster_access(self, plan: Plan, secrets: Mapping[str, pulumi.Output[str]]) -> ClusterAccessArgs:
        return kubeconfig_access(plan, secrets)

    def read_secrets(self, stack: StackConfig, config: pulumi.Config) -> dict[str, pulumi.Output[str]]:
        secrets = kubeconfig_secrets(stack, config)
        section = self._section(stack)
        if section is not None and section.host_preparation.enabled:
            secrets[SSH_PRIVATE_KEY] = config.require_secret(section.ssh.private_key_secret)
            bastion = section.ssh.bastion
            if bastion is not None and bastion.private_key_secret:
                secrets[BASTION_PRIVATE_KEY] = config.require_secret(bastion.private_key_secret)
        return secrets

    def create_nodes(
        self, plan: Plan, cluster_id: pulumi.Output[str], secrets: Mapping[str, pulumi.Output[str]]
    ) -> PlatformNodes:
        """Host preparation over SSH; the GPU Operator waits for it (the labels come after the release)."""
        section = self._section(plan.config)
        if section is None or not section.host_preparation.enabled or SSH_PRIVATE_KEY not in secrets:
            return PlatformNodes()
        hosts = plan.host_preparation
        preparation = HostPreparation(
            "host-preparation",
            HostPreparationArgs(
                config=section,
                required_min_driver=hosts.required_min_driver,
                expected_driver_version=hosts.expected_driver_version,
                private_key=secrets[SSH_PRIVATE_KEY],
                bastion_private_key=secrets.get(BASTION_PRIVATE_KEY),
                driverless=hosts.driverless,
            ),
        )
        return PlatformNodes(ready=list(preparation.ready), created={"hostPreparation": preparation})

    def label_nodes(self, plan: Plan, provider: Any, depends_on: list[pulumi.Resource]) -> NodeLabelling:
        """One NodePatch per host (``gpu-nodes-<node>``): the platform, driver-group and MIG labels.

        After the release: the MIG label names a config of the release's mig-parted ConfigMap, and mig-manager
        reads that file only when the label changes (NVIDIA/mig-parted ``cmd/nvidia-mig-manager/main.go``: the
        node informer's UpdateFunc fires on a changed ``nvidia.com/mig.config`` only; a failed apply waits for the
        next change), so a label applied before its config exists would never be applied. The operator needs
        nothing of ours before it starts: its NFD worker (selected by ``gpu-platform.io/gpu``) starts on a node
        when the node's patch lands, and each smoke Job and NVIDIADriver waits for the patches of its nodes.
        """
        section = self._section(plan.config)
        if section is None:
            return NodeLabelling()
        labels = self.declared_node_labels(plan)
        annotations = {node.name: declared_taint_annotations(node) for node in section.nodes}
        patches = BareMetalNodeLabels(
            "gpu-nodes",
            NodeLabelsArgs(labels=labels, annotations=annotations, provider=provider, depends_on=depends_on),
        )
        return NodeLabelling(patches=dict(patches.patches), ready=list(patches.ready))

    def declared_node_labels(self, plan: Plan) -> dict[str, dict[str, str]]:
        section = self._section(plan.config)
        nodes = section.nodes if section is not None else []
        return {node.name: bare_metal_labels(node, plan.node_labels(node.name)) for node in nodes}

    def budget_keys(self, stack: StackConfig) -> dict[str, str]:
        section = self._section(stack)
        return {node.name: node.pool for node in section.nodes} if section is not None else {}
