"""The fenced store, call by call, with the token given explicitly. Writes through a Lease use these with
the lease's token; they are also for a program that keeps a token itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal, Sequence, Union

import grpc

from fencekeeper._error_mapping import from_status
from fencekeeper._servers import Calls
from fencekeeper._write_batcher import MAX_BATCH_VALUE_BYTES as MAX_BATCH_VALUE_BYTES  # the bounds of one batch
from fencekeeper._write_batcher import MAX_BATCH_WRITES as MAX_BATCH_WRITES
from fencekeeper._write_batcher import WriteBatcher
from fencekeeper.errors import FencekeeperError
from fencekeeper.token import Token
from fencekeeper.v1 import store_pb2, token_pb2

FenceModeName = Literal["order", "live"]
"""How the store judges a write's token: "order" (generation >= fence) or "live" (also: its lease is still
held in etcd when the write commits)."""

Value = Union[str, bytes]

_MODES = {"order": token_pb2.FENCE_MODE_ORDER, "live": token_pb2.FENCE_MODE_LIVE, None: token_pb2.FENCE_MODE_UNSPECIFIED}


@dataclass(frozen=True)
class Commit:
    revision: int
    """The etcd revision of the write."""
    fence: int
    """The resource's fence after the write: the token's generation."""
    replayed: bool
    """True when this is the recorded answer of an earlier request with the same idempotency key."""


@dataclass(frozen=True)
class GetResult:
    found: bool
    value: bytes
    """Empty when not found."""
    mod_revision: int
    fence: int
    """The resource's fence when the key was read."""


@dataclass(frozen=True)
class Entry:
    key: str
    value: bytes
    """Empty with keys_only."""
    mod_revision: int


@dataclass(frozen=True)
class Put:
    """A put inside a transaction."""

    key: str
    value: Value


@dataclass(frozen=True)
class Delete:
    """A delete inside a transaction."""

    key: str


@dataclass(frozen=True)
class BatchWrite:
    """One write of Store.batch, with its own token, fence mode and idempotency key: a put of value, or,
    with value None, a delete of key."""

    token: Token
    key: str
    value: Value | None = None
    mode: FenceModeName | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """The answer to one write of a batch: what its put or delete alone would have given."""

    commit: Commit | None
    """Where it committed; None when it was refused."""
    error: FencekeeperError | None
    """The typed error its put or delete alone would have raised (StaleTokenError, ...); None when it committed."""



def _bytes(v: Value) -> bytes:
    return v.encode() if isinstance(v, str) else v


def _mutation(token: Token, mode: FenceModeName | None, idempotency_key: str | None) -> store_pb2.Mutation:
    return store_pb2.Mutation(token=token.to_proto(), mode=_MODES[mode], idempotency_key=idempotency_key or "")


def _commit(c: store_pb2.Commit) -> Commit:
    return Commit(c.revision, c.fence, c.replayed)


class Store:
    def __init__(self, calls: Calls, batcher: WriteBatcher | None = None):
        """batcher: when given, puts and deletes go through it, coalesced into Batch calls (_write_batcher.py)."""
        self._calls = calls
        self._batcher = batcher

    def put(self, token: Token, key: str, value: Value, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        """Writes key under token. mode unset: the server's default, "order". Concurrent writes of one client
        are coalesced into Batch calls (Client(coalesce_writes=...)); each still gets its own answer."""
        req = store_pb2.PutRequest(resource=token.resource, key=key, value=_bytes(value), mutation=_mutation(token, mode, idempotency_key))
        if self._batcher is not None:
            return _commit(self._batcher.write(store_pb2.BatchWrite(put=req)))
        return _commit(self._calls.run(lambda c: c.store.Put(req, timeout=self._calls.timeout), False).commit)

    def delete(self, token: Token, key: str, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        req = store_pb2.DeleteRequest(resource=token.resource, key=key, mutation=_mutation(token, mode, idempotency_key))
        if self._batcher is not None:
            return _commit(self._batcher.write(store_pb2.BatchWrite(delete=req)))
        return _commit(self._calls.run(lambda c: c.store.Delete(req, timeout=self._calls.timeout), False).commit)

    def txn(self, token: Token, ops: Sequence[Put | Delete], *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        """Applies every op together or none."""
        proto = [
            store_pb2.TxnOp(put=store_pb2.TxnPut(key=op.key, value=_bytes(op.value)))
            if isinstance(op, Put)
            else store_pb2.TxnOp(delete=store_pb2.TxnDelete(key=op.key))
            for op in ops
        ]
        req = store_pb2.TxnRequest(resource=token.resource, ops=proto, mutation=_mutation(token, mode, idempotency_key))
        return _commit(self._calls.run(lambda c: c.store.Txn(req, timeout=self._calls.timeout), False).commit)

    def batch(self, writes: Sequence[BatchWrite]) -> list[BatchResult]:
        """Sends many independent puts and deletes in one FencedStoreService.Batch call (at most 1000
        writes and 2 MiB of values), each judged and applied on its own: result i answers writes[i]. Not a
        transaction (txn is): one write's refusal leaves the others be, and two writes of one key in a
        batch may apply in either order. Raises only for the whole call (over its bounds, no server, or
        UNIMPLEMENTED from a server without Batch); then each write may or may not have applied."""
        proto = []
        for w in writes:
            m = _mutation(w.token, w.mode, w.idempotency_key)
            if w.value is None:
                proto.append(store_pb2.BatchWrite(delete=store_pb2.DeleteRequest(resource=w.token.resource, key=w.key, mutation=m)))
            else:
                proto.append(store_pb2.BatchWrite(put=store_pb2.PutRequest(resource=w.token.resource, key=w.key, value=_bytes(w.value), mutation=m)))
        req = store_pb2.BatchRequest(writes=proto)
        res = self._calls.run(lambda c: c.store.Batch(req, timeout=self._calls.timeout), False)
        out = []
        for i in range(len(writes)):
            if i >= len(res.results):
                out.append(BatchResult(None, FencekeeperError(f"the server gave no answer for write {i} of a batch of {len(writes)}", grpc.StatusCode.INTERNAL)))
                continue
            r = res.results[i]
            if r.WhichOneof("result") == "commit":
                out.append(BatchResult(_commit(r.commit), None))
            else:
                out.append(BatchResult(None, from_status(r.error)))
        return out

    def get(self, resource: str, key: str) -> GetResult:
        req = store_pb2.GetRequest(resource=resource, key=key)
        res = self._calls.run(lambda c: c.store.Get(req, timeout=self._calls.timeout), True)
        return GetResult(res.found, res.value, res.mod_revision, res.fence)

    def list(self, resource: str, *, prefix: str = "", keys_only: bool = False, page_size: int = 0) -> Iterator[Entry]:
        """Every entry of a resource (under a prefix), in key order, fetched a page at a time from one snapshot."""
        page_token = ""
        while True:
            req = store_pb2.RangeRequest(resource=resource, prefix=prefix, page_size=page_size, page_token=page_token, keys_only=keys_only)
            page = self._calls.run(lambda c: c.store.Range(req, timeout=self._calls.timeout), True)
            for e in page.entries:
                yield Entry(e.key, e.value, e.mod_revision)
            page_token = page.next_page_token
            if not page_token:
                return

    def fence(self, resource: str) -> tuple[int, int]:
        """The resource's fence (the greatest generation accepted) and the greatest generation issued."""
        req = store_pb2.GetFenceRequest(resource=resource)
        res = self._calls.run(lambda c: c.store.GetFence(req, timeout=self._calls.timeout), True)
        return res.fence, res.last_issued
