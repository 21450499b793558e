"""Unit tests of the library's pure parts, with the standard library's unittest (no server; VerifyTest needs
cryptography, as the venv of scripts/setup-polyglot.sh has it):
python -m unittest discover -s sdk/python/tests. test/sdk/python.test.ts runs them too."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import time
import unittest
from typing import Awaitable, Callable
from unittest import mock

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

import fencekeeper
import fencekeeper.aio
from fencekeeper import election
from fencekeeper._deadline import Deadline, Instant, default_drift
from fencekeeper._error_mapping import from_status
from fencekeeper._keepalive import Backoff
from fencekeeper.acquire_options import _merged
from fencekeeper.election import _campaign_options, _semaphore_options
from fencekeeper.v1 import token_pb2


def status(code: grpc.StatusCode, reason: str, metadata: dict[str, str], *extra: object) -> status_pb2.Status:
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="fencekeeper.io", metadata=metadata))
    details = [info]
    for message in extra:
        detail = any_pb2.Any()
        detail.Pack(message)  # type: ignore[arg-type]
        details.append(detail)
    return status_pb2.Status(code=code.value[0], message="refused", details=details)


class DeadlineTest(unittest.TestCase):
    def test_counts_from_the_send_minus_the_drift_margin(self) -> None:
        sent = Instant(time.monotonic() - 1.0, time.time() - 1.0)
        d = Deadline(sent, 10.0, Instant(time.monotonic(), time.time()), default_drift)
        self.assertAlmostEqual(d.mono, sent.mono + 10.0 - 0.2, places=6)
        self.assertAlmostEqual(d.left(), 10.0 - 0.2 - 1.0, places=2)
        self.assertFalse(d.passed())

    def test_an_answer_after_the_deadline_extends_nothing(self) -> None:
        sent = Instant(time.monotonic() - 5.0, time.time() - 5.0)
        d = Deadline(sent, 2.0, sent, default_drift)
        self.assertTrue(d.passed())
        before = (d.mono, d.wall)
        self.assertFalse(d.confirm(Instant(time.monotonic() - 0.1, time.time() - 0.1), 2.0, Instant(time.monotonic(), time.time())))
        self.assertEqual((d.mono, d.wall), before)

    def test_an_answer_in_time_counts_from_its_send(self) -> None:
        t0 = Instant(time.monotonic(), time.time())
        d = Deadline(t0, 3.0, t0, lambda ttl: 0.1)
        sent = Instant(t0.mono + 0.5, t0.wall + 0.5)
        self.assertTrue(d.confirm(sent, 3.0, Instant(t0.mono + 2.5, t0.wall + 2.5)))
        self.assertAlmostEqual(d.mono, sent.mono + 2.9, places=6)

    def test_passed_by_the_wall_clock_alone(self) -> None:
        # The monotonic clock stops while a machine is suspended; the wall clock does not.
        t0 = Instant(time.monotonic(), time.time())
        d = Deadline(t0, 10.0, t0, default_drift)
        with mock.patch("fencekeeper._deadline.time.time", return_value=t0.wall + 60):
            self.assertTrue(d.passed())


class ErrorMappingTest(unittest.TestCase):
    def test_stale_token_carries_the_fence(self) -> None:
        e = from_status(status(grpc.StatusCode.FAILED_PRECONDITION, "STALE_TOKEN", {"resource": "r", "fence": "12", "generation": "7"}))
        self.assertIsInstance(e, fencekeeper.StaleTokenError)
        assert isinstance(e, fencekeeper.StaleTokenError)
        self.assertEqual((e.code, e.reason, e.resource, e.fence, e.generation), (grpc.StatusCode.FAILED_PRECONDITION, "STALE_TOKEN", "r", 12, 7))

    def test_resource_held_carries_the_holder_token(self) -> None:
        holder = token_pb2.FencingToken(resource="r", generation=5, lease_id=9)
        e = from_status(status(grpc.StatusCode.ABORTED, "RESOURCE_HELD", {"holder": "b"}, holder))
        assert isinstance(e, fencekeeper.ResourceHeldError)
        self.assertEqual((e.holder, e.holder_token), ("b", fencekeeper.Token("r", 5, 9)))

    def test_by_code_without_a_reason(self) -> None:
        unreached = from_status(status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message="down"))
        self.assertIsInstance(unreached, fencekeeper.UnavailableError)
        self.assertIsNone(unreached.reason)
        self.assertIsInstance(from_status(status_pb2.Status(code=grpc.StatusCode.DEADLINE_EXCEEDED.value[0])), TimeoutError)
        self.assertIsInstance(from_status(status(grpc.StatusCode.UNAVAILABLE, "ETCD_UNAVAILABLE", {})), fencekeeper.UnavailableError)
        self.assertIsInstance(from_status(status(grpc.StatusCode.NOT_FOUND, "LEASE_NOT_FOUND", {"lease_id": "3"})), fencekeeper.LeaseNotFoundError)


class BackoffTest(unittest.TestCase):
    def test_at_once_then_doubling_with_jitter_up_to_the_cap(self) -> None:
        b = Backoff(0.1, 2.0)
        self.assertEqual(b.delay(0), 0.0)
        for failures, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (6, 2.0), (30, 2.0)]:
            for _ in range(20):
                self.assertTrue(ceiling / 2 <= b.delay(failures) <= ceiling, (failures, ceiling))


class VerifyTest(unittest.TestCase):
    def test_a_signed_token_verifies_and_an_altered_one_does_not(self) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        key = Ed25519PrivateKey.generate()
        keys = {"k1": key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)}
        unsigned = fencekeeper.Token("orders", 42, 7, "alice", "k1")
        token = fencekeeper.Token("orders", 42, 7, "alice", "k1", key.sign(fencekeeper.canonical_token(unsigned)))
        self.assertIsNone(fencekeeper.verify_token(token, keys))
        self.assertEqual(fencekeeper.verify_token(unsigned, keys), "not signed")
        self.assertEqual(fencekeeper.verify_token(fencekeeper.Token("orders", 43, 7, "alice", "k1", token.signature), keys), "bad signature")
        self.assertEqual(fencekeeper.verify_token(fencekeeper.Token("orders", 42, 7, "alice", "k2", token.signature), keys), "unknown key id")

    def test_the_canonical_encoding(self) -> None:
        encoded = fencekeeper.canonical_token(fencekeeper.Token("r", 2, 3))
        self.assertEqual(encoded, b"\x00\x00\x00\x14fencekeeper-token-v1" + b"\x00\x00\x00\x01r\x00\x00\x00\x012\x00\x00\x00\x013" + b"\x00\x00\x00\x00" * 2)
        # A shared token's mode is signed too: one field more, its number.
        self.assertEqual(fencekeeper.canonical_token(fencekeeper.Token("r", 2, 3, shared=True)), encoded + b"\x00\x00\x00\x012")

    def test_a_shared_token_does_not_verify_as_an_exclusive_one(self) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        key = Ed25519PrivateKey.generate()
        keys = {"k1": key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)}
        unsigned = fencekeeper.Token("orders", 42, 7, "alice", "k1", shared=True)
        token = fencekeeper.Token("orders", 42, 7, "alice", "k1", key.sign(fencekeeper.canonical_token(unsigned)), shared=True)
        self.assertIsNone(fencekeeper.verify_token(token, keys))
        self.assertEqual(fencekeeper.verify_token(fencekeeper.Token("orders", 42, 7, "alice", "k1", token.signature), keys), "bad signature")
        self.assertEqual(fencekeeper.Token.from_proto(token.to_proto()), token)


class TokenTest(unittest.TestCase):
    def test_round_trip_and_json(self) -> None:
        t = fencekeeper.Token("orders", 2**62, 7587869301759668014, "p", "k", b"\x01\x02")
        self.assertEqual(fencekeeper.Token.from_proto(t.to_proto()), t)
        self.assertEqual(t.to_json()["generation"], str(2**62))
        self.assertEqual(t.to_json()["signature"], "AQI=")
        self.assertEqual(str(t), f"orders:{2**62}:7587869301759668014")
        self.assertNotIn("shared", t.to_json())
        self.assertIs(fencekeeper.Token("orders", 1, 2, shared=True).to_json()["shared"], True)


class AcquireOptionsTest(unittest.TestCase):
    """One options value for every call that acquires (fencekeeper.AcquireOptions): it knows which fields its
    caller chose, so that semaphore() and campaign() default to waiting without overriding wait=False."""

    UNREACHABLE = "http://127.0.0.1:9"
    """No server: every check here fails before a call is sent."""

    def test_knows_what_its_caller_chose(self) -> None:
        o = fencekeeper.AcquireOptions(ttl=5, wait=False)
        self.assertEqual(o.chosen(), {"ttl", "wait"})
        self.assertEqual(fencekeeper.AcquireOptions().chosen(), frozenset())
        self.assertIsNone(fencekeeper.AcquireOptions().wait)

    def test_keywords_apply_over_the_options_as_replace_does(self) -> None:
        base = fencekeeper.AcquireOptions(ttl=5, holder="w")
        merged = _merged("acquire", base, {"wait": True, "ttl": 3})
        self.assertEqual(merged, dataclasses.replace(base, wait=True, ttl=3))
        self.assertEqual((merged.ttl, merged.holder, merged.wait, merged.chosen()), (3, "w", True, {"ttl", "holder", "wait"}))
        self.assertEqual(base, fencekeeper.AcquireOptions(ttl=5, holder="w"), "the options given are left as they were")
        self.assertIs(_merged("acquire", base, {}), base)
        self.assertEqual(_merged("acquire", None, {"shared": True}), fencekeeper.AcquireOptions(shared=True))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            base.ttl = 1  # type: ignore[misc]

    def test_with_defaults_fills_only_what_was_left_unset(self) -> None:
        self.assertIs(fencekeeper.AcquireOptions(wait=False).with_defaults(wait=True).wait, False)
        self.assertEqual(fencekeeper.AcquireOptions(wait=0.5).with_defaults(wait=True).wait, 0.5)
        self.assertIs(fencekeeper.AcquireOptions().with_defaults(wait=True).wait, True)
        with self.assertRaisesRegex(TypeError, "'wiat'"):
            fencekeeper.AcquireOptions().with_defaults(wiat=True)

    def test_semaphore_and_campaign_wait_by_default_and_keep_an_explicit_no_wait(self) -> None:
        self.assertEqual((_semaphore_options(3, fencekeeper.AcquireOptions()).wait, _semaphore_options(3, fencekeeper.AcquireOptions()).max_holders), (True, 3))
        self.assertIs(_semaphore_options(3, fencekeeper.AcquireOptions(wait=False)).wait, False)
        self.assertEqual(_semaphore_options(3, fencekeeper.AcquireOptions(wait=0.3, ttl=4)), fencekeeper.AcquireOptions(wait=0.3, ttl=4, max_holders=3))
        leader = _campaign_options("10.0.0.7", fencekeeper.AcquireOptions(ttl=4))
        self.assertEqual(leader, fencekeeper.AcquireOptions(ttl=4, wait=True, own_lease=True, value="10.0.0.7"))
        self.assertIs(_campaign_options("v", fencekeeper.AcquireOptions(wait=False)).wait, False)
        self.assertIs(_campaign_options("v", fencekeeper.AcquireOptions(own_lease=False)).own_lease, False)

    def test_what_semaphore_and_campaign_cannot_be_asked(self) -> None:
        for n in (0, -1, True, 2.0):
            with self.assertRaises(fencekeeper.InvalidArgumentError):
                _semaphore_options(n, fencekeeper.AcquireOptions())  # type: ignore[arg-type]
        with self.assertRaisesRegex(fencekeeper.InvalidArgumentError, "max_holders 2"):
            _semaphore_options(3, fencekeeper.AcquireOptions(max_holders=2))
        for o in (fencekeeper.AcquireOptions(shared=True), fencekeeper.AcquireOptions(max_holders=2), fencekeeper.AcquireOptions(value="other")):
            with self.assertRaisesRegex(fencekeeper.InvalidArgumentError, "exclusive"):
                _campaign_options("v", o)

    def test_a_client_is_on_sessions_unless_made_with_sessions_false(self) -> None:
        with fencekeeper.Client(self.UNREACHABLE) as on, fencekeeper.Client(self.UNREACHABLE, sessions=False) as own:
            self.assertIs(on.sessions, True)
            self.assertIs(own.sessions, False)

    def test_an_unknown_field_is_a_type_error_naming_it_at_every_entry_point(self) -> None:
        with fencekeeper.Client(self.UNREACHABLE) as c:
            calls: list[tuple[str, Callable[[], object]]] = [
                ("acquire", lambda: c.acquire("r", tll=5)),
                ("lease", lambda: c.lease("r", tll=5).__enter__()),
                ("acquire_all", lambda: c.acquire_all(["r"], tll=5)),
                ("semaphore", lambda: c.semaphore("r", 2, tll=5)),
                ("campaign", lambda: c.campaign("r", "v", tll=5)),
                ("lead", lambda: c.lead("r", lambda *_: None, tll=5)),
            ]
            for name, call in calls:
                with self.assertRaisesRegex(TypeError, rf"^{name}\(\) got an unexpected keyword argument 'tll'", msg=name):
                    call()
            with self.assertRaisesRegex(TypeError, "got dict"):
                c.acquire("r", {"ttl": 5})  # type: ignore[arg-type]

        async def on_aio() -> None:
            async with fencekeeper.aio.Client(self.UNREACHABLE) as c:

                async def scoped() -> None:
                    async with c.lease("r", tll=5):
                        pass

                calls: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                    ("acquire", lambda: c.acquire("r", tll=5)),
                    ("lease", scoped),
                    ("acquire_all", lambda: c.acquire_all(["r"], tll=5)),
                    ("semaphore", lambda: c.semaphore("r", 2, tll=5)),
                    ("campaign", lambda: c.campaign("r", "v", tll=5)),
                    ("lead", lambda: c.lead("r", lambda *_: None, tll=5)),
                    # fencekeeper.aio cancels by cancelling the task: no cancel event
                    ("acquire", lambda: c.acquire("r", cancel=threading.Event())),
                ]
                for name, call in calls:
                    with self.assertRaisesRegex(TypeError, rf"^{name}\(\) got an unexpected keyword argument", msg=f"aio {name}"):
                        await call()

        asyncio.run(on_aio())

    def test_acquire_all_refuses_a_field_it_cannot_send(self) -> None:
        with fencekeeper.Client(self.UNREACHABLE) as c:
            with self.assertRaisesRegex(fencekeeper.InvalidArgumentError, "not lock_delay, shared$"):
                c.acquire_all(["a", "b"], fencekeeper.AcquireOptions(ttl=5, shared=True), lock_delay=3)

    def test_no_entry_point_lists_the_options_itself(self) -> None:
        """Each takes the options and keyword fields (so a new field of Acquire is added to AcquireOptions
        alone, and to the code that sends it); lead()'s and campaign()'s value is theirs (lead's may be a
        callable, campaign's is required)."""
        fields = {f.name for f in dataclasses.fields(fencekeeper.AcquireOptions)}
        entry_points = [
            getattr(cls, name) for cls in (fencekeeper.Client, fencekeeper.aio.Client) for name in ("acquire", "lease", "acquire_all", "semaphore", "campaign", "lead")
        ] + [election.campaign, election.semaphore, election.lead, election.campaign_async, election.lead_async]
        for fn in entry_points:
            parameters = inspect.signature(fn).parameters
            own = set(parameters) & fields - {"value"}
            self.assertEqual(own, set(), f"{fn.__qualname__} lists options of its own")
            self.assertIn("options", parameters, fn.__qualname__)
            self.assertTrue(any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()), fn.__qualname__)


if __name__ == "__main__":
    unittest.main()
