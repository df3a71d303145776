"""Run dbt commands in one long-lived process (dbt's programmatic ``dbtRunner``), for
tests/test_dbt.py.

Runs in the dbt venv (``make dbt-venv``), not in the project's: dbt and Spark Connect need
different protobuf majors. Each dbt CLI call costs seconds of Python start-up and project
parsing; one process that takes its commands one by one pays that once.

Protocol: one JSON list of dbt arguments per line on stdin (``["run", "--target",
"postgres"]``); one JSON object per line on stdout: ``{"success": bool, "nodes": [{"id",
"status", "message", "failures"}], "exception": str | null}``. dbt's own console output goes
to stderr, so stdout carries nothing but the answers.
"""

from __future__ import annotations

import json
import os
import sys


def _nodes(result) -> list[dict]:
    out = []
    for r in getattr(result, "results", None) or []:
        out.append({"id": r.node.unique_id, "status": str(r.status), "message": r.message,
                    "failures": r.failures})
    return out


def main() -> None:
    from dbt.cli.main import dbtRunner

    # The answers keep the real stdout; everything else written to fd 1 goes to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    runner = dbtRunner()
    for line in sys.stdin:
        args = json.loads(line)
        res = runner.invoke(args)
        answers.write(json.dumps({"success": res.success, "nodes": _nodes(res.result),
                                  "exception": None if res.exception is None else str(res.exception)},
                                 default=str) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
