"""probe.py elect-aio: the election and semaphore helpers of fencekeeper.aio, against a real server, for
test/sdk/python.test.ts: "ok ..." per step, exit 0, or "FAIL ..." and exit 1."""

from __future__ import annotations

import asyncio
from typing import Any

import fencekeeper
import fencekeeper.aio
from steps import Unexpected, check


async def eventually(probe: Any, what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            raise Unexpected(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def run(server: str, resource: str) -> None:
    async with fencekeeper.aio.Client(server, holder="py-aio-a") as a, fencekeeper.aio.Client(server, holder="py-aio-b") as b:
        seen: list[int | None] = []

        async def watch() -> None:
            async for change in b.observe_leaders(resource):
                seen.append(change.leader.token.generation if change.leader else None)

        watcher = asyncio.create_task(watch())
        la = await a.campaign(resource, "a-1", ttl=2)
        now = await b.leader(resource)
        check(now is not None and now.holder == "py-aio-a" and now.value == b"a-1" and now.token.generation == la.token.generation, "campaign: elected, leader() gives it with its value")
        await la.proclaim("a-2")
        now = await b.leader(resource)
        check(now is not None and now.value == b"a-2", "proclaim: a new value, the same leader")

        events: list[tuple[str, Any]] = []
        elected = asyncio.Event()

        async def on_elected(lost: asyncio.Event, token: fencekeeper.Token, leadership: Any) -> None:
            events.append(("elected", token.generation))
            elected.set()
            await lost.wait()

        leading = asyncio.create_task(
            b.lead(
                resource,
                on_elected,
                on_deposed=lambda e: events.append(("deposed", e.why if e else None)),
                on_new_leader=lambda l: events.append(("new-leader", l.token.generation if l else None)),
                value="b-1",
                ttl=2,
            )
        )

        async def b_waits() -> bool:
            return (await a.describe(resource)).waiters == 1

        await eventually(b_waits, "B campaigns")
        await la.resign()
        await asyncio.wait_for(elected.wait(), 10)
        gb = events[[e[0] for e in events].index("elected")][1]
        check(la.lost.is_set() and gb > la.token.generation, "resign: B's lead() is elected with a greater generation")
        leading.cancel()
        await asyncio.gather(leading, return_exceptions=True)
        check(("deposed", "released") in events and not (await a.describe(resource)).held, "cancelling lead(): resigned, on_deposed called")
        check(("new-leader", la.token.generation) in events and ("new-leader", gb) in events, "on_new_leader: A, then B")

        async def seen_b() -> bool:
            return gb in seen

        await eventually(seen_b, "B observed")
        leaders = [g for i, g in enumerate(seen) if g is not None and (i == 0 or seen[i - 1] != g)]
        check(leaders == [la.token.generation, gb], f"observe_leaders: A then B ({leaders})")
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)

        sem = resource + "-semaphore"
        p1 = await a.semaphore(sem, 2, ttl=2)
        p2 = await b.semaphore(sem, 2, ttl=2)
        check(p1.token.shared and p2.token.shared and p1.token.generation != p2.token.generation, "semaphore: two permits of 2, shared tokens")
        try:
            await a.semaphore(sem, 2, wait=0.3)
            check(False, "semaphore: a third waits")
        except fencekeeper.TimeoutError:
            check(True, "semaphore: a third waits, at most 0.3 s here")
        try:
            await a.semaphore(sem, 3, wait=0.3)
            check(False, "semaphore: another N is refused")
        except fencekeeper.FencekeeperError as e:
            check(e.reason == "MAX_HOLDERS_MISMATCH", f"semaphore: another N is refused ({e.reason})")
        d = await a.describe(sem)
        check(d.max_holders == 2 and len(d.holders) == 2, "describe: max_holders 2, two holders")
        try:
            await p1.put("k", "v", mode="order")
            check(False, "semaphore: a permit's write is refused")
        except fencekeeper.FencekeeperError as e:
            check(e.reason == "SHARED_TOKEN", "semaphore: a permit's write is refused SHARED_TOKEN")
        await p1.release()
        await p2.release()
        check(not (await a.describe(sem)).held, "released")


def main(server: str, resource: str) -> int:
    try:
        asyncio.run(run(server, resource))
    except Unexpected as e:
        print(f"FAIL {e}", flush=True)
        return 1
    return 0
