"""What a node needs, from what is observed now: a hand-over, a MIG layout, a refusal, or an inspection.

The hand-over is decided from the executor's inspection only when the report answers the controller's
current inspect request (same id): an old report proves nothing about the host now. The MIG layout is in
place only when mig-manager's state is ``success`` **and** the node's allocatable advertises exactly the
planned resources (the effect itself, not an echo).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.catalog.node_agent import (
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_STATE_LABEL,
    MIG_STATE_SUCCESS,
    Flow,
    Outcome,
    Reason,
    Step,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.view import NodeView
from components.node_agent.agent.settings import Settings

#: Install kinds the executor reports (``facts.install``).
RUN, NONE, PACKAGE, MIXED, UNKNOWN, EXEC_ERROR = "run", "none", "package", "mixed", "unknown", "exec-error"
REFUSAL_BY_INSTALL = {
    PACKAGE: Reason.PACKAGE_MANAGED,
    MIXED: Reason.MIXED_INSTALL,
    UNKNOWN: Reason.UNKNOWN_INSTALL,
    EXEC_ERROR: Reason.HOST_EXEC_FAILED,
}
#: Install kinds that mean a host driver is present.
HOST_DRIVER_KINDS = frozenset({RUN, PACKAGE, MIXED, UNKNOWN})


@dataclass(frozen=True)
class Work:
    """What the node needs now."""

    flow: str = ""  #: a :class:`Flow` value, or "" for nothing
    target: str = ""  #: the MIG config to apply
    refusal: str = ""  #: a refusal :class:`Reason`
    detail: str = ""
    inspect: bool = False  #: ask the executor for a new inspection
    facts: dict[str, Any] | None = None  #: the inspection that answers the current request


_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
_REASONS = frozenset(reason.value for reason in Reason)


def malformed(report: dict[str, Any]) -> str:
    """Why an executor's report cannot be read by this controller ("" when it can).

    An executor one version ahead (during an agent upgrade) may report an outcome or a reason this controller does
    not know, and a hand edit can write anything: such a report fails its node with a clear reason, never the
    controller (an exception here would stop every pool).
    """
    outcome, reason = report.get("outcome"), report.get("reason")
    if outcome not in _OUTCOMES:
        return f"outcome {outcome!r} is not one of {', '.join(sorted(_OUTCOMES))}"
    if reason not in (None, "") and reason not in _REASONS:
        return f"reason {reason!r} is not known to this controller"
    if not isinstance(report.get("facts") or {}, dict):
        return "facts is not an object"
    if not isinstance(report.get("detail") or "", str):
        return "detail is not a string"
    return ""


def answer(view: NodeView, step: Step) -> dict[str, Any] | None:
    """The executor's report if it answers the controller's current request for ``step`` (same id).

    A malformed answer (``malformed``) comes back as a failed report with reason ``unknown-report``."""
    request, report = view.request, view.report
    if request.get("step") != step.value or not request.get("id"):
        return None
    if report.get("id") != request["id"] or report.get("step") != step.value:
        return None
    problem = malformed(report)
    if problem:
        return {
            "id": request["id"],
            "step": step.value,
            "outcome": Outcome.FAILED.value,
            "reason": Reason.UNKNOWN_REPORT.value,
            "detail": f"the executor's report cannot be read: {problem} (an executor of another version?)",
        }
    return report


def planned_resources(view: NodeView, settings: Settings) -> dict[str, int]:
    return settings.mig_resources.get(view.name) or settings.mig_resources.get(view.pool) or {}


def allocatable_matches(view: NodeView, settings: Settings) -> bool:
    """The node advertises exactly the planned NVIDIA resources (names, and counts where planned)."""
    return objects.advertises_exactly(view.allocatable, planned_resources(view, settings))


def mig_in_place(view: NodeView, settings: Settings, target: str) -> bool:
    return (
        view.labels.get(MIG_LABEL) == target
        and view.labels.get(MIG_STATE_LABEL) == MIG_STATE_SUCCESS
        and allocatable_matches(view, settings)
    )


def _inspection(view: NodeView, settings: Settings, asked: float) -> tuple[dict[str, Any] | None, bool]:
    """``(facts, ask)``: the inspection answering the current request, and whether to ask for a new one.

    ``asked``: seconds this replica has seen the current request (its own clock, from its own observation)."""
    report = answer(view, Step.INSPECT)
    if report is not None and report.get("outcome") == Outcome.OK.value:
        return dict(report.get("facts") or {}), asked > settings.recheck_seconds
    if view.request.get("step") == Step.INSPECT.value and asked <= settings.executor_timeout_seconds:
        return None, False  # asked, not answered yet
    return None, True


def find_work(view: NodeView, settings: Settings, asked: float) -> Work:
    """The node's work now (the hand-over first, then the MIG layout); ``asked``: seconds this replica has seen the
    node's current request."""
    if view.opted_in:
        facts, ask = _inspection(view, settings, asked)
        if facts is None:
            return Work(inspect=ask, detail="waiting for the executor's inspection of the host")
        install = str(facts.get("install", ""))
        if not facts.get("marker_ok", True):
            return Work(refusal=Reason.DISK_FULL, detail="the host marker cannot be written", inspect=ask, facts=facts)
        if install in REFUSAL_BY_INSTALL:
            return Work(
                refusal=REFUSAL_BY_INSTALL[install], detail=str(facts.get("detail", "")), inspect=ask, facts=facts
            )
        if install == RUN and not facts.get("uninstaller"):
            return Work(refusal=Reason.UNINSTALLER_MISSING, detail="no nvidia-uninstall", inspect=ask, facts=facts)
        if install == RUN:
            return Work(flow=Flow.DRIVER_HANDOVER, detail="a .run host driver to hand over", inspect=ask, facts=facts)
        if ask:
            return Work(inspect=True, facts=facts)
    desired = view.labels.get(MIG_DESIRED_LABEL, "")
    if settings.mig_layout and desired and not mig_in_place(view, settings, desired):
        return Work(flow=Flow.MIG_LAYOUT, target=desired, detail=f"MIG layout {desired} to apply")
    return Work()
