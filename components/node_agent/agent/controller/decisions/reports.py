"""Reading the executor's answer to a host step: failed (its reason, known here) or lost (no answer in time)."""

from __future__ import annotations

from typing import Any

from components.catalog.node_agent import (
    Outcome,
    Reason,
)
from components.node_agent.agent.controller.actions import (
    Action,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.halts import fail_touched
from components.node_agent.agent.controller.view import NodeView, Record


def report_timeout(record: Record, limit: float, ctx: Context) -> bool:
    return ctx.age("step_at") > limit


def failed_or_lost(
    view: NodeView,
    record: Record,
    report: dict[str, Any] | None,
    default: Reason,
    limit: float,
    step: str,
    ctx: Context,
) -> list[Action]:
    """A host step that failed (its reason, else ``default``) or got no answer within ``limit``: fail, halt."""
    if report is not None and report.get("outcome") == Outcome.FAILED.value:
        reason = Reason(report.get("reason") or default)  # known: ``answer`` turns any other into unknown-report
        return fail_touched(view, record, reason, str(report.get("detail", "")), ctx)
    if report_timeout(record, limit, ctx):
        return fail_touched(view, record, Reason.EXECUTOR_LOST, f"no answer to the {step} request", ctx)
    return []
