"""The driver hand-over after the first touch: uninstall, verify, the one reboot, then the operator's driver."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.catalog.node_agent import (
    GPU_DEPLOY_DRIVER_LABEL,
    Outcome,
    Reason,
    State,
    Step,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.eviction import hold_for_pods
from components.node_agent.agent.controller.decisions.halts import fail_touched
from components.node_agent.agent.controller.decisions.release import finish
from components.node_agent.agent.controller.decisions.reports import failed_or_lost, report_timeout
from components.node_agent.agent.controller.decisions.writes import move, new_request, node_patch, say_waiting
from components.node_agent.agent.controller.view import NodeView, Record, driver_pod_problem
from components.node_agent.agent.controller.work import (
    Work,
    answer,
)


def on_uninstalling(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.UNINSTALL)
    settings, now = ctx.settings, ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        record, request = new_request(view, replace(record, since=now), Step.VERIFY, now)
        return [move(view, record, State.VERIFYING, "nvidia-uninstall done; verifying", request=request)]
    if report is not None and report.get("outcome") == Outcome.NOT_STARTED.value:
        record = replace(record, since=now)
        return [
            move(
                view,
                record,
                State.EVICTING,
                f"the executor found a GPU in use: {report.get('detail', '')}",
                reason=Reason.GPU_IN_USE,
            )
        ]
    limit = settings.uninstall_timeout_seconds + settings.executor_timeout_seconds
    return failed_or_lost(view, record, report, Reason.UNINSTALL_FAILED, limit, "uninstall", ctx)


def on_verifying(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.VERIFY)
    now = ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        facts = report.get("facts") or {}
        if facts.get("files_remain"):
            return fail_touched(
                view, record, Reason.FILES_REMAIN, f"driver files remain: {facts.get('detail', '')}", ctx
            )
        if facts.get("modules_loaded"):
            if record.rebooted:
                return fail_touched(
                    view, record, Reason.MODULE_STUCK, "the nvidia module is loaded after the reboot", ctx
                )
            if view.gpu_pods:
                return hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
            record, request = new_request(view, replace(record, since=now, rebooted=True), Step.REBOOT, now)
            return [move(view, record, State.REBOOTING, "the module is still loaded: the one reboot", request=request)]
        stale = sorted(objects.uid(pod) for pod in view.driver_pods)
        record = replace(record, since=now, handover_at=now, stale_driver_pods=stale)
        return [
            move(
                view,
                record,
                State.HANDING_OVER,
                "no host driver left: gpu.deploy.driver=true",
                labels={GPU_DEPLOY_DRIVER_LABEL: "true"},
            )
        ]
    limit = ctx.settings.executor_timeout_seconds
    return failed_or_lost(view, record, report, Reason.HOST_STEP_FAILED, limit, "verify", ctx)


def on_rebooting(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.REBOOT)
    now = ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        record, request = new_request(view, replace(record, since=now), Step.VERIFY, now)
        return [move(view, record, State.VERIFYING, "rebooted (new boot id); verifying", request=request)]
    if report is not None and report.get("outcome") == Outcome.FAILED.value:
        return fail_touched(
            view,
            record,
            Reason(report.get("reason") or Reason.REBOOT_NOT_PERFORMED),
            str(report.get("detail", "")),
            ctx,
        )
    if report is not None and report.get("reason") == Reason.REBOOT_PENDING:
        detail = "waiting for a reboot (/run/reboot-required written)"
        return say_waiting(view, record, State.REBOOTING, detail, Reason.REBOOT_PENDING)
    if report_timeout(record, ctx.settings.reboot_timeout_seconds, ctx):
        return fail_touched(view, record, Reason.REBOOT_NOT_PERFORMED, "no new boot id in time", ctx)
    return []


def _driver_ready(view: NodeView, record: Record) -> bool:
    """The operator's driver pod on this node is Ready, made after the hand-over began (by UID: the pod's
    ``creationTimestamp`` is the API server's clock, not this replica's), and from the DaemonSet of the node's
    owner, on that DaemonSet's newest revision, or on an older one when the template moved on during the hand-over.

    Why an older revision is enough here: the driver DaemonSet is ``OnDelete``, and while the controller holds the
    node its skip label keeps the operator's upgrade controller from replacing the pod, so waiting for the newest
    revision would wait forever. The hand-over is done once the operator's driver runs; the skip label goes with it,
    and the operator then upgrades the node in its own flow (the proof of the step judges the revision).
    """
    for pod in view.driver_pods:
        if objects.terminating(pod) or not objects.pod_ready(pod):
            continue
        if objects.uid(pod) in record.stale_driver_pods:  # there before the hand-over: not its answer
            continue
        if driver_pod_problem(pod, view.labels, view.driver_sets, any_revision=True):
            continue
        return True
    return False


def on_handing_over(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    if view.labels.get(GPU_DEPLOY_DRIVER_LABEL) != "true":
        return [node_patch(view, "gpu.deploy.driver=true again", labels={GPU_DEPLOY_DRIVER_LABEL: "true"})]
    if _driver_ready(view, record):
        return finish(view, record, ctx, "the operator's driver pod is Ready on the declared image")
    if ctx.age("since") > ctx.settings.driver_ready_timeout_seconds:
        return fail_touched(view, record, Reason.DRIVER_NOT_READY, "no Ready operator driver pod in time", ctx)
    return say_waiting(view, record, State.HANDING_OVER, "waiting for the operator's driver pod", Reason.DRIVER_PENDING)


def reappeared(view: NodeView, record: Record, facts: dict[str, Any], ctx: Context) -> list[Action]:
    """A host driver after the hand-over: no two drivers (gpu.deploy.driver=false), cordoned, the pool halts."""
    detail = f"a host driver is installed again after the hand-over ({facts.get('install')}: {facts.get('detail', '')})"
    return fail_touched(
        view,
        record,
        Reason.DRIVER_REAPPEARED,
        detail,
        ctx,
        labels={GPU_DEPLOY_DRIVER_LABEL: "false"},
        spec={"unschedulable": True},
    )
