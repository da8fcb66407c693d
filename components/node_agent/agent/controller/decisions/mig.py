"""The MIG layout change after the first touch: mig-manager's answer for this request, the one toggle, smoke pods."""

from __future__ import annotations

from dataclasses import replace

from components.catalog.node_agent import (
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_SUCCESS,
    MIG_TOGGLE_CONFIG,
    Reason,
    State,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    CreatePod,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.eviction import hold_for_pods
from components.node_agent.agent.controller.decisions.halts import fail_touched
from components.node_agent.agent.controller.decisions.operands import paused_operands
from components.node_agent.agent.controller.decisions.release import finish
from components.node_agent.agent.controller.decisions.writes import move, say_waiting, write_mig
from components.node_agent.agent.controller.smoke import smoke_name, smoke_pod
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.controller.work import (
    Work,
    allocatable_matches,
    planned_resources,
)


def on_mig_applying(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    settings, now = ctx.settings, ctx.now
    desired = view.labels.get(MIG_DESIRED_LABEL, "") or record.target
    if desired != record.target or view.labels.get(MIG_LABEL) != record.target:
        if view.gpu_pods:
            return hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        record = replace(record, since=now, target=desired, toggled=False)
        return [write_mig(view, record, State.MIG_APPLYING, desired, f"nvidia.com/mig.config={desired} written")]
    answered = view.labels.get(MIG_STATE_LABEL, "")
    restore = paused_operands(view)
    timed_out = ctx.age("since") > settings.mig_timeout_seconds
    if answered == MIG_STATE_SUCCESS and allocatable_matches(view, settings):
        record = replace(record, since=now)
        return [move(view, record, State.SMOKE_TESTING, "layout applied; smoke pods", labels=restore or None)]
    if answered == MIG_STATE_FAILED or timed_out:
        why = "mig-manager reported failed" if answered == MIG_STATE_FAILED else "no answer from mig-manager in time"
        if record.toggled:
            reason = Reason.MIG_FAILED if answered == MIG_STATE_FAILED else Reason.MIG_TIMEOUT
            return fail_touched(view, record, reason, why, ctx, labels=restore)
        if view.gpu_pods:
            return hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        record = replace(record, since=now, toggled=True)
        return [write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, f"{why}: the one toggle")]
    if view.gpu_pods:
        return hold_for_pods(view, record, ctx, Reason.MIG_PENDING)
    detail = "waiting for mig-manager's answer and the allocatable"
    return say_waiting(view, record, State.MIG_APPLYING, detail, Reason.MIG_PENDING)


def on_mig_recovering(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    answered = view.labels.get(MIG_STATE_LABEL, "")
    if view.labels.get(MIG_LABEL) != MIG_TOGGLE_CONFIG:
        return [write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, "the toggle written again")]
    if answered == MIG_STATE_SUCCESS:
        if view.gpu_pods:
            return hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        target = view.labels.get(MIG_DESIRED_LABEL, "") or record.target  # the desired layout may have moved on
        record = replace(record, since=ctx.now, target=target)
        return [write_mig(view, record, State.MIG_APPLYING, target, f"toggled; {target} written")]
    if answered == MIG_STATE_FAILED:
        return fail_touched(
            view,
            record,
            Reason.MIG_FAILED,
            "the toggle through all-disabled failed",
            ctx,
            labels=paused_operands(view),
        )
    if ctx.age("since") > ctx.settings.mig_timeout_seconds:
        return fail_touched(view, record, Reason.MIG_TIMEOUT, "no answer to the toggle in time", ctx)
    return []


def on_smoke_testing(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    resources = sorted(planned_resources(view, ctx.settings)) or ["nvidia.com/gpu"]
    wanted = {smoke_name(view, record, index): resource for index, resource in enumerate(resources)}
    present = {objects.name(pod): pod for pod in view.smoke_pods}
    phases = [(present[name].get("status") or {}).get("phase", "Pending") for name in wanted if name in present]
    if any(phase == "Failed" for phase in phases):
        return fail_touched(view, record, Reason.SMOKE_FAILED, "a smoke pod failed", ctx)
    if len(phases) == len(wanted) and all(phase == "Succeeded" for phase in phases):
        return finish(view, record, ctx, "every smoke pod succeeded")
    if ctx.age("since") > ctx.settings.smoke_timeout_seconds:
        return fail_touched(view, record, Reason.SMOKE_FAILED, "the smoke pods did not finish in time", ctx)
    return [
        CreatePod(smoke_pod(view, record, index, resource, ctx.namespace, ctx.settings.runtime_class))
        for index, resource in enumerate(resources)
        if smoke_name(view, record, index) not in present
    ]
