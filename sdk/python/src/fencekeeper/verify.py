"""Offline verification of a token's signature (docs/verifying-tokens.md): whether fencekeeper issued
exactly this generation of this resource to this principal, checked with the server's public keys
(Client.token_keys(), fetched once and again on an unknown key id) and no call. It proves issuance, not
freshness: a resource still compares generations with its own fence. Needs the cryptography package
(the `verify` extra: pip install 'fencekeeper-client[verify]'), imported only when a token is verified."""

from __future__ import annotations

import struct
from typing import Literal, Mapping

from fencekeeper.token import Token

Refusal = Literal["not signed", "unknown key id", "bad signature"]


def canonical_token(t: Token) -> bytes:
    """What the signature covers: for each field, its length in bytes (4 bytes, big endian) and its UTF-8
    bytes, so that no field can run into the next. A shared token has one field more, its mode's number
    ("2"), so that it never verifies as an exclusive one."""
    fields = ("fencekeeper-token-v1", t.resource, str(t.generation), str(t.lease_id), t.principal, t.key_id) + (("2",) if t.shared else ())
    return b"".join(struct.pack(">I", len(b)) + b for b in (f.encode("utf-8") for f in fields))


def verify_token(t: Token, keys: Mapping[str, bytes]) -> Refusal | None:
    """Checks t's Ed25519 signature with the key its key_id names among keys (key id -> raw 32-byte public
    key, as Client.token_keys() gives them). None means fencekeeper issued this token, exactly as it is;
    otherwise why not."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as e:
        raise ImportError("verifying tokens needs the cryptography package: pip install 'fencekeeper-client[verify]'") from e
    if not t.signature:
        return "not signed"
    raw = keys.get(t.key_id)
    if raw is None or len(raw) != 32:
        return "unknown key id"
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(t.signature, canonical_token(t))
    except InvalidSignature:
        return "bad signature"
    return None
