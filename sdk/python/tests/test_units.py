"""Unit tests of the library's pure parts, with the standard library's unittest (no server; VerifyTest needs
cryptography, as the venv of scripts/setup-polyglot.sh has it):
python -m unittest discover -s sdk/python/tests. test/sdk/python.test.ts runs them too."""

from __future__ import annotations

import time
import unittest
from unittest import mock

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

import fencekeeper
import fencekeeper.aio
from fencekeeper._deadline import Deadline, Instant, default_drift
from fencekeeper._error_mapping import from_status
from fencekeeper._keepalive import Backoff
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


if __name__ == "__main__":
    unittest.main()


class ScopedFormTest(unittest.TestCase):
    """The scoped forms take every option acquire() takes (docs/client-semantics.md): lease() once dropped
    value, max_holders and preempt."""

    def test_lease_takes_acquires_options(self) -> None:
        import inspect

        for cls in (fencekeeper.Client, fencekeeper.aio.Client):
            acquire = set(inspect.signature(cls.acquire).parameters)
            scoped = set(inspect.signature(cls.lease).parameters)
            self.assertEqual(acquire - scoped, set(), f"{cls.__module__}.Client.lease() lacks acquire()'s options")
