"""Offline verification of a fencing token's signature (docs/verifying-tokens.md): whoever holds the
server's public keys (LeaseService.ListTokenKeys) can check, without asking the server, that fencekeeper
issued exactly this generation of this resource to this principal. verify_token and canonical_token need
only the cryptography package and the generated FencingToken: copy them as they are."""

import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from fencekeeper.v1 import token_pb2

# Why a token does not verify.
NOT_SIGNED = "not signed"  # no signature: the server runs without keys, or it was stripped
UNKNOWN_KEY_ID = "unknown key id"  # fetch the keys again (ListTokenKeys); still unknown: not ours
BAD_SIGNATURE = "bad signature"  # altered, or signed by someone else


def verify_token(token: token_pb2.FencingToken, keys: dict[str, bytes]) -> str | None:
    """Checks token's Ed25519 signature with the key its key_id names among keys (key id -> raw 32-byte
    public key). None means fencekeeper issued this token, exactly as it is; otherwise the reason. It says
    nothing about whether the token is still the newest: compare its generation with your own fence."""
    if not token.signature:
        return NOT_SIGNED
    raw = keys.get(token.key_id)
    if raw is None or len(raw) != 32:
        return UNKNOWN_KEY_ID
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(token.signature, canonical_token(token))
    except InvalidSignature:
        return BAD_SIGNATURE
    return None


def canonical_token(t: token_pb2.FencingToken) -> bytes:
    """What the signature covers: for each field, its length in bytes (4 bytes, big endian) and its UTF-8
    bytes, so that no field can run into the next."""
    fields = ("fencekeeper-token-v1", t.resource, str(t.generation), str(t.lease_id), t.principal, t.key_id)
    if t.mode not in (0, 1):  # a shared token (2): its mode is signed too
        fields += (str(t.mode),)
    return b"".join(struct.pack(">I", len(b)) + b for b in (f.encode("utf-8") for f in fields))
