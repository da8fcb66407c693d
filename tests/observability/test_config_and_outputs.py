"""The observability section: bad input is refused with its key, config turns alerts off and tunes them, outputs link to it."""

from __future__ import annotations

from components.observability.alerts import DEFINITIONS
from preview.run.runner import run_program
from tests.helpers import ROOT, plan_raw, refusal, set_path, stack_raw


def _with(stack: str, section: dict) -> dict:
    return set_path(stack_raw(stack), "observability", section)


def test_an_unknown_alert_name_is_refused_with_the_known_ones() -> None:
    (line,) = refusal(_with("dev", {"alerts": {"GpuCriticalXID": {"enabled": False}}}))
    assert line.startswith("observability.alerts.GpuCriticalXID: unknown alert; known alerts: ")
    assert "GpuCriticalXid" in line and "GpuSmokeJobFailed" in line


def test_bad_durations_thresholds_severities_and_names_name_their_keys() -> None:
    lines = refusal(
        _with(
            "prod",
            {
                "namespace": "Monitoring",
                "ruleLabels": {"release": "not a label value!"},
                "alerts": {"GpuThermalThrottling": {"for": "15 minutes", "threshold": -1}},
            },
        )
    )
    paths = [line.split(":", 1)[0] for line in lines]
    assert paths == [
        "observability.alerts.GpuThermalThrottling.for",
        "observability.alerts.GpuThermalThrottling.threshold",
        "observability.namespace",
        "observability.ruleLabels.release",
    ]
    assert "'15 minutes' is not a Prometheus duration: 0, or units in the order y w d h m s ms" in lines[0]
    (severity,) = refusal(_with("dev", {"alerts": {"GpuFellOffTheBus": {"severity": "page"}}}))
    assert severity.startswith("observability.alerts.GpuFellOffTheBus.severity: 'page' is not allowed")
    (no_threshold,) = refusal(_with("dev", {"alerts": {"GpuCriticalXid": {"threshold": 3}}}))
    assert no_threshold.startswith("observability.alerts.GpuCriticalXid.threshold: GpuCriticalXid has no threshold")
    assert "GpuThermalThrottling (share of time throttled (0-1))" in no_threshold
    (unknown,) = refusal(_with("dev", {"alert": {}}))
    assert unknown.startswith("observability.alert: unknown key; allowed keys: alerts, dashboards, enabled")


def test_config_turns_alerts_off_and_tunes_them() -> None:
    plan = plan_raw(
        _with(
            "prod",
            {
                "alerts": {
                    "GpuSmokeJobFailed": {"enabled": False},
                    "GpuThermalThrottling": {"for": "30m", "threshold": 0.25, "severity": "critical"},
                }
            },
        )
    )
    assert plan.observability is not None
    alerts = {alert.name: alert for alert in plan.observability.alerts}
    assert "GpuSmokeJobFailed" not in alerts
    thermal = alerts["GpuThermalThrottling"].rule()
    assert thermal["for"] == "30m" and thermal["labels"] == {"severity": "critical"}
    assert thermal["expr"].endswith("> 0.25")


def test_observability_off_creates_nothing_and_outputs_null() -> None:
    run = run_program("dev", overrides={"gpu-platform:observability": {"enabled": False}})
    assert not [r for r in run.registrations if r.name.startswith("observability")]
    assert run.outputs["observability"] is None
    values = run.one("kubernetes:helm.sh/v3:Release", "gpu-operator-release").inputs["values"]
    assert "config" not in values["dcgmExporter"]


def test_outputs_name_the_dashboards_and_alerts_other_teams_link_to() -> None:
    prod = run_program("prod").outputs["observability"]
    assert prod["rules"] == {"kind": "PrometheusRule", "name": "gpu-platform-gpu-alerts"}
    assert prod["dashboards"]["fleet"] == {
        "uid": "ml-prod-gpu-fleet",
        "title": "GPU fleet (ml-prod)",
        "configMap": "ml-prod-gpu-fleet",
    }
    assert "GpuNvlinkErrors" in prod["alerts"] and prod["alerts"] == sorted(prod["alerts"])
    assert "nvidia.com/mig.config.state" in prod["kubeStateMetricsNodeLabels"]
    dev = run_program("dev").outputs["observability"]
    assert dev["rules"]["kind"] == "ConfigMap"
    assert "GpuNvlinkErrors" not in dev["alerts"]


def test_every_alert_has_a_runbook_section_with_its_severity() -> None:
    runbooks = (ROOT / "docs" / "runbooks.md").read_text()
    sections = {part.split("\n", 1)[0].strip(): part for part in runbooks.split("\n## ")[1:]}
    for definition in DEFINITIONS:
        assert definition.name in sections, f"docs/runbooks.md has no section for {definition.name}"
        assert f"Severity: {definition.severity}" in sections[definition.name], definition.name
