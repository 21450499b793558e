"""The scenario of test/conformance/SCENARIO.md, with grpcio and the generated stubs."""

import queue
import threading
import time

from google.protobuf import duration_pb2

from fencekeeper.v1 import lease_pb2, store_pb2, token_pb2
from rpc import Auth, Client, Unexpected, expect_failure

TTL = duration_pb2.Duration(seconds=2)
KEEPALIVE_EVERY = 0.6
KEEPALIVE_FOR = 7.0


def step(message: str) -> None:
    print(f"ok {message}", flush=True)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Unexpected(message)


def run_scenario(server: str, resource: str, auth: Auth = Auth()) -> None:
    a, b, observer = Client(server, auth), Client(server, auth), Client(server, auth)
    try:
        scenario(a, b, observer, resource)
    finally:
        for client in (a, b, observer):
            client.close()


def scenario(a: Client, b: Client, observer: Client, resource: str) -> None:
    # 1. Observe.
    stream = observer.lease.Observe(lease_pb2.ObserveRequest(resource=resource))
    first = next(stream)
    check(not first.held, f"observe: expected {resource} not held at first, got held by {first.holder}")
    observed: queue.Queue = queue.Queue()

    def read_observed() -> None:
        try:
            for message in stream:
                observed.put(message)
        except Exception:  # the stream is cancelled at the end
            pass

    threading.Thread(target=read_observed, daemon=True).start()
    step(f"observe: {resource} not held")

    # 2. Acquire.
    acquired = a.lease.Acquire(lease_pb2.AcquireRequest(resource=resource, ttl=TTL, holder="python-a"))
    token_a = acquired.token
    check(
        token_a.resource == resource and token_a.generation > 0 and acquired.ttl.seconds == 2,
        f"acquire: expected a token for {resource} with a positive generation and ttl 2s, got {token_a} ttl {acquired.ttl}",
    )
    step(f"acquire: generation {token_a.generation}, lease {token_a.lease_id}")

    # 3. Put.
    value_a = b"hello from python-a"
    put = a.store.Put(
        store_pb2.PutRequest(
            resource=resource,
            key="greeting",
            value=value_a,
            mutation=store_pb2.Mutation(
                token=token_a, mode=token_pb2.FENCE_MODE_ORDER, idempotency_key=f"{resource}-put-a"
            ),
        )
    )
    check(put.commit.fence == token_a.generation, f"put: expected fence {token_a.generation}, got {put.commit.fence}")
    step(f"put: fence {put.commit.fence}")

    # 4. Get.
    got = a.store.Get(store_pb2.GetRequest(resource=resource, key="greeting"))
    check(
        got.found and got.value == value_a and got.fence == token_a.generation,
        f"get: expected {value_a!r} at fence {token_a.generation}, got found={got.found} {got.value!r} at fence {got.fence}",
    )
    step(f"get: {got.value.decode()!r}")

    # 5. KeepAlive.
    keep_alive(a, token_a)
    described = a.lease.Describe(lease_pb2.DescribeRequest(resource=resource))
    check(
        described.held and described.token.generation == token_a.generation,
        f"keepalive: expected {resource} still held by generation {token_a.generation} after {KEEPALIVE_FOR}s, "
        f"got held={described.held} generation {described.token.generation}",
    )
    step(f"keepalive: still held after {KEEPALIVE_FOR}s (TTL 2s)")

    # 6. Release.
    a.lease.Release(lease_pb2.ReleaseRequest(token=token_a))
    step("release")

    # 7. Handover.
    token_b = b.lease.Acquire(lease_pb2.AcquireRequest(resource=resource, ttl=TTL, holder="python-b")).token
    check(
        token_b.generation > token_a.generation,
        f"handover: expected a generation greater than {token_a.generation}, got {token_b.generation}",
    )
    await_handover(observed, token_a.generation, token_b.generation)
    stream.cancel()
    step(f"handover: generation {token_b.generation}, observed")

    # 8. Fencing.
    value_b = b"hello from python-b"
    b.store.Put(store_pb2.PutRequest(resource=resource, key="greeting", value=value_b, mutation=store_pb2.Mutation(token=token_b)))
    stale = store_pb2.PutRequest(resource=resource, key="greeting", value=b"stale", mutation=store_pb2.Mutation(token=token_a))
    expect_failure(lambda: a.store.Put(stale), "FAILED_PRECONDITION", "STALE_TOKEN")
    got = a.store.Get(store_pb2.GetRequest(resource=resource, key="greeting"))
    check(got.value == value_b, f"fencing: expected {value_b!r} after the refused put, got {got.value!r}")
    step("fencing: old token refused with STALE_TOKEN")

    # 9. Bad input.
    bad_inputs = [
        ("acquire with an empty resource", "INVALID_ARGUMENT", "",
         lambda: a.lease.Acquire(lease_pb2.AcquireRequest(resource="", ttl=TTL))),
        ("acquire with ttl 1s", "INVALID_ARGUMENT", "",
         lambda: a.lease.Acquire(lease_pb2.AcquireRequest(resource=f"{resource}-short", ttl=duration_pb2.Duration(seconds=1)))),
        ("put without a token", "INVALID_ARGUMENT", "",
         lambda: a.store.Put(store_pb2.PutRequest(resource=resource, key="greeting", value=b"x"))),
        ("renew of an unknown lease", "NOT_FOUND", "LEASE_NOT_FOUND",
         lambda: a.lease.Renew(lease_pb2.RenewRequest(lease_id=0x7FFFFFFF00000001))),
        ("acquire of a held resource without waiting", "ABORTED", "RESOURCE_HELD",
         lambda: a.lease.Acquire(lease_pb2.AcquireRequest(resource=resource, ttl=TTL, holder="python-c"))),
    ]
    for name, code, reason, call in bad_inputs:
        try:
            expect_failure(call, code, reason)
        except Unexpected as error:
            raise Unexpected(f"bad input: {name}: {error}") from None
        step(f"bad input: {name}: {code}")

    # 10. Clean up.
    b.lease.Release(lease_pb2.ReleaseRequest(token=token_b))
    step("clean up")


def keep_alive(client: Client, token: token_pb2.FencingToken) -> None:
    """Renews the lease of token over one KeepAlive stream every KEEPALIVE_EVERY s for KEEPALIVE_FOR s,
    and checks every answer."""
    sent = 0

    def requests():
        nonlocal sent
        deadline = time.monotonic() + KEEPALIVE_FOR
        while time.monotonic() < deadline:
            sent += 1
            yield lease_pb2.KeepAliveRequest(lease_id=token.lease_id)
            time.sleep(KEEPALIVE_EVERY)

    answers = 0
    for answer in client.lease.KeepAlive(requests()):
        check(
            answer.lease_id == token.lease_id and answer.HasField("ttl") and not answer.HasField("error"),
            f"keepalive: expected a renewal of lease {token.lease_id}, got {answer}",
        )
        answers += 1
    check(answers == sent, f"keepalive: sent {sent} renewals, got {answers} answers")


def await_handover(observed: queue.Queue, a: int, b: int) -> None:
    """Waits until the observer has seen generation a and then generation b hold the resource, with
    increasing revisions."""
    deadline = time.monotonic() + 5
    seen_a, revision = False, 0
    while True:
        try:
            message = observed.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise Unexpected(f"handover: generation {b} (after {a}) not seen within 5s") from None
        check(message.revision > revision, f"handover: revision {message.revision} after {revision}")
        revision = message.revision
        if message.held and message.token.generation == a:
            seen_a = True
        elif message.held and message.token.generation == b:
            check(seen_a, f"handover: generation {b} seen without generation {a} before it")
            return
