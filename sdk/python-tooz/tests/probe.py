"""A test program for test/integrations/tooz.test.ts: one tooz coordinator on the fencekeeper backend,
made the way a user makes one (tooz.coordination.get_coordinator with a fencekeeper:// URL, found through
the tooz.backends entry point), printing one JSON line per event, times in ms since the epoch:

  probe.py lock  --url URL --member M --name LOCK
      acquires the lock (blocking) with coordinator.get_lock(LOCK) and holds it; once it is lost, acquires
      it again (waits in line), until `release`.
  probe.py elect --url URL --member M --group G
      watch_elected_as_leader(G) and watch_leadership_lost(G), run_watchers() every 100 ms.

  {"event": "ready"}                                    the coordinator is started (with its heart)
  {"event": "held", "generation": "7", "resource": ..., "lease_id": ...}   lock acquired / elected
  {"event": "lost", "generation": "7", "why": "deadline"}                 the lock's lease / the leadership ended

stdin, one command a line:
  write KEY VALUE   FencedStoreService.Put with the last token held (held or not: the write a holder that
                    ignored its loss signal would make): {"event": "written", "generation"} or
                    {"event": "refused", "reason": "STALE_TOKEN" | "LEASE_NOT_HELD", "error": class}
  release           lock: lock.release(); elect: unwatch, then stand_down_group_leader(G):
                    {"event": "released", "ok": bool}
  leader            {"event": "leader", "member": get_leader(G)}
At the end of stdin: coordinator.stop(), {"event": "stopped"}, exit 0."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

import fencekeeper
from tooz import coordination

_out = threading.Lock()


def out(event: str, **fields: Any) -> None:
    with _out:
        sys.stdout.write(json.dumps({"event": event, "at": int(time.time() * 1000), **fields}) + "\n")
        sys.stdout.flush()


def token_fields(t: fencekeeper.Token) -> dict[str, Any]:
    return {"generation": str(t.generation), "resource": t.resource, "lease_id": str(t.lease_id)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["lock", "elect"])
    p.add_argument("--url", required=True)
    p.add_argument("--member", required=True)
    p.add_argument("--name", default="probe-lock")
    p.add_argument("--group", default="probe-group")
    a = p.parse_args()

    coordinator = coordination.get_coordinator(a.url, a.member.encode())
    coordinator.start(start_heart=True)
    out("ready", driver=type(coordinator).__name__)
    last: list[fencekeeper.Token] = []
    done = threading.Event()
    lock = coordinator.get_lock(a.name.encode())
    hooks: dict[str, Any] = {}

    def run_lock() -> None:
        while not done.is_set():
            if not lock.acquire(blocking=True):
                continue
            token = lock.token
            assert token is not None
            last[:] = [token]
            out("held", **token_fields(token))
            lease = lock.lease
            while not done.is_set() and not lease.lost.wait(0.1):
                pass
            if lease.error is not None and lease.error.why != "released":
                out("lost", generation=str(token.generation), why=lease.error.why)

    def run_elect() -> None:
        def elected(e: Any) -> None:
            last[:] = [e.token]
            out("held", member=e.member_id.decode(), **token_fields(e.token))

        def lost(e: Any) -> None:
            out("lost", generation=str(e.token.generation), why=e.error.why if e.error else "")

        hooks["elected"] = elected
        coordinator.watch_elected_as_leader(a.group, elected)
        coordinator.watch_leadership_lost(a.group, lost)
        while not done.wait(0.1):
            try:
                coordinator.run_watchers()
            except Exception as e:  # noqa: BLE001 (a failed round is reported and tried again)
                out("watchers-failed", error=f"{type(e).__name__}: {e}")

    worker = threading.Thread(target=run_lock if a.mode == "lock" else run_elect, daemon=True)
    worker.start()

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "write":
            if not last:
                out("refused", reason=None, error="nothing held yet")
                continue
            token = last[0]
            try:
                coordinator.client.store.put(token, words[1], words[2])
                out("written", generation=str(token.generation))
            except fencekeeper.FencekeeperError as e:
                out("refused", generation=str(token.generation), reason=e.reason, error=type(e).__name__)
        elif words[0] == "release":
            if a.mode == "lock":
                done.set()
                lock.cancel()  # a worker waiting in line gives up
                out("released", ok=lock.release())
            else:
                coordinator.unwatch_elected_as_leader(a.group, hooks["elected"])
                out("released", ok=coordinator.stand_down_group_leader(a.group))
        elif words[0] == "leader":
            member = coordinator.get_leader(a.group).get()
            out("leader", member=member.decode() if member else None)
    done.set()
    lock.cancel()
    coordinator.stop()
    out("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
