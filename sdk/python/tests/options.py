"""probe.py options: AcquireOptions through every entry point, against a real server, for test/sdk/python.test.ts:
the scoped lease() (threads and fencekeeper.aio) sends value, max_holders and preempt; semaphore() and
campaign() wait by default and keep an explicit wait=False. "ok ..." per step, exit 0, or "FAIL ..." and exit 1."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable

import fencekeeper
import fencekeeper.aio
from steps import Unexpected, check

TTL = 2.0
WAITED = 0.5
"""How long a wait in line is let run before it is cancelled: an acquire that did not wait has failed long before."""


def held_error(call: Callable[[], Any]) -> float:
    """Runs call(), which must fail with ResourceHeldError; returns how long it took."""
    started = time.monotonic()
    try:
        call()
    except fencekeeper.ResourceHeldError:
        return time.monotonic() - started
    raise Unexpected("expected ResourceHeldError, and the acquire succeeded")


def waits(call: Callable[[threading.Event], Any]) -> bool:
    """Whether call(cancel) waits in line until its cancel event is set (CanceledError) rather than failing."""
    cancel = threading.Event()
    threading.Timer(WAITED, cancel.set).start()
    started = time.monotonic()
    try:
        call(cancel)
    except fencekeeper.CanceledError:
        return time.monotonic() - started >= WAITED * 0.8
    except fencekeeper.FencekeeperError:
        return False
    raise Unexpected("expected the acquire to wait, and it was granted")


def on_threads(server: str, resource: str) -> None:
    with fencekeeper.Client(server, holder="py-options-a") as a, fencekeeper.Client(server, holder="py-options-b") as b:
        r = f"{resource}-lease-semaphore"
        with a.lease(r, fencekeeper.AcquireOptions(ttl=TTL, value="permit-1"), max_holders=2) as permit:
            d = a.describe(r)
            check(
                permit.token.shared and d.max_holders == 2 and [h.value for h in d.holders] == [b"permit-1"],
                "lease() sends value and max_holders: a shared permit of 2 with its value",
            )

        r = f"{resource}-lease-preempt"
        old = b.acquire(r, ttl=4)
        with a.lease(r, ttl=TTL, preempt=True) as taken:
            check(taken.token.generation > old.token.generation and a.describe(r).holder == "py-options-a", "lease() sends preempt: granted over the holder at once")
            check(old.lost.wait(10) and old.error is not None and old.error.why == "preempted", "lease(preempt=True): the old holder is lost, preempted")
        old.release()

        r = f"{resource}-semaphore"
        permit = a.semaphore(r, 1, ttl=TTL)
        took = held_error(lambda: b.semaphore(r, 1, wait=False, ttl=TTL))
        check(took < WAITED, f"semaphore(wait=False) keeps the no-wait: ResourceHeldError at once ({took:.2f} s)")
        took = held_error(lambda: b.semaphore(r, 1, fencekeeper.AcquireOptions(wait=False)))
        check(took < WAITED, f"semaphore(AcquireOptions(wait=False)) too ({took:.2f} s)")
        check(waits(lambda cancel: b.semaphore(r, 1, ttl=TTL, cancel=cancel)), "semaphore() waits by default")
        permit.release()

        r = f"{resource}-campaign"
        leadership = a.campaign(r, "a", ttl=TTL)
        took = held_error(lambda: b.campaign(r, "b", wait=False, ttl=TTL))
        check(took < WAITED, f"campaign(wait=False) keeps the no-wait: ResourceHeldError at once ({took:.2f} s)")
        check(waits(lambda cancel: b.campaign(r, "b", fencekeeper.AcquireOptions(ttl=TTL), cancel=cancel)), "campaign() waits by default")
        leadership.resign()
        refused = []
        for options in (fencekeeper.AcquireOptions(shared=True), fencekeeper.AcquireOptions(max_holders=2), fencekeeper.AcquireOptions(value=b"v")):
            try:
                b.campaign(f"{resource}-campaign-refused", "b", options)
            except fencekeeper.InvalidArgumentError:
                refused.append(True)
        check(refused == [True] * 3 and b.describe(f"{resource}-campaign-refused").waiters == 0, "campaign refuses shared, max_holders and a value in its options: InvalidArgumentError, nothing sent")


async def on_asyncio(server: str, resource: str) -> None:
    async with fencekeeper.aio.Client(server, holder="py-options-aio-a") as a, fencekeeper.aio.Client(server, holder="py-options-aio-b") as b:

        async def waits_async(acquiring: Any) -> bool:
            try:
                await asyncio.wait_for(acquiring, WAITED)
            except fencekeeper.FencekeeperError:  # before asyncio.TimeoutError, which fencekeeper.TimeoutError is too
                return False
            except asyncio.TimeoutError:
                return True
            raise Unexpected("expected the acquire to wait, and it was granted")

        async def held_error_async(acquiring: Any) -> float:
            started = time.monotonic()
            try:
                await acquiring
            except fencekeeper.ResourceHeldError:
                return time.monotonic() - started
            raise Unexpected("expected ResourceHeldError, and the acquire succeeded")

        r = f"{resource}-aio-lease-semaphore"
        async with a.lease(r, fencekeeper.AcquireOptions(ttl=TTL, value="permit-1"), max_holders=2) as permit:
            d = await a.describe(r)
            check(
                permit.token.shared and d.max_holders == 2 and [h.value for h in d.holders] == [b"permit-1"],
                "aio: lease() sends value and max_holders: a shared permit of 2 with its value",
            )

        r = f"{resource}-aio-lease-preempt"
        old = await b.acquire(r, ttl=4)
        async with a.lease(r, ttl=TTL, preempt=True) as taken:
            check(taken.token.generation > old.token.generation and (await a.describe(r)).holder == "py-options-aio-a", "aio: lease() sends preempt: granted over the holder at once")
            error = await asyncio.wait_for(old.wait_lost(), 10)
            check(error.why == "preempted", "aio: lease(preempt=True): the old holder is lost, preempted")
        await old.release()

        r = f"{resource}-aio-semaphore"
        permit = await a.semaphore(r, 1, ttl=TTL)
        took = await held_error_async(b.semaphore(r, 1, wait=False, ttl=TTL))
        check(took < WAITED, f"aio: semaphore(wait=False) keeps the no-wait: ResourceHeldError at once ({took:.2f} s)")
        check(await waits_async(b.semaphore(r, 1, ttl=TTL)), "aio: semaphore() waits by default")
        await permit.release()

        r = f"{resource}-aio-campaign"
        leadership = await a.campaign(r, "a", ttl=TTL, holder="py-options-aio-leader")
        leader = await b.leader(r)
        check(leader is not None and leader.holder == "py-options-aio-leader" and leader.value == b"a", "aio: campaign() sends holder and its value")
        took = await held_error_async(b.campaign(r, "b", fencekeeper.AcquireOptions(wait=False, ttl=TTL)))
        check(took < WAITED, f"aio: campaign(wait=False) keeps the no-wait: ResourceHeldError at once ({took:.2f} s)")
        check(await waits_async(b.campaign(r, "b", ttl=TTL)), "aio: campaign() waits by default")
        await leadership.resign()

        async def nobody_waits() -> bool:
            return [(await a.describe(x)).waiters for x in (f"{resource}-aio-semaphore", f"{resource}-aio-campaign")] == [0, 0]

        deadline = time.monotonic() + TTL
        while not await nobody_waits():
            if time.monotonic() > deadline:
                raise Unexpected("aio: a cancelled wait in line was left behind")
            await asyncio.sleep(0.05)
        check(True, "aio: the cancelled waits left nobody in line")


def main(server: str, resource: str) -> int:
    try:
        on_threads(server, resource)
        asyncio.run(on_asyncio(server, resource))
    except (Unexpected, fencekeeper.FencekeeperError) as e:
        print(f"FAIL {type(e).__name__}: {e}", flush=True)
        return 1
    return 0
