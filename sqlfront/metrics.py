"""Metrics in Prometheus format (prometheus-client), served over HTTP and mirrored as
system tables (``mz_internal.mz_coordinator_loop``, ``mz_internal.mz_peek_durations``).

Each Environment has its own registry, so several environments (tests) never share
counters.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

#: Peek latency buckets in seconds (also the rows of mz_peek_durations).
PEEK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
COMMAND_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.started = time.monotonic()
        self.coordinator_busy = Counter(
            "coordinator_busy_seconds", "Seconds the Coordinator main loop spent processing commands",
            registry=self.registry)
        self.coordinator_commands = Histogram(
            "coordinator_command_duration_seconds", "Duration of Coordinator main loop commands",
            ["kind"], buckets=COMMAND_BUCKETS, registry=self.registry)
        self.peeks = Counter("peeks", "Peeks by cluster and outcome", ["cluster", "outcome"], registry=self.registry)
        self.index_peeks = Counter(
            "index_peeks", "Peeks of views with an index on the peek's cluster, by how they were answered: "
            "'arrangement' (read from the index's dataflow output) or 'rerun' (the view's query run)",
            ["how"], registry=self.registry)
        self.peek_duration = Histogram(
            "peek_duration_seconds", "End-to-end peek latency (planning to rows in hand)",
            ["cluster", "outcome"], buckets=PEEK_BUCKETS, registry=self.registry)
        self.coordinator_errors = Counter(
            "coordinator_errors", "Errors that escaped a Coordinator command or its side effects (the loop went on)",
            registry=self.registry)
        self.phases = Counter("statement_phase_seconds", "Seconds spent per phase of statement processing",
                              ["phase"], registry=self.registry)
        self._phase_children: dict = {}  # phase name -> its labelled child

    def persist_pubsub(self):
        """The persist PubSub seed's metrics, registered here, as ``persist.PubSubMetrics``:
        ``persist_pubsub_pushed_total`` (updates pushed), ``persist_pubsub_received_total
        {applied="clean"|"unclean"}`` (received; applied as the next seqno or not),
        ``persist_fallback_polls_total`` (Consensus reads of followers no push woke),
        ``persist_pubsub_latency_seconds`` (from a compare-and-set in one process to its
        state applied in another), ``persist_pubsub_broadcast_seconds_total`` (the server's
        time spent broadcasting), ``persist_consensus_reads_total`` (every Consensus head
        read of this process)."""
        from persist.pubsub import PubSubMetrics

        r = self.registry
        return PubSubMetrics(
            pushed=Counter("persist_pubsub_pushed", "State updates this process pushed to PubSub", registry=r),
            received=Counter("persist_pubsub_received", "State updates received from PubSub, by whether they "
                             "applied cleanly (the next seqno)", ["applied"], registry=r),
            fallback_polls=Counter("persist_fallback_polls", "Consensus reads of waiting followers (listen, "
                                   "SUBSCRIBE) that no push woke", registry=r),
            latency=Histogram("persist_pubsub_latency_seconds", "From a compare-and-set winning in one process to "
                              "its state applied in another", buckets=PEEK_BUCKETS, registry=r),
            broadcast=Counter("persist_pubsub_broadcast_seconds", "Seconds the PubSub server spent broadcasting",
                              registry=r),
            consensus_reads=Counter("persist_consensus_reads", "Consensus head reads of this process", registry=r),
        )

    def phase(self, name: str, seconds: float) -> None:
        """Time spent in a phase of statement processing (parse, plan, execute, server)."""
        child = self._phase_children.get(name)
        if child is None:  # labels() looks the child up under a lock: kept, twice a statement
            child = self._phase_children[name] = self.phases.labels(name)
        child.inc(seconds)

    def track_replicas(self, statuses) -> None:
        """Report ``replicas{status}`` from ``statuses()`` (a list of status strings) at
        scrape time, so the gauge is never stale."""
        from prometheus_client.core import GaugeMetricFamily

        class _Replicas:
            def collect(self_inner):
                g = GaugeMetricFamily("replicas", "Replicas by status", labels=["status"])
                current = statuses()
                for st in ("healthy", "unhealthy"):
                    g.add_metric([st], current.count(st))
                yield g

        self.registry.register(_Replicas())

    def track_materializations(self, rounds) -> None:
        """Report ``materialization_dataflow_rounds_total{cluster}`` from ``rounds()`` (a
        dict: cluster name -> dataflow rounds its materialized views ran on its replicas
        since this process started it, hydrations not counted) at scrape time: a burst of
        writes at many timestamps should cost a round, not one per timestamp."""
        from prometheus_client.core import CounterMetricFamily

        class _Rounds:
            def collect(self_inner):
                c = CounterMetricFamily("materialization_dataflow_rounds",
                                        "Dataflow rounds of materialized views on the cluster's replicas "
                                        "(hydrations not counted)", labels=["cluster"])
                for cluster, n in sorted(rounds().items()):
                    c.add_metric([cluster], n)
                yield c

        self.registry.register(_Rounds())

    def serve(self, host: str, port: int) -> None:
        """Serve ``/metrics`` on ``host:port`` (a daemon thread)."""
        start_http_server(port, addr=host, registry=self.registry)

    def observe_command(self, kind: str, seconds: float) -> None:
        self.coordinator_busy.inc(seconds)
        self.coordinator_commands.labels(kind).observe(seconds)

    def observe_peek(self, cluster: str, outcome: str, seconds: float) -> None:
        self.peeks.labels(cluster, outcome).inc()
        self.peek_duration.labels(cluster, outcome).observe(seconds)

    # -- system tables ----------------------------------------------------------------

    def coordinator_loop_rows(self) -> list[tuple]:
        """One row: (busy_seconds, wall_seconds, commands, errors)."""
        busy = self.coordinator_busy._value.get()
        commands = sum(s.value for m in self.coordinator_commands.collect() for s in m.samples
                       if s.name.endswith("_count"))
        errors = self.coordinator_errors._value.get()
        return [(float(busy), float(time.monotonic() - self.started), int(commands), int(errors))]

    def peek_duration_rows(self) -> list[tuple]:
        """(cluster, outcome, le_seconds, count) per histogram bucket (cumulative, as
        Prometheus reports them; ``le`` NULL for +Inf)."""
        rows = []
        for m in self.peek_duration.collect():
            for s in m.samples:
                if s.name.endswith("_bucket"):
                    le = s.labels["le"]
                    rows.append((s.labels["cluster"], s.labels["outcome"],
                                 None if le == "+Inf" else float(le), int(s.value)))
        return rows
