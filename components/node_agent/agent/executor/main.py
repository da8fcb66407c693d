"""Entry point of an executor pod: ``python3 -m components.node_agent.agent.executor.main``.

SIGTERM sets a flag: the pass in progress finishes (a step is recorded on the host before it starts, so a
restart resumes it), and the loop exits within the pod's grace period.
"""

from __future__ import annotations

import os
import sys

from components.catalog.node_agent import ENV_ALLOW_REBOOT, ENV_NODE_NAME, ENV_UNINSTALL_TIMEOUT
from components.node_agent.agent.executor.host import RealHost
from components.node_agent.agent.executor.run import Executor
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.loop import run_until_stopped
from components.node_agent.agent.watch import CachedApi

#: A pass at least this often with nothing changing on the node (its own Node is watched: a request wakes it).
RESYNC_SECONDS = 1800.0
#: While a step runs (a reboot waiting for kured), a look this often.
ACTIVE_SECONDS = 5.0


def main() -> int:
    node = os.environ.get(ENV_NODE_NAME, "")
    if not node:
        print(f"{ENV_NODE_NAME} must be set (downward API)", file=sys.stderr)
        return 2
    api = CachedApi(Kube.in_cluster())
    executor = Executor(
        api,
        RealHost("/host"),
        node,
        allow_reboot=os.environ.get(ENV_ALLOW_REBOOT, "true") == "true",
        uninstall_timeout=float(os.environ.get(ENV_UNINSTALL_TIMEOUT, "900")),
    )
    return run_until_stopped(
        executor.once, executor.log, lambda: ACTIVE_SECONDS if executor.busy else RESYNC_SECONDS, api.changed
    )


if __name__ == "__main__":
    sys.exit(main())
