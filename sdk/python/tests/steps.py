"""What probe.py's commands share: the failure of a step, and a check that says "ok" when it holds."""

from __future__ import annotations


class Unexpected(Exception):
    """A step did not go as SCENARIO.md, or the command's own description, says."""


def check(ok: bool, what: str) -> None:
    """Prints "ok <what>" when ok holds; raises Unexpected(what) when it does not."""
    if not ok:
        raise Unexpected(what)
    print(f"ok {what}", flush=True)
