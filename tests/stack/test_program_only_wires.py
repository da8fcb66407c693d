"""The program wires components from the plan; it decides nothing itself (issue #38: the plan owns every decision).

``tools/wiring_guard.py`` is the rule (``make lint`` runs it); its docstring names the six ways a decision gets into
``components/stack/program.py``. Here: the real program passes, and for each way a copy of the real program with a
small offending snippet inserted is reported under that way's rule, so a rule that stops catching fails its own
cases (and a way without a case fails ``test_every_rule_has_a_case``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tools.wiring_guard import PROGRAM, RULES, check_file, check_source, main

SOURCE = PROGRAM.read_text()
#: Where a snippet goes: inside ``build_platform`` (a decision made while wiring, an import done lazily), or at
#: module level after the imports.
IN_FUNCTION = "    dependency_graph.install()\n"
AT_MODULE = "import pulumi\n"

#: (rule, where, snippet): each snippet puts one decision into the program, the way its rule names.
CASES: list[tuple[str, str, str]] = [
    # 1. importing something that decides, at module level or lazily
    ("decider-import", AT_MODULE, "from components.mig.plan import plan_mig"),
    ("decider-import", IN_FUNCTION, "from components.base.merge import deep_merge\ndeep_merge({}, {})"),
    ("decider-import", IN_FUNCTION, "from components.catalog.names import PROOF_NAMESPACE"),
    ("decider-import", IN_FUNCTION, "from components.stack import wiring"),
    ("decider-import", AT_MODULE, "import components.base.merge as merge"),
    ("decider-import", AT_MODULE, "import itertools"),
    # 2. calling a deciding function through a module, an attribute or a value
    ("attribute-call", IN_FUNCTION, "from components import base\nbase.merge.deep_merge({}, {})"),
    ("attribute-call", IN_FUNCTION, "import components.stack.pools as m\nm.gpu_pools(plan.config)"),
    ("attribute-call", IN_FUNCTION, "resources = plan.mig.resources_per_node(plan.pools)"),
    ("attribute-call", IN_FUNCTION, "dependency_graph.declare_dependency(plan, plan)"),
    ("attribute-call", IN_FUNCTION, "labels_of = plan.driver_labels\nlabels_of(plan.cluster_name)"),
    ("attribute-call", IN_FUNCTION, "getattr(plan, 'driver_labels')(plan.cluster_name)"),
    ("attribute-call", IN_FUNCTION, "project = pulumi.get_project()"),
    # 3. branching on a value
    ("value-branch", IN_FUNCTION, "if plan.operator is not None and plan.operator.driver.owner == 'host':\n    pass"),
    ("value-branch", IN_FUNCTION, "step = plan.operator if plan.pools != () else plan.observability"),
    ("value-branch", IN_FUNCTION, "match plan.operator:\n    case None:\n        pass"),
    ("value-branch", IN_FUNCTION, "while plan.warnings:\n    break"),
    ("value-branch", IN_FUNCTION, "try:\n    warning(plan.cluster_name)\nexcept KeyError:\n    pass"),
    ("value-branch", IN_FUNCTION, "owner = {'host': plan.operator}[plan.cluster_name]"),
    # 4. filtering or transforming a collection inline
    ("inline-filter", IN_FUNCTION, "gpu_pools = [pool for pool in plan.pools if pool.max_nodes]"),
    ("inline-filter", IN_FUNCTION, "models = sorted(plan.gpu_models)"),
    ("inline-filter", IN_FUNCTION, "agents = any(plan.node_agent_pools)"),
    ("inline-filter", IN_FUNCTION, "first = plan.pools[0]"),
    ("inline-filter", IN_FUNCTION, "rest = plan.pools[1:]"),
    ("inline-filter", IN_FUNCTION, "names = {pool.name for pool in plan.pools}"),
    ("inline-filter", IN_FUNCTION, "declaration = plan.pool_declarations.get('a100')"),
    # 5. computing a value (resource names included)
    ("inline-computation", IN_FUNCTION, 'name = f"gpu-proof-{plan.cluster_name}"'),
    ("inline-computation", IN_FUNCTION, 'name = "gpu-proof-" + plan.cluster_name'),
    ("inline-computation", IN_FUNCTION, 'name = "gpu-proof-{}".format(plan.cluster_name)'),
    ("inline-computation", IN_FUNCTION, 'name = "gpu-proof-%s" % plan.cluster_name'),
    ("inline-computation", IN_FUNCTION, "first = plan.operator or plan.observability"),
    ("inline-computation", IN_FUNCTION, "timeout_seconds = 600"),
    # 6. reading a setting out of the stack config
    ("config-read", IN_FUNCTION, "smoke = plan.config.smoke_test.enabled"),
    ("config-read", IN_FUNCTION, "stack = plan.config\nnamespace = stack.gpu_operator.namespace"),
    ("config-read", IN_FUNCTION, "kubeflow = plan.config.kubeflow\nenabled = kubeflow.enabled"),
    ("config-read", IN_FUNCTION, "if plan.config.kubeflow is not None:\n    pass"),
    ("config-read", IN_FUNCTION, "for name, group in plan.config.node_groups.items():\n    warning(name)"),
    ("config-read", IN_FUNCTION, "groups = [*plan.config.node_groups]"),
    ("config-read", IN_FUNCTION, "def read(section):\n    return section.enabled\nread(plan.config.smoke_test)"),
    ("config-read", IN_FUNCTION, "def config():\n    return plan.config\nnamespace = config().gpu_operator.namespace"),
]


def _mutated(where: str, snippet: str) -> tuple[str, range]:
    """The real program with ``snippet`` after the anchor ``where``, and the lines the snippet occupies."""
    assert SOURCE.count(where) == 1, f"the anchor {where!r} moved: pick another"
    indent = where[: len(where) - len(where.lstrip())]
    inserted = textwrap.indent(snippet, indent) + "\n"
    before, after = SOURCE.split(where)
    first = before.count("\n") + where.count("\n") + 1
    return before + where + inserted + after, range(first, first + snippet.count("\n") + 1)


def test_the_program_only_wires() -> None:
    assert check_file(PROGRAM) == []


def test_the_guard_passes_on_the_real_program_from_the_command_line() -> None:
    assert main([str(PROGRAM)]) == 0


def test_passing_what_the_plan_gives_stays_wiring() -> None:
    """The node agent's call takes one more of the plan's results as another keyword, and that is still wiring."""
    source, _ = _mutated(
        "                declarations=plan.pool_declarations,\n", "memberships=plan.node_agent_memberships,"
    )
    assert check_source(source) == []


@pytest.mark.parametrize(("rule", "where", "snippet"), CASES, ids=[f"{r}:{s.splitlines()[-1]}" for r, _, s in CASES])
def test_each_way_of_deciding_in_the_program_is_caught(rule: str, where: str, snippet: str) -> None:
    source, lines = _mutated(where, snippet)
    findings = check_source(source)
    assert rule in {finding.rule for finding in findings}, findings
    assert all(finding.line in lines for finding in findings), findings  # nothing else of the program is blamed


def test_every_rule_has_a_case_and_a_paragraph() -> None:
    assert {rule for rule, _, _ in CASES} == set(RULES)
    assert len(RULES) == 6
    import tools.wiring_guard as guard

    for number, rule in enumerate(RULES, start=1):
        assert f"{number}. ``{rule}``" in (guard.__doc__ or ""), rule


def test_the_command_line_reports_each_finding_with_its_rule(tmp_path: Path) -> None:
    source, _ = _mutated(IN_FUNCTION, "smoke = plan.config.smoke_test.enabled")
    mutated = tmp_path / "program.py"
    mutated.write_text(source)
    result = subprocess.run(
        [sys.executable, "-m", "tools.wiring_guard", str(mutated)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert f"{mutated}:" in result.stdout and ": config-read: " in result.stdout


def test_make_lint_runs_the_guard_and_the_contract_names_the_program() -> None:
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "tools.wiring_guard" in lint and "lint-imports" in lint
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (program,) = [c for c in contracts if c.get("source_modules") == ["components.stack.program"]]
    assert "components.catalog" in program["forbidden_modules"]
