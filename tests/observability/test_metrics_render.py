"""The dcgm-exporter metrics file, rendered by the real pinned GPU Operator chart with each stack's values."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from components.catalog.observability import DCGM_FIELDS, DCGM_METRICS_CONFIG_KEY, FieldGroup
from components.catalog.upstream import GPU_OPERATOR_CHART
from components.stack.plan import Plan
from tests.helpers import ROOT, plan_raw, set_path, stack_raw

HELM = ROOT / ".tools" / "bin" / "helm"
CHART = ROOT / GPU_OPERATOR_CHART.path
KINDS = {"gauge", "counter", "label"}


def render(values: dict, tmp_path: Path) -> list[dict]:
    """``helm template`` of the pinned chart with ``values``; every rendered object."""
    assert HELM.exists(), "the real helm is missing: `make tools`"
    assert (CHART / "Chart.yaml").exists(), "the pinned GPU Operator chart is missing: `make upstream`"
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    result = subprocess.run(
        [str(HELM), "template", "gpu-operator", str(CHART), "--namespace", "gpu-operator", "-f", str(values_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]


def _fields(csv: str) -> dict[str, str]:
    """Field -> type of every line dcgm-exporter would read (comments and blank lines skipped)."""
    result = {}
    for line in csv.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind, help_text = (part.strip() for part in line.split(",", 2))
        assert kind in KINDS and help_text, line
        result[name] = kind
    return result


@pytest.fixture(scope="module", params=["dev", "prod"])
def stack_plan(request: pytest.FixtureRequest) -> tuple[str, Plan]:
    return request.param, plan_raw(stack_raw(request.param))


def test_the_chart_renders_our_metrics_file_and_the_cluster_policy_reads_it(
    stack_plan: tuple[str, Plan], tmp_path: Path
) -> None:
    stack, plan = stack_plan
    assert plan.operator is not None and plan.observability is not None
    objects = render(plan.operator.values, tmp_path)
    name = plan.observability.config.metrics.config_map_name
    config_map = _one(objects, "ConfigMap", name)
    assert config_map["metadata"]["namespace"] == "gpu-operator"
    fields = _fields(config_map["data"][DCGM_METRICS_CONFIG_KEY])
    policy = _one(objects, "ClusterPolicy")
    exporter = policy["spec"]["dcgmExporter"]
    assert exporter["enabled"] is True
    assert exporter["config"] == {"name": name}
    # Every group the issue asks for is in the file; NVLink only on prod's 8-GPU NVLink nodes.
    groups = {field.group for field in DCGM_FIELDS if field.name in fields}
    assert groups >= {
        FieldGroup.UTILIZATION,
        FieldGroup.MIG_UTILIZATION,
        FieldGroup.MEMORY,
        FieldGroup.XID,
        FieldGroup.ECC,
        FieldGroup.RETIRED_PAGES,
        FieldGroup.REMAPPED_ROWS,
        FieldGroup.THROTTLING,
    }
    assert (FieldGroup.NVLINK in groups) == (stack == "prod")
    assert fields["DCGM_FI_DEV_XID_ERRORS"] == "gauge"
    assert fields["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == "counter"
    assert fields["DCGM_FI_DRIVER_VERSION"] == "label"
    # The ServiceMonitor is on exactly where the Prometheus Operator runs (prod).
    assert exporter["serviceMonitor"]["enabled"] is (stack == "prod")


def test_every_metric_an_alert_or_dashboard_reads_is_in_the_file(stack_plan: tuple[str, Plan]) -> None:
    _stack, plan = stack_plan
    assert plan.observability is not None
    shipped = set(plan.observability.metric_names)
    queries = [rule.expr for rule in plan.observability.alerts] + [spec.json for spec in plan.observability.dashboards]
    used = {field.name for field in DCGM_FIELDS if any(field.name in query for query in queries)}
    assert used, "the alerts and dashboards read DCGM fields"
    assert used <= shipped


def test_rule_labels_reach_the_service_monitor(tmp_path: Path) -> None:
    raw = set_path(stack_raw("prod"), "observability", {"ruleLabels": {"release": "prometheus"}})
    plan = plan_raw(raw)
    assert plan.operator is not None
    policy = _one(render(plan.operator.values, tmp_path), "ClusterPolicy")
    assert policy["spec"]["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {"release": "prometheus"}


def test_nvlink_can_be_forced_on_and_off(tmp_path: Path) -> None:
    for stack, nvlink, expected in (("dev", "on", True), ("prod", "off", False)):
        plan = plan_raw(set_path(stack_raw(stack), "observability", {"metrics": {"nvlink": nvlink}}))
        assert plan.operator is not None and plan.observability is not None
        name = plan.observability.config.metrics.config_map_name
        fields = _fields(
            _one(render(plan.operator.values, tmp_path), "ConfigMap", name)["data"][DCGM_METRICS_CONFIG_KEY]
        )
        assert ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL" in fields) is expected
        assert ("GpuNvlinkErrors" in plan.observability.alert_names) is expected


def test_mig_values_survive_the_merge(tmp_path: Path) -> None:
    """MIG's fragment and observability's are merged before build_values: both reach the chart."""
    plan = plan_raw(stack_raw("prod"))
    assert plan.operator is not None
    objects = render(plan.operator.values, tmp_path)
    policy = _one(objects, "ClusterPolicy")
    assert policy["spec"]["mig"]["strategy"] == "mixed"
    assert policy["spec"]["migManager"]["config"]["name"] == "gpu-platform-mig-config"
