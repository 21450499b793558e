"""fencekeeper for asyncio: the same client, leases and semantics as fencekeeper.Client, awaitable.

    async with fencekeeper.aio.Client("http://127.0.0.1:50051") as client:
        async with client.lease("orders", ttl=10) as lease:
            await lease.put("total", "17")

It wraps the threaded client rather than re-implementing it on grpc.aio: one KeepAlive stream and one
scheduler serve threads and coroutines alike, and a lease's deadline is kept by the keep-alive thread, so
an event loop blocked by a long coroutine does not delay the loss (the asyncio.Event is set when the loop
runs again; lease.check() and lease.held look at the clock themselves). Blocking calls run on the
client's own thread pool. Cancelling the task that awaits acquire() cancels a waiting acquire (a lease
granted meanwhile is released) and waits until it has: once the CancelledError goes on, nothing is left
behind."""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, AsyncIterator, Callable, Sequence, TypeVar

from fencekeeper import client as _client
from fencekeeper import election as _election
from fencekeeper import lease as _lease
from fencekeeper.acquire_options import AcquireOptions, _merged
from fencekeeper.client import Description, Ownership
from fencekeeper.errors import LeaseLostError
from fencekeeper.store import BatchResult, BatchWrite, Commit, Delete, Entry, FenceModeName, GetResult, Put, Value
from fencekeeper.token import Token

T = TypeVar("T")
_THREADS = 64
"""Threads for blocking calls; a waiting acquire holds one for as long as it waits."""


class Lease:
    """A held lease (see fencekeeper.Lease), with its loss as an asyncio.Event."""

    def __init__(self, core: _lease.Lease, run: Callable[..., Any], loop: asyncio.AbstractEventLoop):
        self._core = core
        self._run = run
        self._lost = asyncio.Event()

        def fire(_: LeaseLostError) -> None:
            try:
                loop.call_soon_threadsafe(self._lost.set)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        core.on_lost(fire)

    @property
    def token(self) -> Token:
        return self._core.token

    @property
    def ttl(self) -> float:
        return self._core.ttl

    @property
    def lost(self) -> asyncio.Event:
        """Set once the lease can no longer be assumed held. Reading it looks at the clock first."""
        if self._core.look():
            self._lost.set()
        return self._lost

    @property
    def held(self) -> bool:
        return not self.lost.is_set()

    @property
    def error(self) -> LeaseLostError | None:
        return self._core.error

    def check(self) -> None:
        """Raises the LeaseLostError once the lease is lost; call it right before acting on the lease."""
        self._core.check()

    async def wait_lost(self) -> LeaseLostError:
        """Waits until the lease is lost; returns why."""
        await self.lost.wait()
        error = self._core.error
        assert error is not None
        return error

    @property
    def valid_until(self) -> datetime:
        return self._core.valid_until

    @property
    def valid_until_monotonic(self) -> float:
        return self._core.valid_until_monotonic

    @property
    def last_confirmed_at(self) -> datetime:
        return self._core.last_confirmed_at

    async def release(self) -> None:
        """Gives the lease up; idempotent, never raises."""
        self._core._end("released")
        self._lost.set()
        await self._run(self._core.release)

    async def put(self, key: str, value: Value, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        self.check()
        return await self._run(functools.partial(self._core.put, key, value, mode=mode, idempotency_key=idempotency_key))

    async def delete(self, key: str, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        self.check()
        return await self._run(functools.partial(self._core.delete, key, mode=mode, idempotency_key=idempotency_key))

    async def txn(self, ops: Sequence[Put | Delete], *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        self.check()
        return await self._run(functools.partial(self._core.txn, ops, mode=mode, idempotency_key=idempotency_key))

    async def proclaim(self, value: Value) -> int:
        """As fencekeeper.Lease.proclaim()."""
        return await self._run(self._core.proclaim, value)

    async def get(self, key: str) -> GetResult:
        self.check()
        return await self._run(self._core.get, key)

    async def list(self, *, prefix: str = "", keys_only: bool = False) -> list[Entry]:
        self.check()
        return await self._run(lambda: list(self._core.list(prefix=prefix, keys_only=keys_only)))

    def __repr__(self) -> str:
        return repr(self._core)


class Store:
    """The fenced store with explicit tokens (see fencekeeper.Store), awaitable."""

    def __init__(self, core: Any, run: Callable[..., Any]):
        self._core = core
        self._run = run

    async def put(self, token: Token, key: str, value: Value, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return await self._run(functools.partial(self._core.put, token, key, value, mode=mode, idempotency_key=idempotency_key))

    async def delete(self, token: Token, key: str, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return await self._run(functools.partial(self._core.delete, token, key, mode=mode, idempotency_key=idempotency_key))

    async def txn(self, token: Token, ops: Sequence[Put | Delete], *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return await self._run(functools.partial(self._core.txn, token, ops, mode=mode, idempotency_key=idempotency_key))

    async def batch(self, writes: Sequence[BatchWrite]) -> list[BatchResult]:
        return await self._run(self._core.batch, writes)

    async def get(self, resource: str, key: str) -> GetResult:
        return await self._run(self._core.get, resource, key)

    async def fence(self, resource: str) -> tuple[int, int]:
        return await self._run(self._core.fence, resource)


class Client:
    """Takes the options of fencekeeper.Client."""

    def __init__(self, servers: str | Sequence[str] | None = None, **options: Any):
        self._core = _client.Client(servers, **options)
        self._threads = ThreadPoolExecutor(_THREADS, thread_name_prefix="fencekeeper-aio")
        self.store = Store(self._core.store, self._run)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, functools.partial(fn, *args))

    async def acquire(self, resource: str, options: AcquireOptions | None = None, **fields: Any) -> Lease:
        """As fencekeeper.Client.acquire(), with the same AcquireOptions and keyword fields; cancelling the
        awaiting task cancels it."""
        o = _merged("acquire", options, fields)
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        acquire = functools.partial(self._core.acquire, resource, o, cancel=cancel)
        acquiring = loop.run_in_executor(self._threads, acquire)
        try:
            core = await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            # The thread still waits: make it give up (it releases what it was granted meanwhile), and wait for
            # that, so that once the cancellation goes on nothing is left behind on the server.
            cancel.set()
            try:
                granted = await acquiring
            except Exception:  # noqa: BLE001 (CanceledError, or any failure: nothing is held either way)
                raise asyncio.CancelledError() from None
            await self._run(granted.release)  # granted just before the cancel was seen
            raise
        return Lease(core, self._run, loop)

    async def acquire_all(self, resources: Sequence[str], options: AcquireOptions | None = None, **fields: Any) -> list[Lease]:
        """As fencekeeper.Client.acquire_all(); cancelling the awaiting task cancels it, and nothing is held."""
        o = _merged("acquire_all", options, fields)
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        acquire = functools.partial(self._core.acquire_all, list(resources), o, cancel=cancel)
        acquiring = loop.run_in_executor(self._threads, acquire)
        try:
            cores = await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            cancel.set()
            try:
                granted = await acquiring
            except Exception:  # noqa: BLE001 (CanceledError, or any failure: nothing is held either way)
                raise asyncio.CancelledError() from None
            for g in granted:
                await self._run(g.release)
            raise
        return [Lease(core, self._run, loop) for core in cores]

    @asynccontextmanager
    async def lease(self, resource: str, options: AcquireOptions | None = None, **fields: Any) -> AsyncIterator[Lease]:
        """`async with client.lease(resource) as lease:` as fencekeeper.Client.lease(), with acquire()'s options."""
        lease = await self.acquire(resource, _merged("lease", options, fields))
        try:
            yield lease
            error = lease.error
            if error is not None and error.why != "released":
                raise error
        finally:
            await lease.release()

    async def describe(self, resource: str) -> Description:
        return await self._run(self._core.describe, resource)

    async def observe(self, resource: str) -> AsyncIterator[Ownership]:
        """The ownership of a resource now, then each change of holder; stop by leaving the loop."""
        observation = await self._run(self._core.observe, resource)
        end = object()
        try:
            while (x := await self._run(next, observation, end)) is not end:
                yield x
        finally:
            observation.close()

    async def token_keys(self) -> dict[str, bytes]:
        return await self._run(self._core.token_keys)

    # Leader election and counting semaphores (fencekeeper.election).

    async def campaign(self, resource: str, value: Value, options: AcquireOptions | None = None, **fields: Any) -> _election.AsyncLeadership:
        """Waits in line for resource, exclusively, publishing value; returns once elected (cancel the task to
        stop waiting). As fencekeeper.Client.campaign(), with the same options."""
        return await _election.campaign_async(self, resource, value, options, **fields)

    async def leader(self, resource: str) -> _election.Leader | None:
        return await self._run(self._core.leader, resource)

    def observe_leaders(self, resource: str) -> AsyncIterator[_election.LeaderChange]:
        """The leader now, then each change of leader or of its value, reconnecting; stop by leaving the loop."""
        return _election.observe_leaders_async(self, resource)

    async def lead(self, resource: str, on_elected: Callable[..., Any], options: AcquireOptions | None = None, **kwargs: Any) -> None:
        """Campaigns until the awaiting task is cancelled, in client-go's style (election.lead_async)."""
        await _election.lead_async(self, resource, on_elected, options, **kwargs)

    async def semaphore(self, resource: str, n: int, options: AcquireOptions | None = None, **fields: Any) -> Lease:
        """A permit of a counting semaphore of n (docs/semaphores.md), as fencekeeper.Client.semaphore()."""
        return await self.acquire(resource, _election._semaphore_options(n, _merged("semaphore", options, fields)))

    async def close(self) -> None:
        await self._run(self._core.close)
        self._threads.shutdown(wait=False)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
