"""The run loop both entry points share: one pass, its log lines to stderr, a wait, until SIGTERM.

Standard library only (it ships in the ``node-agent-code`` ConfigMap with the rest of the agent).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable


def install_sigterm(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop``; the loop notices it between passes."""

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_until_stopped(one_pass: Callable[[], object], log: list[str], seconds: float) -> int:
    """Call ``one_pass`` every ``seconds`` until SIGTERM; print and clear ``log`` after each pass."""
    stop = threading.Event()
    install_sigterm(stop)
    while not stop.is_set():
        one_pass()
        for line in log:
            print(line, file=sys.stderr)
        log.clear()
        stop.wait(seconds)
    return 0
