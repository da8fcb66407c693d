"""The pack as the Pulumi CLI loads it: metadata, the entry point, the pins and the config schemas."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity, StackValidationPolicy

from policies.gpu_policies import ALL_POLICIES, RESOURCE_POLICIES, STACK_POLICIES
from policies.gpu_policies.settings import schema_defaults
from preview.gate.config import parse_policy_config
from tests.helpers import ROOT

PACK = ROOT / "policies"

# Replace PolicyPack (which would start a gRPC server and block) and run __main__.py the way
# `python -m pulumi.policy <engine> .` does: runpy.run_path on the pack folder, cwd = the pack folder.
_FAKE_PACK = """
import json, runpy, sys
import pulumi_policy
seen = {}
class FakePack:
    def __init__(self, name, policies, enforcement_level=None, **kwargs):
        seen.update(name=name, policies=[p.name for p in policies], level=enforcement_level.value)
pulumi_policy.PolicyPack = FakePack
runpy.run_path(".", run_name="__main__")
print(json.dumps(seen))
"""


def test_the_lists_hold_every_policy_once() -> None:
    names = [policy.name for policy in ALL_POLICIES]
    assert [*RESOURCE_POLICIES, *STACK_POLICIES] == ALL_POLICIES
    assert len(names) == len(set(names))
    assert all(isinstance(p, ResourceValidationPolicy) for p in RESOURCE_POLICIES)
    assert all(isinstance(p, StackValidationPolicy) for p in STACK_POLICIES)


def test_every_policy_says_what_it_checks_how_hard_and_how_bad() -> None:
    for policy in ALL_POLICIES:
        assert re.fullmatch(r"[a-z0-9-]{1,100}", policy.name), policy.name
        assert policy.description.endswith("."), policy.name
        assert isinstance(policy.enforcement_level, EnforcementLevel), policy.name
        assert isinstance(policy.severity, Severity), policy.name
        assert policy.tags, policy.name


def test_advisory_policies_are_exactly_the_advice_ones() -> None:
    advisory = sorted(p.name for p in ALL_POLICIES if p.enforcement_level is EnforcementLevel.ADVISORY)
    assert advisory == [
        "container-image-digest-pinned",
        "production-gpu-nodes-no-auto-upgrade",
        "production-gpu-nodes-not-preemptible",
    ]


def test_the_entry_point_builds_the_pack_from_the_pack_folder_without_the_repo_on_the_path() -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", _FAKE_PACK], cwd=PACK, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"name": "gpu-platform", "policies": [p.name for p in ALL_POLICIES], "level": "mandatory"}


def test_the_pack_project_file_names_the_python_runtime_and_a_version() -> None:
    document = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert document["runtime"]["name"] == "python"
    assert re.fullmatch(r"\d+\.\d+\.\d+", document["version"])
    assert document["description"]


def test_the_pack_pins_the_same_versions_as_the_program() -> None:
    def pins(path: str) -> dict[str, str]:
        lines = (ROOT / path).read_text().splitlines()
        return dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))

    pack, program = pins("policies/requirements.txt"), pins("requirements.txt")
    assert {"pulumi", "pulumi-policy", "PyYAML", "bcrypt"} <= set(pack)
    assert {name: program[name] for name in pack} == pack


def test_schema_defaults_satisfy_their_own_schemas() -> None:
    document = {p.name: schema_defaults(p) for p in ALL_POLICIES if p.config_schema and schema_defaults(p)}
    assert set(document) == {
        "helm-repository-allowed",
        "gpu-operator-images-allowed-registries",
        "privileged-workloads-allowlisted",
        "host-network-allowlisted",
        "external-services-allowlisted",
        "ingress-tls",
        "kubeflow-profile-gpu-quotas",
        "driver-supports-cuda",
    }
    assert parse_policy_config(document) == document


def _readme_rows() -> dict[str, list[str]]:
    """``policy name -> [kind, level, severity, settings, checks]`` from the README's policy table."""
    rows: dict[str, list[str]] = {}
    for line in (PACK / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 6:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_readme_table_is_the_pack_row_for_row() -> None:
    """Adding, removing or re-levelling a policy fails here until its README row says the same."""
    rows = _readme_rows()
    assert list(rows) == [policy.name for policy in ALL_POLICIES]
    for policy in ALL_POLICIES:
        kind, level, severity, settings, _ = rows[policy.name]
        assert kind == ("resource" if policy in RESOURCE_POLICIES else "stack"), policy.name
        assert policy.enforcement_level is not None and policy.severity is not None, policy.name
        assert level == policy.enforcement_level.value, policy.name
        assert severity == policy.severity.value, policy.name
        for key in policy.config_schema.properties if policy.config_schema else {}:
            assert f"`{key}`" in settings, (policy.name, key)


def test_the_operations_guide_points_at_the_table_instead_of_repeating_it() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text()
    assert "policies/README.md" in guide
    assert not re.search(r"\bpolicies \(\d+", guide), "a hand-kept count of policies goes stale with the next one"
    assert len([policy for policy in ALL_POLICIES if f"`{policy.name}`" in guide]) < len(ALL_POLICIES) // 2
