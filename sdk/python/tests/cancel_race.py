"""probe.py cancel-race: waiting acquires cancelled at the moment their turn comes leave nothing held.

Each round: a holder takes the resource, `waiters` threads wait in line with a cancel event each, then the
holder releases while every cancel is set (after a delay that moves through the grant's window). An acquire
that still returns a lease releases it; after that the resource must be free within a second (Describe),
also when a grant's answer was in flight as its caller gave up. Prints one JSON line; exit 1 on a leak."""

from __future__ import annotations

import json
import random
import threading
import time

import fencekeeper


def cancel_race(server: str, resource: str, rounds: int, waiters: int, sessions: bool) -> int:
    # A client each: with sessions, each waiter waits on a session of its own (a session takes a resource
    # once at a time; a second acquire of it on the same client goes on a lease of its own).
    client = fencekeeper.Client(server, sessions=sessions)
    clients = [fencekeeper.Client(server, sessions=sessions) for _ in range(waiters)]
    rng = random.Random(7)
    leaks: list[dict[str, object]] = []
    granted = canceled = 0
    try:
        for n in range(rounds):
            holder = client.acquire(resource, ttl=10, wait=10.0, holder="holder")
            cancels = [threading.Event() for _ in range(waiters)]
            leases: list[fencekeeper.Lease] = []
            errors: list[BaseException] = []

            def wait(i: int) -> None:
                try:
                    leases.append(clients[i].acquire(resource, ttl=10, wait=True, cancel=cancels[i], holder=f"waiter-{n}-{i}"))
                except fencekeeper.CanceledError as e:
                    pass
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)

            threads = [threading.Thread(target=wait, args=(i,)) for i in range(waiters)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while client.describe(resource).waiters < waiters:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"round {n}: the waiters never all stood in line")
                time.sleep(0.01)
            releasing = threading.Thread(target=holder.release)
            releasing.start()
            time.sleep(rng.random() * 0.02)
            for c in cancels:
                c.set()
            releasing.join()
            for t in threads:
                t.join(10)
            if errors:
                raise errors[0]
            granted += len(leases)
            canceled += waiters - len(leases)
            for lease in leases:
                lease.release()
            free_by = time.monotonic() + 1
            while True:
                d = client.describe(resource)
                if not d.held:
                    break
                if time.monotonic() > free_by:
                    leaks.append({"round": n, "holder": d.holder, "generation": d.token.generation if d.token else None})
                    break
                time.sleep(0.02)
            if leaks:
                break
    finally:
        for c in [client, *clients]:
            c.close()
    print(json.dumps({"rounds": rounds, "granted": granted, "canceled": canceled, "leaks": leaks}), flush=True)
    return 1 if leaks else 0
