"""Config model of GPU observability (``observability`` in the stack file).

Which alerts are on and their thresholds are config: ``alerts.<AlertName>`` overrides one alert's
``enabled``, ``for``, ``severity`` or ``threshold`` (the defaults and what each threshold means are in
``components.observability.alerts`` and docs/runbooks.md). Unknown alert names are refused with the
list of known ones, so a typo never silently leaves an alert on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from components.base.config_model import ConfigModel, label_problems
from components.base.problems import Problem, join_path
from components.catalog.kubernetes import dns_label_problem
from components.observability.alerts import ALERT_NAMES, THRESHOLDS
from components.observability.overrides import AlertOverride

#: A Prometheus duration as rule files take it (``30s``, ``5m``, ``1h30m``).
_DURATION = re.compile(r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$")


def duration_problem(value: str) -> str | None:
    """Why ``value`` is not a Prometheus duration, or None."""
    if value == "0" or (value and _DURATION.match(value)):
        return None
    return f"{value!r} is not a Prometheus duration like 30s, 5m or 1h30m"


class MetricsConfig(ConfigModel):
    """The dcgm-exporter metrics file the GPU Operator's exporter reads."""

    config_map_name: str = "gpu-platform-dcgm-metrics"
    nvlink: Literal["auto", "on", "off"] = Field(
        default="auto", description="NVLink error counters; auto: on where a pool has more than one GPU per node"
    )


class DashboardsConfig(ConfigModel):
    """Grafana dashboards shipped as ConfigMaps that Grafana's sidecar loads."""

    enabled: bool = True
    folder: str | None = Field(default=None, description="grafana_folder annotation (the sidecar's folderAnnotation)")


class ObservabilityConfig(ConfigModel):
    """Metrics, alerts and dashboards of the GPU fleet."""

    enabled: bool = True
    namespace: str | None = Field(default=None, description="where rules and dashboards go; default: the operator's")
    rule_labels: dict[str, str] = Field(
        default_factory=dict,
        description="labels Prometheus's ruleSelector and serviceMonitorSelector match (e.g. release: prometheus)",
    )
    metrics: MetricsConfig = MetricsConfig()
    alerts: dict[str, AlertOverride] = Field(default_factory=dict)
    dashboards: DashboardsConfig = DashboardsConfig()

    def problems(self, path: str) -> Iterator[Problem]:
        """Names, labels, durations, thresholds and alert names (the platform's: ``alerts.ALERT_NAMES``)."""
        if self.namespace is not None:
            problem = dns_label_problem(self.namespace)
            if problem:
                yield Problem(join_path(path, "namespace"), problem)
        yield from label_problems(self.rule_labels, join_path(path, "ruleLabels"))
        for key, value in (("configMapName", self.metrics.config_map_name),):
            problem = dns_label_problem(value)
            if problem:
                yield Problem(join_path(path, "metrics", key), problem)
        for name, override in sorted(self.alerts.items()):
            alert_path = join_path(path, "alerts", name)
            if name not in ALERT_NAMES:
                yield Problem(alert_path, f"unknown alert; known alerts: {', '.join(sorted(ALERT_NAMES))}")
            if override.for_ is not None:
                problem = duration_problem(override.for_)
                if problem:
                    yield Problem(join_path(alert_path, "for"), problem)
            if override.threshold is not None and name in ALERT_NAMES and name not in THRESHOLDS:
                with_one = ", ".join(f"{alert} ({meaning})" for alert, meaning in sorted(THRESHOLDS.items()))
                yield Problem(
                    join_path(alert_path, "threshold"), f"{name} has no threshold; alerts with one: {with_one}"
                )
            elif override.threshold is not None and override.threshold < 0:
                yield Problem(join_path(alert_path, "threshold"), f"{override.threshold} must not be negative")
