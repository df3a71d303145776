"""Jepsen-style consistency checks of sqlfront (issue 28): workload, nemesis, checker."""
