"""The fencing token as the library hands it out: what Acquire returned, to be sent back unchanged with
every write. The generation is greater than that of every earlier acquisition of the same resource."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from fencekeeper.v1 import token_pb2


@dataclass(frozen=True)
class Token:
    resource: str
    """The resource this token is for."""
    generation: int
    """Greater than the generation of every earlier acquisition of the resource."""
    lease_id: int
    """The etcd lease that backs this generation."""
    principal: str = ""
    """The authenticated principal it was issued to; empty without authentication."""
    key_id: str = ""
    """The id of the server key that signed it (docs/verifying-tokens.md)."""
    signature: bytes = b""
    shared: bool = False
    """True on a shared acquisition's token: the fenced store refuses its writes. Signed."""

    @staticmethod
    def from_proto(t: token_pb2.FencingToken) -> Token:
        return Token(t.resource, t.generation, t.lease_id, t.principal, t.key_id, t.signature, t.mode == token_pb2.ACQUIRE_MODE_SHARED)

    def to_proto(self) -> token_pb2.FencingToken:
        return token_pb2.FencingToken(
            resource=self.resource,
            generation=self.generation,
            lease_id=self.lease_id,
            principal=self.principal,
            key_id=self.key_id,
            signature=self.signature,
            mode=token_pb2.ACQUIRE_MODE_SHARED if self.shared else token_pb2.ACQUIRE_MODE_UNSPECIFIED,
        )

    def to_json(self) -> dict[str, str | bool]:
        """The whole token as JSON-ready fields: 64-bit numbers as decimal strings, the signature in base64;
        "shared": true on a shared token only."""
        fields: dict[str, str | bool] = {
            "resource": self.resource,
            "generation": str(self.generation),
            "lease_id": str(self.lease_id),
            "principal": self.principal,
            "key_id": self.key_id,
            "signature": base64.b64encode(self.signature).decode(),
        }
        if self.shared:
            fields["shared"] = True
        return fields

    def __str__(self) -> str:
        return f"{self.resource}:{self.generation}:{self.lease_id}"
