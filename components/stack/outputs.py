"""Stack outputs: the contract other teams read with ``StackReference``.

Names are camelCase and stable; adding a key keeps ``contractVersion``, renaming or removing one
bumps it. Secrets (the kubeconfig) stay Pulumi secrets. docs/outputs.md describes every key, and
tests/contracts/<stack>-outputs.json pins the contract of each example stack.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.catalog import nvidia_driver
from components.catalog.kubeflow.v1_10_2.login import DEX_ISSUER
from components.catalog.pools import pool_scheduling
from components.kubeflow.component import kubeflow_namespaces
from components.mig.outputs import demand_outputs, from_demand_outputs
from components.node_agent.desired import node_agent_watch_commands
from components.observability.plan import RULES_NAME
from components.stack.program import Platform

CONTRACT_VERSION = "1"


def gpu_pool_outputs(platform: Platform) -> dict[str, Any]:
    """Every GPU pool (whatever its platform): hardware, resources, how to schedule onto it."""
    result: dict[str, Any] = {}
    mig = platform.plan.mig
    for pool in platform.plan.pools:
        decision = mig.pools.get(pool.name)
        resources = mig.resources_per_node(pool)
        # MIG on and no instance (all-enabled, or a custom layout of zero counts) advertises nothing to request.
        first = next(iter(resources), None)
        result[pool.name] = {
            "source": pool.source,
            "gpuModel": pool.model.key,
            "gpuArchitecture": pool.model.architecture.value,
            "gpusPerNode": pool.gpus_per_node,
            "maxNodes": pool.max_nodes,
            "migConfig": decision.config_name if decision else None,
            "resourcesPerNode": resources,
            "scheduling": pool_scheduling(pool),
            "podResources": {"limits": {first: 1}} if first is not None else None,
        }
    return result


def gpu_operator_outputs(platform: Platform) -> dict[str, Any] | None:
    """The operator's namespace and chart, and the driver the GPU nodes run."""
    operator_plan = platform.plan.operator
    if platform.gpu_operator is None or operator_plan is None:
        return None
    operator = platform.plan.config.gpu_operator
    return {
        "namespace": operator.namespace,
        "releaseName": operator.release_name,
        "chartVersion": operator.chart_version,
        "driverOwner": operator_plan.driver.owner,
        "driverVersion": operator_plan.driver.version,
        "maxCuda": operator_plan.driver.max_cuda,
        "gpuResourceNames": sorted(
            {name for pool in gpu_pool_outputs(platform).values() for name in pool["resourcesPerNode"]}
        ),
    }


def driver_outputs(platform: Platform) -> dict[str, Any] | None:
    """Each pool's driver, the newest CUDA it runs, and the upgrade plan: order, canaries, waves.

    ``mode`` is ``nvidiaDriver`` (one NVIDIADriver resource per driver group), ``clusterPolicy`` (one
    driver for every pool, in the ClusterPolicy) or ``host`` (the hosts' own driver: no upgrade plan).
    ``order`` lists the pools of each step of a driver change: the canaries first, then the rest.
    ``budgets`` are the upgrade budgets as the operator enforces them: one per NVIDIADriver (its own
    ``upgradePolicy`` over all its pools' nodes), or one for the ClusterPolicy's driver over every pool; a
    pool's ``waves`` are its budget's.
    """
    operator_plan = platform.plan.operator
    if platform.gpu_operator is None or operator_plan is None:
        return None
    driver = operator_plan.driver
    stack = platform.plan.config
    if driver.owner == "host":
        pools = {
            pool.name: {
                "driverVersion": driver.version,
                "maxCuda": driver.max_cuda,
                "cuda": stack.cuda.version,
                "driverResource": None,
                "canary": False,
                "step": None,
                "nodes": pool.max_nodes,
                "budget": None,
                "waves": None,
            }
            for pool in platform.plan.pools
        }
        return {"owner": "host", "mode": "host", "pools": pools, "order": [], "budgets": {}}
    steps = [driver.canary_groups, driver.later_groups] if driver.canary_groups else [driver.later_groups]
    result: dict[str, Any] = {}
    budgets: dict[str, Any] = {}
    for step, groups in enumerate(steps, start=1):
        for group in groups:
            budget = nvidia_driver.resource_name(group.name) if driver.per_pool else "ClusterPolicy"
            group_policy = group.driver.upgrade_policy
            budgets[budget] = {
                "step": step,
                "pools": [p.pool for p in group.pools],
                "nodes": group.nodes,
                "autoUpgrade": group_policy.auto_upgrade,
                "maxParallelUpgrades": group_policy.max_parallel_upgrades,
                "maxUnavailable": group_policy.max_unavailable,
                "nodesPerWave": group.nodes_per_wave,
                "waves": group.waves,
            }
            for pool in group.pools:
                policy = pool.upgrade_policy
                result[pool.pool] = {
                    "driverVersion": pool.version,
                    "maxCuda": pool.max_cuda,
                    "cuda": pool.cuda,
                    "kernelModuleType": pool.kernel_module_type,
                    "usePrecompiled": pool.use_precompiled,
                    "driverResource": nvidia_driver.resource_name(group.name) if driver.per_pool else None,
                    "canary": driver.per_pool and pool.canary,
                    "step": step,
                    "nodes": pool.nodes,
                    "maxParallelUpgrades": policy.max_parallel_upgrades,
                    "maxUnavailable": policy.max_unavailable,
                    "budget": budget,
                    "waves": group.waves,
                }
    order = [sorted(p.pool for g in groups for p in g.pools) for groups in steps]
    return {
        "owner": "operator",
        "mode": "nvidiaDriver" if driver.per_pool else "clusterPolicy",
        "pools": dict(sorted(result.items())),
        "order": order,
        "budgets": dict(sorted(budgets.items())),
    }


def kubeflow_outputs(platform: Platform) -> dict[str, Any] | None:
    """Where Kubeflow is reached, which version, and its identity provider."""
    config = platform.plan.config.kubeflow
    if platform.kubeflow is None or config is None:
        return None
    return {
        "url": platform.kubeflow.url,
        "version": config.tag,
        "namespaces": kubeflow_namespaces(config.install_cert_manager),
        "dexIssuer": DEX_ISSUER,
        "profiles": sorted(profile.name for profile in config.profiles),
    }


def observability_outputs(platform: Platform) -> dict[str, Any] | None:
    """Where the alert rules and the dashboards are, by name and UID, so other teams can link to them."""
    plan = platform.plan.observability
    if platform.observability is None or plan is None:
        return None
    return {
        "namespace": plan.namespace,
        "alerts": plan.alert_names,
        "rules": {"kind": "PrometheusRule" if plan.prometheus_operator else "ConfigMap", "name": RULES_NAME},
        "dashboards": {
            spec.view: {"uid": spec.uid, "title": spec.title, "configMap": spec.uid} for spec in plan.dashboards
        },
        "metricsConfigMap": plan.config.metrics.config_map_name,
        "kubeStateMetricsNodeLabels": list(plan.node_labels),
    }


def node_agent_outputs(platform: Platform) -> dict[str, Any] | None:
    """Where the node agent runs, each pool's budget, and how to watch a rollout; None when it does not run."""
    if platform.node_agent is None:
        return None
    config = platform.plan.config.node_agent
    return {
        "namespace": config.namespace,
        "migLayout": config.mig_layout,
        "dryRun": config.dry_run,
        "budgets": platform.node_agent.pool_budgets,
        "watch": node_agent_watch_commands(config.namespace),
    }


def export_outputs(platform: Platform) -> None:
    """Export the contract."""
    stack = platform.plan.config
    pulumi.export("contractVersion", CONTRACT_VERSION)
    pulumi.export(
        "cluster",
        {
            "name": stack.cluster.name,
            "kind": stack.cluster.kind,
            "id": platform.access.cluster_id,
            "kubernetesVersion": stack.cluster.kubernetes_version,
            "environment": stack.environment.name,
            "production": stack.environment.production,
        },
    )
    pulumi.export("kubeconfig", platform.access.kubeconfig)
    pulumi.export("cuda", {"version": stack.cuda.version, "check": stack.cuda.check.value})
    pulumi.export("gpuPools", gpu_pool_outputs(platform))
    for key, value in platform.plan.platform.outputs(platform.plan, platform.nodes).items():
        pulumi.export(key, value)
    pulumi.export("gpuOperator", gpu_operator_outputs(platform))
    pulumi.export("drivers", driver_outputs(platform))
    pulumi.export("kubeflow", kubeflow_outputs(platform))
    pulumi.export(
        "mig",
        {
            "strategy": platform.plan.mig.strategy,
            "demand": demand_outputs(platform.plan.mig),
            "layoutsFromDemand": from_demand_outputs(platform.plan.mig),
        },
    )
    pulumi.export("observability", observability_outputs(platform))
    pulumi.export("nodeAgent", node_agent_outputs(platform))
