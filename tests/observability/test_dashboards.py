"""The dashboards load back into Grafana's SDK model, every panel query parses as PromQL, and Grafana's sidecar finds them.

PromQL is parsed by the real promtool: every panel query becomes a recording rule of a throw-away
rule file and ``promtool check rules`` parses it with Prometheus's own parser (Grafana's variables
are replaced by values first, as Grafana does before it sends a query).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel
from grafana_foundation_sdk.models.prometheus import Dataquery

from components.catalog.observability import GRAFANA_UID_MAX_LENGTH
from components.observability.dashboards import DashboardContext, dashboard_uid, encode, load, plan_dashboards
from preview.run.runner import run_program
from tests.helpers import plan_raw, set_path, stack_raw
from tests.observability import promtool

GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$node": "gpu-node-1"}
CONTEXT = DashboardContext(
    cluster="ml-prod", smoke_namespace="gpu-operator", smoke_jobs=("gpu-smoke-a-gpu",), node_agent=True
)


def _panels(model: Dashboard) -> list[Panel]:
    return [panel for panel in model.panels or [] if isinstance(panel, Panel)]


def _queries(model: Dashboard) -> list[tuple[str, str]]:
    queries = []
    for panel in _panels(model):
        if panel.type_val == "text":
            continue
        assert panel.targets, f"panel {panel.title} has no query"
        for target in panel.targets:
            assert isinstance(target, Dataquery), f"panel {panel.title}: {type(target).__name__}"
            assert target.expr
            queries.append((panel.title or "", target.expr))
    return queries


def _substitute(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in re.sub(r"\{\{.*?\}\}", "", expr), f"unknown Grafana variable in {expr}"
    return expr


@pytest.fixture(scope="module")
def specs():
    return plan_dashboards(CONTEXT)


def test_the_json_loads_back_into_the_sdk_model_unchanged(specs) -> None:
    for spec in specs:
        model = load(spec.json)
        assert encode(model) == spec.json
        assert model.uid == spec.uid and model.title == spec.title
        assert any(isinstance(panel, RowPanel) for panel in model.panels or [])
        ids = [panel.id_val for panel in model.panels or []]
        assert len(ids) == len(set(ids)) and None not in ids


def test_every_panel_query_parses_as_promql(specs, tmp_path: Path) -> None:
    rules = []
    for spec in specs:
        for index, (title, expr) in enumerate(_queries(load(spec.json))):
            rules.append(
                {"record": f"dashboard:{spec.view}:{index}", "expr": _substitute(expr), "labels": {"panel": title}}
            )
    assert len(rules) > 20
    result = promtool.check_rules(
        promtool.write_yaml(tmp_path / "queries.yaml", {"groups": [{"name": "q", "rules": rules}]})
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_a_broken_query_is_caught(tmp_path: Path) -> None:
    rules = [{"record": "dashboard:broken", "expr": 'sum by (node (kube_node_labels{node="a"})'}]
    result = promtool.check_rules(
        promtool.write_yaml(tmp_path / "queries.yaml", {"groups": [{"name": "q", "rules": rules}]})
    )
    assert result.returncode != 0


def test_the_views_show_what_the_issue_asks(specs) -> None:
    text = {spec.view: spec.json for spec in specs}
    for wanted in (
        "kube_node_status_allocatable",
        "kube_pod_container_resource_requests",
        "DCGM_FI_DRIVER_VERSION",
        "GPU_I_PROFILE",
        "label_gpu_platform_io_node_group",
    ):
        assert wanted in text["fleet"], wanted
    for wanted in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_GPU_TEMP",
    ):
        assert wanted in text["node"], wanted
    for wanted in (
        "label_nvidia_com_gpu_driver_upgrade_state",
        "label_nvidia_com_mig_config_state",
        "label_gpu_platform_io_node_agent_state",
        "gpu-smoke-a-gpu",
    ):
        assert wanted in text["rollouts"], wanted


def test_uids_are_unique_per_cluster_and_fit_grafana() -> None:
    assert dashboard_uid("ml-prod", "fleet") == "ml-prod-gpu-fleet"
    long = dashboard_uid("a-very-long-cluster-name-for-the-research-fleet", "rollouts")
    other = dashboard_uid("a-very-long-cluster-name-for-the-research-fleet2", "rollouts")
    assert len(long) <= GRAFANA_UID_MAX_LENGTH and len(other) <= GRAFANA_UID_MAX_LENGTH
    assert long != other and long.endswith("-gpu-rollouts")


def test_dashboards_ship_as_configmaps_grafanas_sidecar_loads() -> None:
    run = run_program("dev")
    maps = {
        r.inputs["metadata"]["name"]: r
        for r in run.by_type("kubernetes:core/v1:ConfigMap")
        if r.name.startswith("observability-dashboard-")
    }
    assert set(maps) == {"ml-dev-gpu-fleet", "ml-dev-gpu-node", "ml-dev-gpu-rollouts"}
    for name, resource in maps.items():
        assert resource.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert resource.inputs["metadata"]["namespace"] == "gpu-operator"
        model = load(resource.inputs["data"][f"{name}.json"])
        assert model.uid == name
        assert resource.parent_name == "observability"


def test_the_same_inputs_give_byte_identical_dashboards() -> None:
    assert plan_dashboards(CONTEXT) == plan_dashboards(CONTEXT)


def test_dashboards_can_be_turned_off_and_foldered() -> None:
    off = plan_raw(set_path(stack_raw("dev"), "observability", {"dashboards": {"enabled": False}}))
    assert off.observability is not None and off.observability.dashboards == ()
    run = run_program("dev", overrides={"gpu-platform:observability": {"dashboards": {"folder": "GPU"}}})
    maps = [r for r in run.by_type("kubernetes:core/v1:ConfigMap") if r.name.startswith("observability-dashboard-")]
    assert maps and all(r.inputs["metadata"]["annotations"] == {"grafana_folder": "GPU"} for r in maps)
