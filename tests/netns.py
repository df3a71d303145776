"""Hosts as network namespaces joined by a bridge, for tests of several processes on one
machine whose links can be cut (``ip link set ... down``): tests/test_netns.py and the
chaos nemesis's ``cut-link`` (tests/chaos/). Needs root."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess


def ip(*args: str) -> None:
    """``ip ARGS...``; raises CalledProcessError when it fails."""
    subprocess.run(["ip", *args], check=True, capture_output=True)


def netns_works() -> bool:
    """Whether this process may make network namespaces (root, ``ip`` installed)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = f"sqfprobe{secrets.token_hex(3)}"
    ok = subprocess.run(["ip", "netns", "add", name], check=False, capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
    return ok


@contextlib.contextmanager
def bridged_namespaces(hosts: tuple[str, ...], octet: int = 27):
    """A bridge with 10.OCTET.N.1 on this namespace and a network namespace per name of
    ``hosts`` (at most 6 characters: link names have 15) at .2, .3, ... in order, each with
    its loopback up (a replica JVM listens on its own); removed on exit. Yields
    ``(subnet prefix, {host: netns}, {host: its link's name in it})``."""
    tag = secrets.token_hex(2)
    prefix = f"10.{octet}.{secrets.randbelow(200) + 20}"
    bridge = f"sqfbr{tag}"
    names = {h: f"sqf{tag}{h}" for h in hosts}
    try:
        ip("link", "add", bridge, "type", "bridge")
        ip("addr", "add", f"{prefix}.1/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        for n, (h, ns) in enumerate(names.items(), 2):
            ip("netns", "add", ns)
            ip("link", "add", f"sqfv{tag}{h}", "type", "veth", "peer", "name", f"sqfp{tag}{h}")
            ip("link", "set", f"sqfp{tag}{h}", "netns", ns)
            ip("link", "set", f"sqfv{tag}{h}", "master", bridge)
            ip("link", "set", f"sqfv{tag}{h}", "up")
            ip("-n", ns, "addr", "add", f"{prefix}.{n}/24", "dev", f"sqfp{tag}{h}")
            ip("-n", ns, "link", "set", f"sqfp{tag}{h}", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield prefix, names, {h: f"sqfp{tag}{h}" for h in names}
    finally:
        for ns in names.values():
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
