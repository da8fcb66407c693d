"""Entry point of the controller pod: ``python3 -m components.node_agent.agent.controller.main``.

One reconcile every few seconds; only the holder of the leader Lease acts. SIGTERM ends the loop after the
pass in progress (every action is re-derived at the next pass, so stopping anywhere is safe).
"""

from __future__ import annotations

import os
import sys
import time

from components.catalog.node_agent import ENV_NAMESPACE, ENV_POD_NAME
from components.node_agent.agent.controller.reconcile import Controller
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.loop import run_until_stopped

RESYNC_SECONDS = 10.0


def main() -> int:
    namespace, identity = os.environ.get(ENV_NAMESPACE, ""), os.environ.get(ENV_POD_NAME, "")
    if not namespace or not identity:
        print(f"{ENV_NAMESPACE} and {ENV_POD_NAME} must be set (downward API)", file=sys.stderr)
        return 2
    controller = Controller(Kube.in_cluster(), namespace, identity, time.time)
    return run_until_stopped(controller.reconcile, controller.log, RESYNC_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
