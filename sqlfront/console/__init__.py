"""The web console (issue 29): environmentd serves it on ``--console-listen``
(``make serve``: http://127.0.0.1:6876), behind the same authentication as pgwire.

Pages: clusters and replicas with status and utilization over time, running and recent
queries with a cancel button, materialized views with their lag, sessions, and a SQL
editor that shows results and EXPLAIN. Each page reads only SQL relations
(``mz_internal.mz_cluster_replica_statuses``, ``mz_recent_activity_log``, ...) through a
session of the logged-in role, so anything it shows a user can also query; the one
exception is each replica's Spark UI address, read from the replica's log.

Built on Starlette (routing, static files) served by uvicorn in a thread of environmentd;
the plots are Plotly's (its ``plotly.min.js``, shipped in the ``plotly`` wheel).
``sqlfront.console.app`` holds the application; this module starts and stops it.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger(__name__)


class ConsoleServer:
    """The console's HTTP server on ``(host, port)``, in a daemon thread."""

    def __init__(self, env, host: str, port: int, scram=None):
        import uvicorn

        from sqlfront.console.app import make_app

        self.host, self.port = host, port
        config = uvicorn.Config(make_app(env, scram), host=host, port=port, log_level="warning", lifespan="off",
                                access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="console", daemon=True)

    def start(self, timeout_s: float = 30.0) -> "ConsoleServer":
        """Start serving; returns once the socket listens.

        Raises:
            OSError when it cannot listen on the address (taken, say)."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the console cannot listen on {self.host}:{self.port}")
            time.sleep(0.05)
        log.info("console at http://%s:%d", self.host, self.port)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
