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


def run_until_stopped(
    one_pass: Callable[[], object],
    log: list[str],
    seconds: Callable[[], float],
    wake: threading.Event | None = None,
    settle: float = 0.5,
) -> int:
    """Call ``one_pass`` until SIGTERM: again when ``wake`` is set (a watched cache changed), else after
    ``seconds()`` (a resync, or the next timeout to look at); print and clear ``log`` after each pass.

    ``settle``: after a wake, a short wait so that a burst of changes (a write and its echo, a node's labels from
    two controllers) is one pass, not many.
    """
    stop = threading.Event()
    install_sigterm(stop)
    wake = wake or threading.Event()
    while not stop.is_set():
        wake.clear()
        one_pass()
        for line in log:
            print(line, file=sys.stderr)
        log.clear()
        if wake.wait(seconds()) and not stop.is_set():
            stop.wait(settle)
    return 0
