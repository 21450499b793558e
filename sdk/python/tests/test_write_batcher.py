"""The client's coalescing of concurrent writes (fencekeeper/_write_batcher.py), against an in-process
FencedStoreService that holds every Put until told, so that the test decides what is in flight. The SDK
suite (test/sdk/python.test.ts) checks the same against real servers."""

from __future__ import annotations

import threading
import time
import unittest
from concurrent import futures
from typing import Any, Callable

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

import fencekeeper
from fencekeeper.v1 import store_pb2, store_pb2_grpc

TOKEN = fencekeeper.Token("r", 9, 1)


def stale_status() -> status_pb2.Status:
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason="STALE_TOKEN", domain="fencekeeper.io", metadata={"resource": "r", "fence": "9", "generation": "3"}))
    return status_pb2.Status(code=grpc.StatusCode.FAILED_PRECONDITION.value[0], message="stale token", details=[info])


class HeldPuts(store_pb2_grpc.FencedStoreServiceServicer):
    """Holds every Put until gate is set; refuses keys starting with "stale" STALE_TOKEN in a Batch."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.puts = 0
        self.batches: list[int] = []

    def Put(self, request: store_pb2.PutRequest, context: Any) -> store_pb2.PutResponse:
        with self.lock:
            self.puts += 1
        self.gate.wait(10)
        return store_pb2.PutResponse(commit=store_pb2.Commit(revision=1, fence=9))

    def Batch(self, request: store_pb2.BatchRequest, context: Any) -> store_pb2.BatchResponse:
        with self.lock:
            self.batches.append(len(request.writes))
        res = store_pb2.BatchResponse()
        for w in request.writes:
            if w.put.key.startswith("stale"):
                res.results.add(error=stale_status())
            else:
                res.results.add(commit=store_pb2.Commit(revision=2, fence=9))
        return res


class WithoutBatch(HeldPuts):
    """A server older than Batch: the servicer's default answers it UNIMPLEMENTED."""

    Batch = store_pb2_grpc.FencedStoreServiceServicer.Batch  # type: ignore[assignment]


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within 5 s: {what}")
        time.sleep(0.001)


class WriteBatcherTest(unittest.TestCase):
    def start(self, servicer: HeldPuts) -> fencekeeper.Client:
        server = grpc.server(futures.ThreadPoolExecutor(32))
        store_pb2_grpc.add_FencedStoreServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        self.addCleanup(servicer.gate.set)
        client = fencekeeper.Client(f"http://127.0.0.1:{port}", call_timeout=10)
        self.addCleanup(client.close)
        return client

    def writes(self, client: fencekeeper.Client, keys: list[str], servicer: HeldPuts) -> list[futures.Future[fencekeeper.Commit]]:
        """The first two go out at once as Puts, which the server holds; the others wait in the queue."""
        threads = futures.ThreadPoolExecutor(len(keys))
        self.addCleanup(threads.shutdown)
        out = [threads.submit(client.store.put, TOKEN, k, b"v") for k in keys[:2]]
        until(lambda: servicer.puts == 2, "two Puts in flight")
        batcher = client.store._batcher
        assert batcher is not None
        for i, k in enumerate(keys[2:]):
            out.append(threads.submit(client.store.put, TOKEN, k, b"v"))
            until(lambda: len(batcher._queue) == i + 1, f"{i + 1} writes waiting")
        servicer.gate.set()
        futures.wait(out, 10)
        return out

    def test_writes_made_while_two_calls_are_in_flight_go_in_one_batch_each_with_its_own_answer(self) -> None:
        servicer = HeldPuts()
        client = self.start(servicer)
        keys = [f"k-{i}" for i in range(11)]
        keys[5] = "stale-5"
        out = self.writes(client, keys, servicer)
        self.assertEqual((servicer.puts, servicer.batches), (2, [9]))
        for k, f in zip(keys, out):
            if k.startswith("stale"):
                e = f.exception()
                self.assertIsInstance(e, fencekeeper.StaleTokenError)
                assert isinstance(e, fencekeeper.StaleTokenError)
                self.assertEqual((e.code, e.fence, e.generation), (grpc.StatusCode.FAILED_PRECONDITION, 9, 3))
            else:
                self.assertEqual(f.result().fence, 9, k)
        # A lone write waits for nothing: a plain Put.
        client.store.put(TOKEN, "alone", b"v")
        self.assertEqual((servicer.puts, servicer.batches), (3, [9]))

    def test_a_server_without_batch_gets_each_write_alone(self) -> None:
        servicer = WithoutBatch()
        client = self.start(servicer)
        out = self.writes(client, [f"k-{i}" for i in range(6)], servicer)
        self.assertEqual([f.result().fence for f in out], [9] * 6)
        client.store.put(TOKEN, "after", b"v")
        self.assertEqual(servicer.puts, 7)

    def test_coalesce_writes_false_sends_each_write_alone(self) -> None:
        client = fencekeeper.Client("http://127.0.0.1:1", coalesce_writes=False)
        self.addCleanup(client.close)
        self.assertIsNone(client.store._batcher)


if __name__ == "__main__":
    unittest.main()
