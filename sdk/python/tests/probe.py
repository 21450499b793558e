"""A test program for test/sdk/python.test.ts, on the installed fencekeeper library:

  probe.py scenario --server URL --resource R [--sessions] [credentials]
      the conformance scenario (test/conformance/SCENARIO.md) through the library; "ok ..." per step,
      exit 0, or "FAIL ..." on stderr and exit 1.
  probe.py hold --server URL[,URL...] --resource R [--ttl SECONDS] [--lock-delay SECONDS] [--asyncio] [--shared] [--preempt] [--scoped] [--sessions] [credentials]
      acquires R (with --scoped, through the scoped form client.lease()) and keeps it, printing one JSON line per event, times in ms since the epoch:
        {"event": "granted", "token": {...}, "valid_until": ms, "at": ms}
        {"event": "renewed" | "session-opened" | "session-renewed" | "stream-opened" | "stream-failed", ...}     (the client's events)
        {"event": "lost", "why": ..., "at": ms (when the loss signal fired), "valid_until": ms}
                  (threads: printed by a loss listener; --asyncio: once the asyncio.Event woke a task)
      and answers each line of stdin:
        write KEY VALUE        a write through the lease: {"event": "write", "sent": bool, "ok": bool, ...}
        force-write KEY VALUE  the same write with the lease's token, bypassing the lease (FENCE_MODE_ORDER)
        status                 {"event": "status", "held": bool, "token": {...}, "valid_until": ms}
        release                {"event": "released"}
        describe               {"event": "describe", "held": bool, "holders": [...], "lock_delay_ms": ms, "lock_delay_until": ms}
        observe                the first message of observe(), the state now: as describe, with max_holders and value
        acquire                another acquire of R without wait: {"event": "acquire", "ok": bool, "error": class name}
      --asyncio runs the same on fencekeeper.aio, the loss seen through its asyncio.Event. On a lease of its own
      (Client(sessions=False)) unless --sessions.

  probe.py elect --server URL --resource R [--ttl SECONDS] [--holder H] [--value V]
      runs client.lead() on R and the election and semaphore commands (elect.py)
  probe.py elect-aio --server URL --resource R
      the election and semaphore helpers of fencekeeper.aio (elect_aio.py): "ok ..." per step
  probe.py options --server URL --resource R
      AcquireOptions through lease(), semaphore() and campaign(), threads and fencekeeper.aio (options.py): "ok ..." per step

  probe.py reasons
      prints the error class the library raises for each reason of the generated ErrorReason enum (null for
      none), and for NOT_FOUND without a reason, as one JSON object.

credentials: --bearer JWT, --tls-ca FILE, --tls-cert FILE --tls-key FILE (as the conformance clients)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading
import time
from datetime import datetime
from typing import Any, Awaitable, Callable

import fencekeeper
import fencekeeper.aio
import grpc
from fencekeeper._error_mapping import error_types, from_status
from google.rpc import status_pb2
from scenario import run_scenario
from steps import Unexpected

_print_lock = threading.Lock()


def ms(t: datetime | float | None = None) -> int:
    if t is None:
        t = time.time()
    return int((t.timestamp() if isinstance(t, datetime) else t) * 1000)


def out(event: str, **fields: Any) -> None:
    with _print_lock:
        print(json.dumps({"event": event, **fields, "at": fields.get("at", ms())}), flush=True)


def client_event(e: dict[str, Any]) -> None:
    if e["type"] in ("renewed", "session-renewed"):
        out(e["type"], sent_at=ms(e["sent_at"]), confirmed_at=ms(e["confirmed_at"]), valid_until=ms(e["valid_until"]))
    elif e["type"] == "session-opened":
        out("session-opened", session_id=str(e["session_id"]))
    elif e["type"] in ("stream-opened", "stream-failed"):
        out(e["type"], url=e["url"], error=str(e.get("error", "")))


def failed(e: fencekeeper.FencekeeperError) -> dict[str, Any]:
    """A write's failure: sent is False when the library refused it before sending (the lease is lost)."""
    if isinstance(e, fencekeeper.LeaseLostError):
        return {"sent": False, "ok": False, "code": "LEASE_LOST", "why": e.why}
    return {"sent": True, "ok": False, "code": e.code.name, "reason": e.reason or "", "error": type(e).__name__}


def outcome(call: Callable[[], fencekeeper.Commit]) -> dict[str, Any]:
    try:
        return {"sent": True, "ok": True, "fence": str(call().fence)}
    except fencekeeper.FencekeeperError as e:
        return failed(e)


async def outcome_async(call: Callable[[], Awaitable[fencekeeper.Commit]]) -> dict[str, Any]:
    try:
        return {"sent": True, "ok": True, "fence": str((await call()).fence)}
    except fencekeeper.FencekeeperError as e:
        return failed(e)


def lost_fields(error: fencekeeper.LeaseLostError) -> dict[str, Any]:
    fields: dict[str, Any] = {"why": error.why, "at": ms(error.lost_at), "valid_until": ms(error.valid_until)}
    cause = error.__cause__
    if isinstance(cause, fencekeeper.PreemptedError):
        fields.update(reason=cause.reason, by_generation=str(cause.by_generation), by_principal=cause.by_principal)
    return fields


def described(d: fencekeeper.Description) -> dict[str, Any]:
    return {
        "held": d.held,
        "holders": [{"holder": h.holder, "generation": str(h.token.generation)} for h in d.holders],
        "lock_delay_ms": round(d.lock_delay * 1000) if d.lock_delay is not None else 0,
        **({"lock_delay_until": ms(d.lock_delay_until)} if d.lock_delay_until else {}),
    }


def observed(o: fencekeeper.Ownership) -> dict[str, Any]:
    return {
        "held": o.held,
        "holders": [{"holder": h.holder, "generation": str(h.token.generation), "principal": h.principal or "", "value": h.value.decode()} for h in o.holders],
        "lock_delay_ms": round(o.lock_delay * 1000) if o.lock_delay is not None else 0,
        **({"lock_delay_until": ms(o.lock_delay_until)} if o.lock_delay_until else {}),
        "max_holders": o.max_holders,
        "value": o.value.decode(),
    }


def first_observed(observation: fencekeeper.Observation) -> dict[str, Any]:
    with observation:
        return observed(next(observation))


async def first_observed_async(observation: Any) -> dict[str, Any]:
    async with contextlib.aclosing(observation):
        async for o in observation:
            return observed(o)
    return {"error": "the stream ended"}


def acquired(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        call()
        return {"ok": True}
    except fencekeeper.FencekeeperError as e:
        return {"ok": False, "error": type(e).__name__, "reason": e.reason or ""}


def held_options(args: argparse.Namespace) -> fencekeeper.AcquireOptions:
    """What `hold` acquires with, threads and fencekeeper.aio, scoped or not."""
    return fencekeeper.AcquireOptions(ttl=args.ttl, lock_delay=args.lock_delay, shared=args.shared, preempt=args.preempt)


def hold(args: argparse.Namespace, credentials: fencekeeper.Credentials | None) -> int:
    client = fencekeeper.Client(args.server, credentials=credentials, holder="python-sdk-probe", sessions=args.sessions, on_event=client_event)
    if args.scoped:
        with contextlib.ExitStack() as scope:
            lease = scope.enter_context(client.lease(args.resource, held_options(args)))
            return serve(args, client, lease)
    return serve(args, client, client.acquire(args.resource, held_options(args)))


def serve(args: argparse.Namespace, client: fencekeeper.Client, lease: fencekeeper.Lease) -> int:
    out("granted", token=lease.token.to_json(), valid_until=ms(lease.valid_until))

    # Printed by a loss listener, which runs on the thread that finds the loss, right after the event is
    # set: before a write that found it raises, so the line comes before that write's.
    lease.on_lost(lambda error: out("lost", event_set=lease.lost.is_set(), **lost_fields(error)))
    for line in sys.stdin:
        cmd, *rest = line.split() or [""]
        if cmd == "write":
            out("write", **outcome(lambda: lease.put(rest[0], rest[1])))
        elif cmd == "force-write":
            out("write", forced=True, **outcome(lambda: client.store.put(lease.token, rest[0], rest[1], mode="order")))
        elif cmd == "status":
            out("status", held=lease.held, token=lease.token.to_json(), valid_until=ms(lease.valid_until))
        elif cmd == "release":
            lease.release()
            out("released")
        elif cmd == "describe":
            out("describe", **described(client.describe(args.resource)))
        elif cmd == "observe":
            out("observe", **first_observed(client.observe(args.resource)))
        elif cmd == "acquire":
            out("acquire", **acquired(lambda: client.acquire(args.resource, ttl=args.ttl).release()))
    client.close()
    return 0


async def hold_async(args: argparse.Namespace, credentials: fencekeeper.Credentials | None) -> int:
    client = fencekeeper.aio.Client(args.server, credentials=credentials, holder="python-sdk-probe-aio", sessions=args.sessions, on_event=client_event)
    if args.scoped:
        async with contextlib.AsyncExitStack() as scope:
            lease = await scope.enter_async_context(client.lease(args.resource, held_options(args)))
            return await serve_async(args, client, lease)
    return await serve_async(args, client, await client.acquire(args.resource, held_options(args)))


async def serve_async(args: argparse.Namespace, client: fencekeeper.aio.Client, lease: fencekeeper.aio.Lease) -> int:
    out("granted", token=lease.token.to_json(), valid_until=ms(lease.valid_until))

    async def watch() -> None:
        error = await lease.wait_lost()
        out("lost", seen_at=ms(), **lost_fields(error))

    watcher = asyncio.create_task(watch())
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "")

    threading.Thread(target=read, daemon=True).start()
    while line := await lines.get():
        cmd, *rest = line.split() or [""]
        if cmd == "write":
            out("write", **await outcome_async(lambda: lease.put(rest[0], rest[1])))
        elif cmd == "force-write":
            out("write", forced=True, **await outcome_async(lambda: client.store.put(lease.token, rest[0], rest[1], mode="order")))
        elif cmd == "status":
            out("status", held=lease.held, token=lease.token.to_json(), valid_until=ms(lease.valid_until))
        elif cmd == "release":
            await lease.release()
            out("released")
        elif cmd == "describe":
            out("describe", **described(await client.describe(args.resource)))
        elif cmd == "observe":
            out("observe", **await first_observed_async(client.observe(args.resource)))
        elif cmd == "acquire":

            async def again() -> None:
                await (await client.acquire(args.resource, ttl=args.ttl)).release()

            try:
                await again()
                out("acquire", ok=True)
            except fencekeeper.FencekeeperError as e:
                out("acquire", ok=False, error=type(e).__name__, reason=e.reason or "")
    watcher.cancel()
    await client.close()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="probe.py")
    parser.add_argument("command", choices=["scenario", "hold", "reasons", "elect", "elect-aio", "options", "cancel-race"])
    parser.add_argument("--holder", default="py-probe", help="elect: the holder label")
    parser.add_argument("--value", default="", help="elect: the value to campaign with")
    parser.add_argument("--linger", type=float, default=0, help="elect: seconds on_elected goes on after its signal")
    parser.add_argument("--server", default="", help="http(s)://host:port, several comma-separated")
    parser.add_argument("--resource", default="")
    parser.add_argument("--scoped", action="store_true", help="hold: through client.lease(), the scoped form")
    parser.add_argument("--ttl", type=float, default=2.0, help="seconds")
    parser.add_argument("--asyncio", action="store_true")
    parser.add_argument("--sessions", action="store_true", help="acquire on sessions (Client(sessions=True), the library's default); without it, on leases of their own (Client(sessions=False))")
    parser.add_argument("--lock-delay", type=float, default=0, help="hold: the lock-delay, seconds (acquire(lock_delay=...))")
    parser.add_argument("--shared", action="store_true", help="hold: a shared acquisition (acquire(shared=True))")
    parser.add_argument("--preempt", action="store_true", help="hold: take the resource from its holder (acquire(preempt=True))")
    parser.add_argument("--rounds", type=int, default=20, help="cancel-race: how many rounds")
    parser.add_argument("--waiters", type=int, default=4, help="cancel-race: waiting acquires cancelled each round")
    parser.add_argument("--bearer", default="")
    parser.add_argument("--tls-ca", default="")
    parser.add_argument("--tls-cert", default="")
    parser.add_argument("--tls-key", default="")
    args = parser.parse_args(argv)
    if args.command == "reasons":
        bare = from_status(status_pb2.Status(code=grpc.StatusCode.NOT_FOUND.value[0], message="not found"))
        print(json.dumps({"reasons": error_types(), "not_found_without_reason": type(bare).__name__}), flush=True)
        return 0
    if not args.server or not args.resource:
        parser.error("--server and --resource are required")

    def read(path: str) -> bytes | None:
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    credentials = fencekeeper.Credentials(
        bearer=args.bearer or None, root_certificates=read(args.tls_ca), certificate_chain=read(args.tls_cert), private_key=read(args.tls_key)
    )
    if args.command == "scenario":
        try:
            run_scenario(args.server, args.resource, credentials, args.sessions)
        except Unexpected as e:
            print(f"FAIL {e}", file=sys.stderr, flush=True)
            return 1
        except fencekeeper.FencekeeperError as e:
            print(f"FAIL {type(e).__name__} {e.code.name} {e.reason or ''}: {e}", file=sys.stderr, flush=True)
            return 1
        return 0
    if args.command == "elect-aio":
        from elect_aio import main as elect_aio

        return elect_aio(args.server, args.resource)
    if args.command == "options":
        from options import main as options

        return options(args.server, args.resource)
    if args.command == "cancel-race":
        from cancel_race import cancel_race

        return cancel_race(args.server, args.resource, args.rounds, args.waiters, args.sessions)
    if args.command == "elect":
        from elect import elect

        return elect(args.server, args.resource, args.ttl, args.holder, args.value, credentials, args.linger)
    if args.asyncio:
        return asyncio.run(hold_async(args, credentials))
    return hold(args, credentials)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
