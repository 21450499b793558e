"""Coalesces the concurrent puts and deletes of one client (the store's, and the leases', which go through
it) into FencedStoreService.Batch calls, with no timer: a write that finds a call free goes out at once as
a plain Put or Delete; the writes made while both calls are in flight wait, and the next free call carries
all of them in one Batch (at most 1000 writes and 2 MiB of values). The calls are made by the writing
threads themselves: a waiting thread that finds a call free sends what waits, its own write among it, so
there is no thread of the batcher's own. Each write still gets exactly its own answer: its commit, or the
typed error its put or delete alone would have raised, idempotency keys included. A server older than
Batch answers UNIMPLEMENTED: from then on, each write goes alone. fencekeeper.aio runs the client's calls
on threads, so its tasks' writes are coalesced here too. The TypeScript client's client/write-batcher.ts
and the Go client's write_batcher.go do the same."""

from __future__ import annotations

import collections
import threading

import grpc

from fencekeeper._error_mapping import from_status
from fencekeeper._servers import Calls
from fencekeeper.errors import FencekeeperError
from fencekeeper.v1 import store_pb2

MAX_BATCH_WRITES = 1000
MAX_BATCH_VALUE_BYTES = 2 * 1024 * 1024
CALLS_IN_FLIGHT = 2
"""Two, so that one batch is on its way while the server commits the other; the server's committer keeps
two etcd requests in flight for the same reason."""


class _Pending:
    __slots__ = ("write", "bytes", "done", "commit", "error", "alone")

    def __init__(self, write: store_pb2.BatchWrite):
        self.write = write
        self.bytes = len(write.put.value) if write.HasField("put") else 0
        self.done = False
        self.commit: store_pb2.Commit | None = None
        self.error: Exception | None = None
        self.alone = False
        """Set with done when the writing thread is to send its write itself, as a plain call."""


class WriteBatcher:
    def __init__(self, calls: Calls):
        self._calls = calls
        self._cond = threading.Condition()
        self._queue: collections.deque[_Pending] = collections.deque()
        self._in_flight = 0
        self._alone = False
        """Set once a server answered Batch with UNIMPLEMENTED."""

    def write(self, write: store_pb2.BatchWrite) -> store_pb2.Commit:
        """Sends one write, alone or in a Batch with others; returns its own commit or raises its own error."""
        p = _Pending(write)
        with self._cond:
            if self._alone:
                p.alone = True
            else:
                self._queue.append(p)
            try:
                while not p.done and not p.alone:
                    if self._in_flight < CALLS_IN_FLIGHT and self._queue:
                        batch = self._take()
                        self._in_flight += 1
                        self._cond.release()
                        try:
                            self._send(batch)
                        finally:
                            self._cond.acquire()
                            self._in_flight -= 1
                            self._cond.notify_all()
                    else:
                        self._cond.wait()
            except BaseException:
                # Interrupted (KeyboardInterrupt, say): a write not sent yet is not sent later behind its back.
                if p in self._queue:
                    self._queue.remove(p)
                raise
        if p.alone:
            return self._send_alone(write)
        if p.error is not None:
            raise p.error
        assert p.commit is not None
        return p.commit

    def _take(self) -> list[_Pending]:
        """What one Batch may carry, from the front of the queue: at least one write."""
        batch = [self._queue.popleft()]
        size = batch[0].bytes
        while self._queue and len(batch) < MAX_BATCH_WRITES and size + self._queue[0].bytes <= MAX_BATCH_VALUE_BYTES:
            size += self._queue[0].bytes
            batch.append(self._queue.popleft())
        return batch

    def _send_alone(self, write: store_pb2.BatchWrite) -> store_pb2.Commit:
        timeout = self._calls.timeout
        if write.HasField("put"):
            return self._calls.run(lambda c: c.store.Put(write.put, timeout=timeout), False).commit
        return self._calls.run(lambda c: c.store.Delete(write.delete, timeout=timeout), False).commit

    def _send(self, batch: list[_Pending]) -> None:
        """Sends a batch and answers each of its writes; called without the lock."""
        try:
            if len(batch) == 1 or self._alone:
                for p in batch:
                    try:
                        p.commit = self._send_alone(p.write)
                    except Exception as e:  # raised in the thread of the write it belongs to
                        p.error = e
                    p.done = True
                return
            req = store_pb2.BatchRequest(writes=[p.write for p in batch])
            try:
                res = self._calls.run(lambda c: c.store.Batch(req, timeout=self._calls.timeout), False)
            except Exception as e:
                if isinstance(e, FencekeeperError) and e.code == grpc.StatusCode.UNIMPLEMENTED:
                    # A server without Batch applied none of them: each thread sends its own, as before.
                    self._alone = True
                    for p in batch:
                        p.alone = True
                    return
                # The whole call failed (no server answered, its deadline passed): each write may or may not
                # have applied, and raises what its plain call would have.
                for p in batch:
                    p.error = e
                    p.done = True
                return
            for i, p in enumerate(batch):
                if i >= len(res.results):
                    p.error = FencekeeperError(f"the server gave no answer for write {i} of a batch of {len(batch)}", grpc.StatusCode.INTERNAL)
                elif res.results[i].WhichOneof("result") == "commit":
                    p.commit = res.results[i].commit
                else:
                    p.error = from_status(res.results[i].error)
                p.done = True
        finally:
            # Interrupted (KeyboardInterrupt in the sending thread, say): what is left unanswered is sent by
            # its own thread rather than waiting forever.
            for p in batch:
                if not p.done:
                    p.alone = True
