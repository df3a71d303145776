"""spark_exec.state_sizes without a replica: Spark UI answers as Spark's REST API gives
them (``/storage/rdd``, ``/jobs``, ``/stages``), the HTTP edge replaced."""

from __future__ import annotations

import socket

import pytest

from spark_exec.state_sizes import ObjectState, StateSizes, object_of_tags

SESSION = "SparkConnect_SessionTag_User__Session_268fb643-ee13-4a47-a051-40a2672c7a36_Tag_"


class _FakeUi(StateSizes):
    def __init__(self, answers: dict):
        super().__init__()
        self.answers = answers
        self.asked: list[str] = []

    def _get(self, ui_url: str, path: str):
        self.asked.append(path)
        return self.answers[path]


def _answers(rdds, jobs, stages) -> dict:
    app = "local-1"
    return {"/applications": [{"id": app}], f"/applications/{app}/storage/rdd": rdds,
            f"/applications/{app}/jobs": jobs, f"/applications/{app}/stages": stages}


def test_object_of_tags_reads_the_user_tag_of_spark_connect():
    assert object_of_tags(["spark-session-1", SESSION + "sqlfront-state-u5"]) == "u5"
    assert object_of_tags([SESSION + "sqlfront-peek-abc", "SparkConnect_OperationTag_User__Session_x"]) is None
    assert object_of_tags([]) is None


def test_rdds_go_to_the_object_whose_tagged_job_built_them_first_and_stay_known():
    rdds = [{"id": 11, "memoryUsed": 9000, "diskUsed": 100}, {"id": 31, "memoryUsed": 500, "diskUsed": 0},
            {"id": 41, "memoryUsed": 70, "diskUsed": 0}, {"id": 50, "memoryUsed": 5, "diskUsed": 0}]
    jobs = [  # newest first, as Spark lists them
        {"jobId": 3, "jobTags": [SESSION + "sqlfront-peek-p"], "stageIds": [4]},  # a peek reads 41: not its
        {"jobId": 2, "jobTags": [SESSION + "sqlfront-state-u2"], "stageIds": [3]},  # reads 11 later
        {"jobId": 1, "jobTags": [SESSION + "sqlfront-state-u5"], "stageIds": [1, 2]},
    ]
    stages = [{"stageId": 4, "rddIds": [41, 42]}, {"stageId": 3, "rddIds": [31, 11]},
              {"stageId": 2, "rddIds": [11, 41]}, {"stageId": 1, "rddIds": [9]}]
    ui = _FakeUi(_answers(rdds, jobs, stages))
    assert ui.sizes("http://ui") == {"u5": ObjectState(9170, 2), "u2": ObjectState(500, 1)}  # 50: no owner
    # known RDDs need no look at jobs again; a gone RDD is forgotten
    ui.answers["/applications/local-1/storage/rdd"] = rdds[:2]
    ui.answers["/applications/local-1/jobs"] = ui.answers["/applications/local-1/stages"] = []
    ui.asked.clear()
    assert ui.sizes("http://ui") == {"u5": ObjectState(9100, 1), "u2": ObjectState(500, 1)}
    assert ui.asked == ["/applications", "/applications/local-1/storage/rdd"]


def test_a_tables_cached_parts_are_its_fills_even_when_a_dataflow_built_them_first():
    """A cached relation is registered before its fill's job runs: a view's hydration
    reading the table in between builds it under the view's tag (seen on a replica: the
    table's index then showed nothing, the view the parts' bytes)."""
    rdds = [{"id": 8, "memoryUsed": 4352, "diskUsed": 0}, {"id": 32, "memoryUsed": 832, "diskUsed": 0}]
    jobs = [
        {"jobId": 4, "jobTags": [SESSION + "sqlfront-state-parts-of-u1"], "stageIds": [3]},
        {"jobId": 2, "jobTags": [SESSION + "sqlfront-state-u4"], "stageIds": [1, 2]},
    ]
    stages = [{"stageId": 3, "rddIds": [8, 7]}, {"stageId": 2, "rddIds": [32, 8]}, {"stageId": 1, "rddIds": [8]}]
    ui = _FakeUi(_answers(rdds, jobs, stages))
    assert ui.sizes("http://ui") == {"parts-of-u1": ObjectState(4352, 1), "u4": ObjectState(832, 1)}


def test_a_ui_that_never_answers_raises_after_the_timeout():
    """A hung replica's UI (it accepts the connection, never answers) costs the timeout,
    then an OSError: the relation leaves that replica out instead of hanging."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with pytest.raises(OSError):
            StateSizes(timeout_s=0.2).sizes(f"http://127.0.0.1:{listener.getsockname()[1]}")
