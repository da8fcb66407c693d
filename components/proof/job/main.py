"""The proof Job's entry point: judge the step's nodes every few seconds until all are proven or time is up.

Exit 0 once every node of the step's pools is proven in one pass; exit 1 at the deadline, naming each lagging
node and why, in the log and in the container's termination message (what ``kubectl describe`` and the Job's
failure show). ``pulumi up`` awaits the Job, so the next step starts only after a pass that proved every node.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from components.catalog.proof import ProofSettings
from components.node_agent.agent.kube import ApiError, Kube
from components.proof.job.run import Proof, ProofApi

SETTINGS_ENV = "PROOF_SETTINGS"  # the step's settings (JSON), written into the Job by the component
POD_NAME_ENV = "POD_NAME"
POD_UID_ENV = "POD_UID"
TERMINATION_LOG = "/dev/termination-log"


class ProofKube(Kube):
    """The node agent's API client with the one list call the proof needs beyond it."""

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, object]]:
        path = f"/api/v1/namespaces/{namespace}/pods"
        return list(self.request("GET", path, query={"labelSelector": label_selector}).get("items", []))


def prove(
    api: ProofApi,
    settings: ProofSettings,
    run: str,
    owner: dict[str, str],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    out: Callable[[str], None] = print,
) -> tuple[bool, str]:
    """Passes until one proves every node (True) or the deadline passes (False); returns the last summary."""
    proof = Proof(api, settings, run, owner)
    deadline = clock() + settings.deadline_seconds
    summary = "no pass completed"
    while True:
        try:
            verdict = proof.one_pass()
            summary = verdict.summary()
        except ApiError as error:  # an outage is waited out like a lagging node
            verdict = None
            summary = f"the API did not answer: {error}"
        for line in proof.log:
            out(line)
        proof.log.clear()
        if verdict is not None and verdict.passed:
            out(f"step {settings.step}: every node runs the declared driver and CUDA ({summary})")
            proof.clean_up()
            for line in proof.log:
                out(line)
            return True, summary
        if clock() >= deadline:
            return False, f"step {settings.step} not proven after {settings.deadline_seconds:.0f}s: {summary}"
        out(f"step {settings.step}: waiting: {summary}")
        sleep(settings.poll_seconds)


def main() -> int:
    try:
        settings = ProofSettings.from_json(json.loads(os.environ[SETTINGS_ENV]))
        run, uid = os.environ[POD_NAME_ENV], os.environ[POD_UID_ENV]
    except KeyError as missing:
        print(f"the proof needs the environment variable {missing} (the Job sets it)", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as error:
        print(f"{SETTINGS_ENV} is not a proof's settings: {error}", file=sys.stderr)
        return 2
    api = ProofKube.in_cluster()
    if not isinstance(api, ProofKube):  # in_cluster builds ``cls``; this tells the type checker so
        raise TypeError("the in-cluster client is not a ProofKube")
    passed, summary = prove(api, settings, run, {"name": run, "uid": uid})
    if not passed:
        print(summary, file=sys.stderr)
        try:
            with open(TERMINATION_LOG, "w", encoding="utf-8") as handle:
                handle.write(summary[:4000])
        except OSError:
            pass
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
