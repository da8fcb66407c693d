"""The Observability ComponentResource: the alert rules and the dashboard ConfigMaps of a stack.

The rules are a ``PrometheusRule`` where the Prometheus Operator runs (``gpuOperator.prometheusOperator``),
else a ConfigMap holding the same rule file for a Prometheus that loads ``rule_files`` from a mount.
Each dashboard is a ConfigMap with the label Grafana's sidecar loads. The metrics file is not here:
it is part of the GPU Operator's values (see ``components.observability.metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.base import yaml_text
from components.catalog import node_agent as agent
from components.catalog import observability as facts
from components.catalog.names import MANAGED_BY_LABELS, OBSERVABILITY_TYPE
from components.observability.plan import RULE_FILE_KEY, RULES_NAME, ObservabilityPlan

GRAFANA_FOLDER_ANNOTATION = "grafana_folder"


@dataclass(frozen=True)
class ObservabilityArgs:
    """Inputs: the plan, the provider and what must exist first (the namespace's owner)."""

    plan: ObservabilityPlan
    provider: k8s.Provider
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class Observability(pulumi.ComponentResource):
    """The rules and the dashboards."""

    rules: pulumi.CustomResource
    dashboards: dict[str, k8s.core.v1.ConfigMap]
    node_agent_monitor: k8s.apiextensions.CustomResource | None = None

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(OBSERVABILITY_TYPE, name, None, opts)
        plan = args.plan
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on)
        labels = {**MANAGED_BY_LABELS, **plan.config.rule_labels}
        metadata = k8s.meta.v1.ObjectMetaArgs(name=RULES_NAME, namespace=plan.namespace, labels=labels)
        if plan.prometheus_operator:
            self.rules = k8s.apiextensions.CustomResource(
                f"{name}-rules",
                api_version=facts.PROMETHEUS_RULE_API_VERSION,
                kind=facts.PROMETHEUS_RULE_KIND,
                metadata=metadata,
                spec=plan.rule_file(),
                opts=child,
            )
        else:
            self.rules = k8s.core.v1.ConfigMap(
                f"{name}-rules",
                metadata=metadata,
                data={RULE_FILE_KEY: yaml_text.dump(plan.rule_file(), sort_keys=False)},
                opts=child,
            )
        if plan.prometheus_operator and plan.node_agent_namespace:
            # The node agent controller's gauges (``gpu_platform_fleet_nodes``), through its metrics Service.
            self.node_agent_monitor = k8s.apiextensions.CustomResource(
                f"{name}-node-agent-monitor",
                api_version=facts.SERVICE_MONITOR_API_VERSION,
                kind=facts.SERVICE_MONITOR_KIND,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=agent.METRICS_SERVICE, namespace=plan.node_agent_namespace, labels=labels
                ),
                spec={
                    "selector": {"matchLabels": {"app.kubernetes.io/name": agent.METRICS_SERVICE}},
                    "namespaceSelector": {"matchNames": [plan.node_agent_namespace]},
                    "endpoints": [
                        {
                            "port": agent.METRICS_PORT_NAME,
                            "path": agent.METRICS_PATH,
                            "interval": facts.NODE_AGENT_SCRAPE_INTERVAL,
                        }
                    ],
                },
                opts=child,
            )
        annotations = (
            {GRAFANA_FOLDER_ANNOTATION: plan.config.dashboards.folder} if plan.config.dashboards.folder else None
        )
        self.dashboards = {
            spec.view: k8s.core.v1.ConfigMap(
                f"{name}-dashboard-{spec.view}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=spec.uid,
                    namespace=plan.namespace,
                    labels={**MANAGED_BY_LABELS, facts.GRAFANA_DASHBOARD_LABEL: facts.GRAFANA_DASHBOARD_LABEL_VALUE},
                    annotations=annotations,
                ),
                data={spec.config_map_key: spec.json},
                opts=child,
            )
            for spec in plan.dashboards
        }
        self.register_outputs({"alerts": plan.alert_names, "dashboards": sorted(self.dashboards)})
