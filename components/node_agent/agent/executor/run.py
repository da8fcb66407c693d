"""The node executor: one pass reads its own Node, performs the host step the controller asked for, reports.

It never cordons, evicts, or touches Leases or other nodes (its RBAC and admission policy say so too).
A report carries the request's ``id``, so the controller can tell an answer to *this* request from an old
one. Steps are idempotent: an uninstall on a host with no driver left reports done; a reboot is requested
once per request id (the host marker records the id and the boot id before the reboot), and is done when
the boot id differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.catalog.node_agent import REPORT_ANNOTATION, REQUEST_ANNOTATION, Outcome, Reason, Step
from components.node_agent.agent import objects
from components.node_agent.agent.executor.host import NONE, Host
from components.node_agent.agent.kube import Api, ApiError


@dataclass
class Executor:
    """The executor of the node ``node``."""

    api: Api
    host: Host
    node: str
    allow_reboot: bool = True
    uninstall_timeout: float = 900.0
    log: list[str] = field(default_factory=list)
    #: Called just before the host reboots (the tests' simulated host stops the process there).
    before_reboot: Callable[[], None] = lambda: None
    #: The last pass left a step unanswered or running (the loop looks again soon instead of waiting for a change).
    busy: bool = False

    def once(self) -> bool:
        """One pass; False when the API could not be read or written (the next pass tries again)."""
        try:
            node = self.api.get_node(self.node)
        except ApiError as error:
            self.log.append(f"get node: {error}")
            self.busy = True
            return False
        request = objects.json_annotation(node, REQUEST_ANNOTATION)
        report = objects.json_annotation(node, REPORT_ANNOTATION)
        self.busy = False
        if not request.get("id") or request.get("step") not in {step.value for step in Step}:
            return True
        if report.get("id") == request["id"] and report.get("outcome") in (
            Outcome.OK,
            Outcome.FAILED,
            Outcome.NOT_STARTED,
        ):
            return True  # answered already
        self.busy = True  # a step under way (a reboot waiting for kured): look again soon
        answer = self.perform(request)
        if answer is None:
            return True
        if answer == report:
            return True
        try:
            body = json.dumps(answer, sort_keys=True, separators=(",", ":"))
            self.api.patch_node(self.node, {"metadata": {"annotations": {REPORT_ANNOTATION: body}}})
        except ApiError as error:
            self.log.append(f"report: {error}")
            return False
        return True

    def _report(
        self,
        request: dict[str, Any],
        outcome: Outcome,
        facts: dict[str, Any] | None = None,
        reason: str = "",
        detail: str = "",
    ) -> dict[str, Any]:
        return {
            "id": request["id"],
            "step": request["step"],
            "outcome": outcome.value,
            "reason": reason,
            "detail": detail[:1000],
            "facts": facts or {},
        }

    def perform(self, request: dict[str, Any]) -> dict[str, Any] | None:
        step = Step(request["step"])
        if step in (Step.INSPECT, Step.VERIFY):
            return self._report(request, Outcome.OK, self.host.inspect().to_json())
        if step == Step.UNINSTALL:
            return self._uninstall(request)
        return self._reboot(request)

    def _mark(self, request: dict[str, Any], **extra: Any) -> str:
        """Record the request on the host before acting on it; an error text if the host cannot be written."""
        try:
            self.host.write_marker({"id": request["id"], "step": request["step"], **extra})
        except OSError as error:
            return str(error)
        return ""

    def _uninstall(self, request: dict[str, Any]) -> dict[str, Any]:
        facts = self.host.inspect()
        if facts.install == NONE and not facts.files_remain:
            return self._report(request, Outcome.OK, facts.to_json())
        # The host's own GPU services first: nvidia-persistenced holds the devices open, and would read as a workload.
        self.host.stop_services()
        busy = self.host.gpu_in_use()
        if busy:
            detail = f"in use after the host's GPU services were stopped: {busy}"
            return self._report(request, Outcome.NOT_STARTED, facts.to_json(), Reason.GPU_IN_USE, detail)
        error = self._mark(request)
        if error:
            return self._report(request, Outcome.FAILED, facts.to_json(), Reason.HOST_STEP_FAILED, error)
        self.host.unload_modules()
        rc, stderr = self.host.uninstall(self.uninstall_timeout)
        after = self.host.inspect().to_json()
        if rc != 0:
            return self._report(request, Outcome.FAILED, after, Reason.UNINSTALL_FAILED, f"rc {rc}: {stderr}")
        return self._report(request, Outcome.OK, after)

    def _reboot(self, request: dict[str, Any]) -> dict[str, Any] | None:
        facts = self.host.inspect()
        marker = self.host.read_marker()
        if marker.get("id") == request["id"]:
            if marker.get("boot_before") and marker["boot_before"] != facts.boot_id:
                return self._report(request, Outcome.OK, facts.to_json())
            if not self.allow_reboot:
                return self._report(request, Outcome.RUNNING, facts.to_json(), Reason.REBOOT_PENDING)
            return None  # asked already; waiting for the host to go down
        error = self._mark(request, boot_before=facts.boot_id)
        if error:
            return self._report(request, Outcome.FAILED, facts.to_json(), Reason.HOST_STEP_FAILED, error)
        try:
            self.before_reboot()
            self.host.reboot(self.allow_reboot)
        except OSError as error:
            return self._report(request, Outcome.FAILED, facts.to_json(), Reason.REBOOT_NOT_PERFORMED, str(error))
        if not self.allow_reboot:
            return self._report(request, Outcome.RUNNING, facts.to_json(), Reason.REBOOT_PENDING)
        return None
