// The fencing token and its mode to and from their protobuf messages: read by the call's edge
// (server/rpc: authorization finds a token's resource, a refusal carries the holder's token) and by the
// handlers alike.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { invalid } from "../errors/errors.js";
import type { AcquireMode, Token } from "../tokens/token.js";
import { AcquireMode as ProtoAcquireMode, type FencingToken, type FencingTokenSchema } from "../../gen/ts/fencekeeper/v1/token_pb.js";

/** field: where the token is in the request, for the message of a mode that is not an AcquireMode. */
export function tokenFromProto(t: FencingToken | undefined, field = "token"): Token | undefined {
  if (!t) return undefined;
  const token = { resource: t.resource, generation: t.generation, leaseId: t.leaseId, principal: t.principal, keyId: t.keyId, signature: t.signature };
  const mode = acquireModeFromProto(t.mode, `${field}.mode`);
  return mode === "shared" ? { ...token, mode } : token;
}

export function tokenToProto(t: Token): MessageInitShape<typeof FencingTokenSchema> {
  return {
    resource: t.resource,
    generation: t.generation,
    leaseId: t.leaseId,
    principal: t.principal ?? "",
    keyId: t.keyId ?? "",
    signature: t.signature ?? new Uint8Array(),
    // Unset on an exclusive token: a client that knows no modes reads the token it always read.
    mode: t.mode === "shared" ? ProtoAcquireMode.SHARED : ProtoAcquireMode.UNSPECIFIED,
  };
}

export function acquireModeFromProto(mode: ProtoAcquireMode, field = "mode"): AcquireMode {
  switch (mode) {
    case ProtoAcquireMode.UNSPECIFIED:
    case ProtoAcquireMode.EXCLUSIVE:
      return "exclusive";
    case ProtoAcquireMode.SHARED:
      return "shared";
    default:
      throw invalid(`${field} ${mode} is not an AcquireMode; use ACQUIRE_MODE_EXCLUSIVE (1) or ACQUIRE_MODE_SHARED (2)`);
  }
}
