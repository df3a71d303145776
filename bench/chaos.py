"""A Jepsen-style consistency check of sqlfront under faults (issue 28): list-append and
register transactions (INSERT, COPY, UPDATE, DELETE) from several clients, DDL, a
materialized view and a SUBSCRIBE checked against reads, a nemesis (replica SIGKILL/SIGSTOP, environmentd
SIGKILL and restart, PostgreSQL restart and pause, oracle clock skew, a full data disk, a cut
link on two), then Elle's checker over the history.
Prints operations by outcome, faults by kind, anomalies (0 expected), lost acknowledged
writes, unavailability windows (p50/max seconds per fault kind) and environmentd memory
(RSS at boot, once warm, at the end, and the largest; and per process, since kill-envd
replaces it: once warm and at its last sample).

    .venv/bin/python bench/chaos.py --minutes 5 --topology two [--seed 28] [--clients 4] [--kinds a,b]

To see where environmentd's memory goes, run with ``SQLFRONT_TRACEMALLOC=<dir>`` (environmentd
inherits it: tracemalloc snapshots and stats every minute, see ``sqlfront.memtrace``).

fill-disk needs root (a tmpfs for the data directories) and cut-link root and ``ip netns``
(two only); a kind the run cannot set up is left out, and said so.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
# this file is chaos.py too: the package chaos (tests/chaos) must come first
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from chaos.nemesis import ALL_KINDS
from chaos.run import run


@click.command(help=__doc__.split("\n\n")[0])
@click.option("--minutes", default=5.0, show_default=True, type=float, help="How long the workload runs.")
@click.option("--topology", type=click.Choice(["one", "two"]), default="one", show_default=True,
              help="one environmentd on sqlite, or two on PostgreSQL behind the balancer.")
@click.option("--seed", default=28, show_default=True, type=int)
@click.option("--clients", default=4, show_default=True, type=int)
@click.option("--no-nemesis", is_flag=True, help="Run without faults.")
@click.option("--kinds", default=",".join(ALL_KINDS), show_default=True,
              help="The nemesis's fault kinds, comma-separated.")
@click.option("--dir", "directory", default=None, type=click.Path(path_type=Path),
              help="Where data and the history go (a temporary directory when not given).")
def main(minutes: float, topology: str, seed: int, clients: int, no_nemesis: bool, kinds: str,
         directory: Path | None) -> None:
    unknown = set(kinds.split(",")) - set(ALL_KINDS)
    if unknown:
        raise click.BadParameter(f"unknown kinds {sorted(unknown)}; known: {', '.join(ALL_KINDS)}", param_hint="--kinds")
    d = directory or Path(tempfile.mkdtemp(prefix="chaos-"))
    d.mkdir(parents=True, exist_ok=True)
    res = run(d, topology, minutes * 60, seed, clients, nemesis=not no_nemesis, kinds=tuple(kinds.split(",")),
              log=lambda m: click.echo(m, err=True))
    click.echo(f"topology {topology}, seed {seed}, {minutes:g} min, {clients} clients; history {res['history']}")
    click.echo(f"operations: {res['operations']} (total {sum(res['operations'].values())})")
    click.echo(f"faults: {res['faults']}")
    click.echo(f"DDL: {res['ddl']}; view/SUBSCRIBE checks: {res['checks']}")
    lost = res["anomalies"].get("lost-write", 0)
    click.echo(f"anomalies: {sum(res['anomalies'].values()) - lost} {res['anomalies']}")
    click.echo(f"lost acknowledged writes: {lost}")
    for kind, (p50, mx) in sorted(res["unavailability"].items()):
        click.echo(f"unavailability after {kind}: p50 {p50} s, max {mx} s")
    boot, warm, end, mx = res["envd_rss_mb"]
    click.echo(f"environmentd RSS: at boot {boot} MiB, warm {warm} MiB, end {end} MiB "
               f"({(end - warm) / max(warm, 1):+.1%} since warm), max {mx} MiB")
    lives = res["envd_lives_mb"]
    click.echo(f"environmentd processes ({len(lives)}; kill-envd starts a new one), RSS once warm -> at its last "
               "sample: " + "; ".join(f"{'-' if w is None else w} -> {e} MiB"
                                     f"{'' if w is None else f' ({(e - w) / max(w, 1):+.1%})'} over {s // 60:.0f} min"
                                     for w, e, s in lives))
    grown = [(e - w) / max(w, 1) for w, e, _ in lives if w is not None]
    if grown:
        click.echo(f"largest growth within one process once warm: {max(grown):+.1%}")
    if res["anomalies"]:
        click.echo(json.dumps(res["examples"], indent=1, default=str)[:5000])
        sys.exit(1)


if __name__ == "__main__":
    main()
