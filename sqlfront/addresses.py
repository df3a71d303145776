"""What kind of address a listener was given: loopback (reachable from this host only)
or a wildcard (every interface: no address another process could dial)."""

from __future__ import annotations

import ipaddress

#: listen hosts that name every interface, so no address a peer could dial
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address or ``localhost``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
