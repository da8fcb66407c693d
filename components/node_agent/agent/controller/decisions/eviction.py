"""Cordoned and evicting: the node's GPU pods leave through the Eviction API before the first change to the host
or the MIG layout, which is the first touch.
"""

from __future__ import annotations

from dataclasses import replace

from components.catalog.node_agent import (
    DETAIL_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_TOGGLE_CONFIG,
    REASON_LABEL,
    Flow,
    Reason,
    State,
    Step,
    node_lease_name,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    Evict,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.halts import fail_touched, fail_untouched
from components.node_agent.agent.controller.decisions.operands import mig_work_gone
from components.node_agent.agent.controller.decisions.release import release_untouched
from components.node_agent.agent.controller.decisions.writes import (
    move,
    new_request,
    node_event,
    say_waiting,
    write_mig,
)
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.controller.work import (
    Work,
)


def _evict(view: NodeView, ctx: Context) -> list[Action]:
    """Evict the node's GPU pods, except a DaemonSet's: its controller puts it back on a cordoned node
    (DaemonSet pods tolerate ``node.kubernetes.io/unschedulable``), so it is waited on, never evicted."""
    return [
        Evict(pod["metadata"].get("namespace", ""), objects.name(pod), view.name)
        for pod in view.gpu_pods
        if not objects.terminating(pod) and objects.owner_kind(pod) != "DaemonSet"
    ]


def _gpu_pod_names(view: NodeView) -> str:
    return ", ".join(f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}" for pod in view.gpu_pods[:5])


def hold_for_pods(view: NodeView, record: Record, ctx: Context, reason: Reason) -> list[Action]:
    """A GPU pod is on a touched node: evict it and wait; no host or MIG step under it."""
    detail = f"GPU pods on the node ({_gpu_pod_names(view)}): evicting first"
    actions = say_waiting(view, record, State(view.state), detail, reason)
    if actions:  # said once, with an Event for the person watching
        actions.append(node_event(view, "GpuPodOnNode", f"GPU pods on {view.name} during {view.state}: evicting", True))
    return actions + _evict(view, ctx)


def on_cordoned(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    if mig_work_gone(view, record, ctx):
        return release_untouched(view, record, ctx, "the work went away before the node was touched: uncordoned")
    record = replace(record, since=ctx.now, evicting_since=ctx.now)
    return [move(view, record, State.EVICTING, "evicting the node's GPU pods")]


def on_evicting(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    settings = ctx.settings
    if mig_work_gone(view, record, ctx):
        return release_untouched(view, record, ctx, "the work went away before the node was touched: uncordoned")
    timed_out = ctx.age("evicting_since" if record.evicting_since else "since") > settings.eviction_timeout_seconds
    if not view.gpu_pods and not (timed_out and view.labels.get(REASON_LABEL) == Reason.GPU_IN_USE):
        return _first_touch(view, record, work, ctx)
    if timed_out:
        holders = _gpu_pod_names(view) or f"a host process ({view.annotations.get(DETAIL_ANNOTATION, '')})"
        detail = f"the GPUs were not free within {int(settings.eviction_timeout_seconds)} s: {holders}"
        if view.lease_touched:  # the executor was asked once already: keep it cordoned, halt
            return fail_touched(view, record, Reason.EVICTION_TIMEOUT, detail, ctx)
        return fail_untouched(view, record, Reason.EVICTION_TIMEOUT, detail, ctx)
    daemon = [pod for pod in view.gpu_pods if objects.owner_kind(pod) == "DaemonSet"]
    reason: str | None = None
    detail = f"evicting {_gpu_pod_names(view)}"
    if daemon:
        reason = Reason.GPU_DAEMONSET_POD
        detail = (
            f"DaemonSet pods ask for a GPU ({', '.join(objects.owner_name(pod) for pod in daemon)}): the DaemonSet "
            "refills them on a cordoned node; keep it off this pool (nodeSelector/affinity) or scale it down"
        )
    elif view.eviction_blocked:
        reason = Reason.EVICTION_BLOCKED
        detail = f"an eviction was refused (a PodDisruptionBudget): {_gpu_pod_names(view)}"
    return say_waiting(view, record, State.EVICTING, detail, reason) + _evict(view, ctx)


def _first_touch(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    """The first change to the host or the MIG layout: the Lease says touched first, then one write."""
    actions: list[Action] = []
    if view.lease is not None and not view.lease_touched:
        actions.append(AnnotateLease(node_lease_name(view.uid), {LEASE_TOUCHED_ANNOTATION: "true"}))
    now = ctx.now
    if record.flow == Flow.DRIVER_HANDOVER:
        record, request = new_request(view, replace(record, since=now), Step.UNINSTALL, now)
        actions.append(move(view, record, State.UNINSTALLING, "the executor runs nvidia-uninstall", request=request))
    else:
        target = view.labels.get(MIG_DESIRED_LABEL, "") or record.target
        if view.labels.get(MIG_LABEL) == target:
            # mig-manager acts on a change of the label's value: the same value again would be no request.
            record = replace(record, since=now, target=target, toggled=True)
            detail = f"nvidia.com/mig.config is {target} already but not in place: the one toggle"
            actions.append(write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, detail))
            return actions
        record = replace(record, since=now, target=target, toggled=False)
        actions.append(write_mig(view, record, State.MIG_APPLYING, target, f"nvidia.com/mig.config={target} written"))
    return actions
