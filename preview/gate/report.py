"""What the gate writes and prints: ``policy-report.json`` and the verdict table."""

from __future__ import annotations

import json
from pathlib import Path

from pulumi_policy import EnforcementLevel

from preview.gate.evaluate import REGISTERED, RENDER_CHECK, GateResult
from preview.run.output_folder import REPORT_NAME


def report_text(result: GateResult) -> str:
    """The text of ``policy-report.json``: indented, sorted keys, final newline."""
    return json.dumps(result.report(), indent=2, sort_keys=True) + "\n"


def write_report(result: GateResult, out_dir: Path) -> Path:
    """Write ``policy-report.json`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / REPORT_NAME
    path.write_text(report_text(result))
    return path


def _verdict(result: GateResult, name: str) -> str:
    found = [f for f in result.findings if f.policy == name]
    level = result.levels.get(name, EnforcementLevel.MANDATORY.value)
    if level == EnforcementLevel.DISABLED.value:
        return "disabled"
    if any(f.enforcement == EnforcementLevel.MANDATORY.value for f in found):
        return f"FAIL ({len(found)})"
    if found:
        return f"warn ({len(found)})"
    if name in result.not_applicable:
        return f"n/a: {result.not_applicable[name]}"
    return "pass"


def verdict_table(result: GateResult) -> str:
    """One row per policy (level and verdict), then each finding, then the overall verdict."""
    names = list(result.levels)
    width = max((len(name) for name in names), default=6)
    lines = [f"Policies ({len(names)}) for stack {result.stack}:", f"  {'policy':<{width}}  {'level':<9}  verdict"]
    lines += [f"  {name:<{width}}  {result.levels[name]:<9}  {_verdict(result, name)}" for name in names]
    if result.renders:
        lines.append(f"Rendered by the offline gate ({RENDER_CHECK}: {_verdict(result, RENDER_CHECK)}):")
        lines += [f"  {line}" for line in result.renders]
    for finding in result.findings:
        origin = "" if finding.origin == REGISTERED else f" ({finding.origin})"
        lines.append(f"  [{finding.enforcement}] {finding.policy} {finding.resource}{origin}: {finding.message}")
    advisory = len(result.findings) - len(result.mandatory)
    verdict = "FAILED" if result.failed else "passed"
    lines.append(f"policy gate {verdict}: {len(result.mandatory)} mandatory, {advisory} advisory violation(s)")
    return "\n".join(lines)
