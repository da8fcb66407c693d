"""The alert rules are tested like code: promtool checks every rule file the program ships and unit-tests every alert."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.observability.alerts import ALERT_NAMES, AlertContext, AlertRule, plan_alerts, rule_groups
from components.observability.config import AlertOverride
from components.observability.plan import RULE_FILE_KEY, RULES_NAME
from preview.run.runner import ProgramRun, run_program
from tests.helpers import plan_raw, stack_raw
from tests.observability import promtool
from tests.observability.scenarios import Scenario, promtool_tests, scenarios

EVERYTHING = AlertContext(
    nvlink=True,
    mig_capable=True,
    operator_driver=True,
    node_agent=True,
    smoke_namespace="gpu-operator",
    smoke_jobs=("gpu-smoke-a100-gpu", "gpu-smoke-v100-gpu"),
)


@pytest.fixture(scope="module", params=["dev", "prod"])
def shipped(request: pytest.FixtureRequest) -> tuple[str, ProgramRun]:
    return request.param, run_program(request.param)


def shipped_rule_file(run: ProgramRun) -> dict:
    """The rule file exactly as the program ships it: the PrometheusRule's spec or the ConfigMap's file."""
    rules = [r for r in run.registrations if r.name == "observability-rules"]
    assert len(rules) == 1, "the program ships one rule resource"
    (resource,) = rules
    assert resource.inputs["metadata"]["name"] == RULES_NAME
    if resource.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule":
        return resource.inputs["spec"]
    assert resource.type == "kubernetes:core/v1:ConfigMap"
    return yaml.safe_load(resource.inputs["data"][RULE_FILE_KEY])


def _promtool_test(tmp_path: Path, rule_file: dict, rules: tuple[AlertRule, ...], chosen: list[Scenario]) -> str:
    promtool.write_yaml(tmp_path / "rules.yaml", rule_file)
    promtool.write_yaml(tmp_path / "tests.yaml", promtool_tests("rules.yaml", list(rules), chosen))
    result = promtool.run("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_every_alert_has_a_firing_and_a_healthy_scenario() -> None:
    firing = {s.alert for s in scenarios() if s.fires}
    healthy = {s.alert for s in scenarios() if not s.fires}
    assert firing == set(ALERT_NAMES)
    assert healthy == set(ALERT_NAMES)


def test_promtool_checks_the_full_rule_set(tmp_path: Path) -> None:
    path = promtool.write_yaml(tmp_path / "rules.yaml", {"groups": rule_groups(plan_alerts(EVERYTHING, {}))})
    result = promtool.check_rules(path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERT_NAMES)} rules found" in result.stdout


def test_every_alert_fires_on_its_series_and_stays_quiet_on_healthy_ones(tmp_path: Path) -> None:
    rule_file = {"groups": rule_groups(plan_alerts(EVERYTHING, {}))}
    output = _promtool_test(tmp_path, rule_file, plan_alerts(EVERYTHING, {}), scenarios())
    assert "SUCCESS" in output


def test_promtool_checks_every_rule_file_the_program_ships(shipped: tuple[str, ProgramRun], tmp_path: Path) -> None:
    stack, run = shipped
    rule_file = shipped_rule_file(run)
    result = promtool.check_rules(promtool.write_yaml(tmp_path / f"{stack}.yaml", rule_file))
    assert result.returncode == 0, result.stdout + result.stderr
    shipped_names = {rule["alert"] for group in rule_file["groups"] for rule in group["rules"]}
    assert f"SUCCESS: {len(shipped_names)} rules found" in result.stdout


def test_the_shipped_rules_pass_the_scenarios_of_their_alerts(shipped: tuple[str, ProgramRun], tmp_path: Path) -> None:
    stack, run = shipped
    rule_file = shipped_rule_file(run)
    names = {rule["alert"] for group in rule_file["groups"] for rule in group["rules"]}
    plan = plan_raw(stack_raw(stack)).observability
    assert plan is not None and set(plan.alert_names) == names
    smoke_job = next(
        r.inputs["metadata"]["name"] for r in run.by_type("kubernetes:batch/v1:Job") if r.name.startswith("gpu-smoke")
    )
    chosen = [s for s in scenarios(smoke_job=smoke_job) if s.alert in names]
    _promtool_test(tmp_path, rule_file, plan.alerts, chosen)


def test_stacks_ship_the_alerts_their_hardware_needs(shipped: tuple[str, ProgramRun]) -> None:
    stack, run = shipped
    rule_file = shipped_rule_file(run)
    names = {rule["alert"] for group in rule_file["groups"] for rule in group["rules"]}
    # dev: one GPU per node, operator-managed driver; prod: 8 NVLink-connected H100s, host driver.
    assert ("GpuNvlinkErrors" in names) == (stack == "prod")
    assert ("GpuDriverUpgradeFailed" in names) == (stack == "dev")
    assert {"GpuCriticalXid", "GpuFellOffTheBus", "GpuNodeAllocatableZero", "GpuSmokeJobFailed"} <= names
    assert not names & {"GpuNodeAgentFailed", "GpuNodeAgentRolloutHalted"}


def test_a_raised_threshold_keeps_the_alert_quiet(tmp_path: Path) -> None:
    overrides = {"GpuThermalThrottling": AlertOverride(threshold=0.6)}
    rules = plan_alerts(EVERYTHING, overrides)
    promtool.write_yaml(tmp_path / "rules.yaml", {"groups": rule_groups(rules)})
    (half_the_time,) = [s for s in scenarios() if s.name == "throttled half the time"]
    quiet = Scenario(half_the_time.alert, half_the_time.series, half_the_time.eval_time)
    promtool.write_yaml(tmp_path / "tests.yaml", promtool_tests("rules.yaml", list(rules), [quiet]))
    result = promtool.run("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_expectation_fails_promtool(tmp_path: Path) -> None:
    """The harness can fail: expecting XID 13 to page is reported by promtool as a failed test."""
    rule_file = {"groups": rule_groups(plan_alerts(EVERYTHING, {}))}
    promtool.write_yaml(tmp_path / "rules.yaml", rule_file)
    wrong = Scenario("GpuCriticalXid", [('DCGM_FI_DEV_XID_ERRORS{Hostname="gpu-node-1", gpu="0"}', "13x3")], "2m")
    wrong = Scenario(wrong.alert, wrong.series, wrong.eval_time, [{"Hostname": "gpu-node-1", "gpu": "0"}], "13")
    promtool.write_yaml(
        tmp_path / "tests.yaml", promtool_tests("rules.yaml", list(plan_alerts(EVERYTHING, {})), [wrong])
    )
    result = promtool.run("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert "GpuCriticalXid" in result.stdout + result.stderr
