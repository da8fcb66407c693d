"""Entry point of the controller pod: ``python3 -m components.node_agent.agent.controller.main``.

The controller's lists are watched caches (``components.node_agent.agent.watch``): a reconcile runs when one of
them changes, every ``ACTIVE_SECONDS`` while a node is in maintenance or waits for a slot (its timeouts are
looked at), and every ``RESYNC_SECONDS`` otherwise; the leader Lease is renewed every ``RENEW_SECONDS`` in
between. Only the holder of the leader Lease acts. The per-pool gauges of the continuous proof are served on
``METRICS_PORT`` at ``/metrics`` (Prometheus's text format) from a thread, as the last pass counted them. SIGTERM ends the loop after the pass in progress (every action
is re-derived at the next pass, so stopping anywhere is safe).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from components.catalog.node_agent import ENV_NAMESPACE, ENV_POD_NAME, METRICS_PATH, METRICS_PORT
from components.node_agent.agent.controller.reconcile import Controller
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.loop import install_sigterm
from components.node_agent.agent.watch import CachedApi

#: A pass at least this often while a node is in maintenance or waiting (timeouts, executors' answers).
ACTIVE_SECONDS = 10.0
#: A pass at least this often when nothing happens (a resync: decisions from the caches as they are).
RESYNC_SECONDS = 600.0
#: The leader Lease (30 s) is renewed this often between passes (one request: a replace with its version).
RENEW_SECONDS = 10.0
#: After a wake, this long for the rest of a burst of changes.
SETTLE_SECONDS = 0.5


def metrics_server(text: Callable[[], str], port: int = METRICS_PORT) -> ThreadingHTTPServer:
    """An HTTP server answering ``GET /metrics`` with ``text()`` (404 elsewhere); started by the caller."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != METRICS_PATH:
                self.send_error(404)
                return
            body = text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # a scrape every 30 s is not news

    server = ThreadingHTTPServer(("", port), Handler)
    server.daemon_threads = True
    return server


def main() -> int:
    namespace, identity = os.environ.get(ENV_NAMESPACE, ""), os.environ.get(ENV_POD_NAME, "")
    if not namespace or not identity:
        print(f"{ENV_NAMESPACE} and {ENV_POD_NAME} must be set (downward API)", file=sys.stderr)
        return 2
    api = CachedApi(Kube.in_cluster())
    controller = Controller(api, namespace, identity, time.time)
    stop = threading.Event()
    install_sigterm(stop)
    server = metrics_server(lambda: controller.metrics)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    next_full = 0.0
    while not stop.is_set():
        woken = api.changed.is_set()
        api.changed.clear()
        if woken or controller.busy or time.monotonic() >= next_full:
            controller.reconcile()  # renews the leader Lease first
            next_full = time.monotonic() + RESYNC_SECONDS
        else:
            controller.renew()
        for line in [*api.log, *controller.log]:
            print(line, file=sys.stderr)
        api.log.clear()
        controller.log.clear()
        if api.changed.wait(ACTIVE_SECONDS if controller.busy else RENEW_SECONDS) and not stop.is_set():
            stop.wait(SETTLE_SECONDS)  # a burst of changes (a write and its echo) is one pass
    server.shutdown()
    api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
