"""Entry point of the agent pod: ``python3 -m components.node_agent.agent.main`` with the ConfigMap on the path.

SIGTERM sets a flag: the agent finishes the action it is in (every state is recorded before a step
that touches the node, so a restart resumes where it was), starts no new long host step, and exits
within the pod's grace period.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from components.catalog.node_agent import ENV_NAMESPACE, ENV_NODE_NAME, ENV_SETTINGS
from components.node_agent.agent.executor import Agent, RealClock
from components.node_agent.agent.host import RealHost
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.machine import Settings


def install_sigterm(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop``; the loop and every wait notice it."""

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main() -> int:
    node = os.environ.get(ENV_NODE_NAME, "")
    namespace = os.environ.get(ENV_NAMESPACE, "")
    if not node or not namespace:
        print(f"{ENV_NODE_NAME} and {ENV_NAMESPACE} must be set (downward API)", file=sys.stderr)
        return 2
    settings = Settings.from_json(json.loads(os.environ.get(ENV_SETTINGS, "{}")))
    stop = threading.Event()
    install_sigterm(stop)
    agent = Agent(Kube.in_cluster(), RealHost("/host"), RealClock(stop), node, namespace, settings, stop=stop)
    agent.run()
    for line in agent.log[-20:]:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
