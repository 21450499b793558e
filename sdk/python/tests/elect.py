"""probe.py elect: runs client.lead() on a resource for test/sdk/sdk-suite.ts and
test/sdk/election-three-languages.test.ts, printing one JSON line per event (elected, abort, deposed,
new-leader, and leader for each change client.observe_leaders() gives), and answering the commands of
its stdin: resign, proclaim V, leader, second (a second client's lead() in this process), semaphore R N
WAIT_MS, permit-write K V, describe-of R, release-permits. With linger, on_elected goes on that long after
its signal is set (printing returned). At the end of stdin it stops lead() and prints stopped."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import fencekeeper
from probe import failed, ms, out


def leader_fields(leader: fencekeeper.Leader | None) -> dict[str, Any]:
    if leader is None:
        return {"holder": None, "generation": None, "value": None}
    return {"holder": leader.holder, "generation": str(leader.token.generation), "value": leader.value.decode()}


def token_fields(t: fencekeeper.Token) -> dict[str, Any]:
    return {"resource": t.resource, "generation": str(t.generation), "lease_id": str(t.lease_id), "shared": t.shared}


def elect(server: str, resource: str, ttl: float, holder: str, value: str, credentials: fencekeeper.Credentials | None, linger: float = 0) -> int:
    client = fencekeeper.Client(server, holder=holder, credentials=credentials)
    stop = threading.Event()
    current: list[fencekeeper.Leadership] = []
    permits: list[fencekeeper.Lease] = []
    observation = client.observe_leaders(resource)

    def observe() -> None:
        try:
            for change in observation:
                out("leader", revision=str(change.revision), **leader_fields(change.leader))
        except fencekeeper.FencekeeperError as e:
            out("observe-error", error=str(e))

    results: list[BaseException] = []

    def run(c: fencekeeper.Client, n: int) -> None:
        def on_elected(signal: fencekeeper.LossSignal, token: fencekeeper.Token, leadership: fencekeeper.Leadership) -> None:
            current[:] = [leadership]
            out("elected", loop=n, token=token_fields(token), valid_until=ms(leadership.lease.valid_until))
            signal.wait()
            e = signal.error
            out("abort", loop=n, generation=str(token.generation), why=e.why if e else "", valid_until=ms(e.valid_until) if e else None, lost_at=ms(e.lost_at) if e else None)
            time.sleep(linger)  # as code that ignores its signal would
            out("returned", loop=n, generation=str(token.generation))

        def on_deposed(e: fencekeeper.LeaseLostError | None) -> None:
            out("deposed", loop=n, generation=str(e.token.generation) if e else None, why=e.why if e else "")

        try:
            c.lead(resource, on_elected, on_deposed=on_deposed, on_new_leader=lambda l: out("new-leader", loop=n, **leader_fields(l)), value=value, stop=stop, ttl=ttl)
        except BaseException as e:  # noqa: BLE001
            results.append(e)

    observer = threading.Thread(target=observe, daemon=True)
    leading = threading.Thread(target=run, args=(client, 1), daemon=True)
    second: threading.Thread | None = None
    second_client: fencekeeper.Client | None = None
    observer.start()
    leading.start()
    for line in sys.stdin:
        args = line.split()
        if not args:
            continue
        leadership = current[0] if current else None
        try:
            if args[0] == "resign" and leadership is not None:
                leadership.resign()
                out("resigned", generation=str(leadership.token.generation))
            elif args[0] == "proclaim" and len(args) == 2 and leadership is not None:
                try:
                    out("proclaim", ok=True, revision=str(leadership.proclaim(args[1])))
                except fencekeeper.FencekeeperError as e:
                    out("proclaim", ok=False, error=type(e).__name__, reason=e.reason or "")
            elif args[0] == "second" and second is None:
                second_client = fencekeeper.Client(server, holder=holder + "-2", credentials=credentials)
                second = threading.Thread(target=run, args=(second_client, 2), daemon=True)
                second.start()
                out("second-started")
            elif args[0] == "leader":
                out("leader-now", **leader_fields(client.leader(resource)))
            elif args[0] == "semaphore" and len(args) == 4:
                # WAIT_MS: 0 as long as it takes, -1 not at all, else at most that long.
                wait = False if int(args[3]) < 0 else int(args[3]) / 1000 if int(args[3]) else True
                try:
                    permit = client.semaphore(args[1], int(args[2]), wait=wait, ttl=ttl)
                    permits.append(permit)
                    out("permit", ok=True, token=token_fields(permit.token))
                except fencekeeper.FencekeeperError as e:
                    out("permit", ok=False, error=type(e).__name__, reason=e.reason or "", code=e.code.name)
            elif args[0] == "permit-write" and len(args) == 3 and permits:
                try:
                    out("permit-write", ok=True, fence=str(permits[-1].put(args[1], args[2], mode="order").fence))
                except fencekeeper.FencekeeperError as e:
                    out("permit-write", **failed(e))
            elif args[0] == "describe-of" and len(args) == 2:
                d = client.describe(args[1])
                holders = [{"holder": h.holder, "generation": str(h.token.generation), "shared": h.token.shared} for h in d.holders]
                out("described", held=d.held, value=d.value.decode(), max_holders=d.max_holders, holders=holders)
            elif args[0] == "release-permits":
                for permit in permits:
                    permit.release()
                permits.clear()
                out("permits-released")
            else:
                out("error", message=f"unknown command or nothing to do it on: {line.strip()}")
        except fencekeeper.FencekeeperError as e:
            out("error", message=f"{type(e).__name__}: {e}")
    stop.set()
    leading.join()
    if second is not None:
        second.join()
    if second_client is not None:
        second_client.close()
    observation.close()
    observer.join()
    out("stopped", **({"error": repr(results[0])} if results else {}))
    client.close()
    return 0
